//! The ops: one folder per op family (attributes and checks in `mod.rs`, CPU kernels beside).

pub mod conv2d;
pub mod max_pool;
pub mod resize;
