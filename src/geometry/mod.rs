//! The one geometry and validation layer shared by the CPU and CUDA paths.

pub mod resize;
pub mod window;

pub use resize::{
    AxisMap, AxisTable, CoordinateTransform, NearestMode, ResizeAttrs, ResizeMode, ResizePlan,
};
pub use window::{ConvGeometry, DimRounding, Padding, PoolGeometry, WindowAttrs, WindowAxis};
