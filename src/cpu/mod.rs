//! CPU building blocks shared by the ops' CPU kernels.

pub(crate) mod gemm;
pub(crate) mod simd;
