//! A safe, bounds-checked front for the `gemm` crate's strided matrix product.

use crate::dtype::Accum;
use std::any::TypeId;

/// A strided read-only matrix view.
#[derive(Clone, Copy)]
pub(crate) struct MatRef<'a, A> {
    pub data: &'a [A],
    pub rows: usize,
    pub cols: usize,
    /// Row stride, in elements.
    pub rs: usize,
    /// Column stride, in elements.
    pub cs: usize,
}

/// A strided mutable matrix view.
pub(crate) struct MatMut<'a, A> {
    pub data: &'a mut [A],
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

fn fits(len: usize, rows: usize, cols: usize, rs: usize, cs: usize) -> bool {
    if rows == 0 || cols == 0 {
        return true;
    }
    let last = (rows - 1)
        .checked_mul(rs)
        .and_then(|a| (cols - 1).checked_mul(cs).and_then(|b| a.checked_add(b)));
    matches!(last, Some(l) if l < len && l <= isize::MAX as usize)
}

/// `dst = (accumulate ? dst : 0) + a * b`, single-threaded (callers parallelise outside).
///
/// Panics (an internal invariant, never user input: callers derive every view from validated
/// geometry) if a view does not fit its slice or the shapes do not chain.
pub(crate) fn matmul<A: Accum>(
    dst: MatMut<'_, A>,
    a: MatRef<'_, A>,
    b: MatRef<'_, A>,
    accumulate: bool,
) {
    assert!(
        a.rows == dst.rows && b.cols == dst.cols && a.cols == b.rows,
        "matmul shapes: {}x{} * {}x{} -> {}x{}",
        a.rows,
        a.cols,
        b.rows,
        b.cols,
        dst.rows,
        dst.cols
    );
    assert!(
        fits(dst.data.len(), dst.rows, dst.cols, dst.rs, dst.cs),
        "matmul: dst view out of bounds"
    );
    assert!(
        fits(a.data.len(), a.rows, a.cols, a.rs, a.cs),
        "matmul: lhs view out of bounds"
    );
    assert!(
        fits(b.data.len(), b.rows, b.cols, b.rs, b.cs),
        "matmul: rhs view out of bounds"
    );
    assert!(TypeId::of::<A>() == TypeId::of::<f32>() || TypeId::of::<A>() == TypeId::of::<f64>());
    if dst.rows == 0 || dst.cols == 0 {
        return;
    }
    if a.cols == 0 {
        if !accumulate {
            for r in 0..dst.rows {
                for c in 0..dst.cols {
                    dst.data[r * dst.rs + c * dst.cs] = A::zero();
                }
            }
        }
        return;
    }
    // SAFETY: the asserts above prove every index `r*rs + c*cs` of the three views lies inside
    // its slice (and fits isize); `dst` is borrowed mutably, so it aliases neither input; `A` is
    // f32 or f64, both supported by `gemm` (it panics otherwise, never UB).
    unsafe {
        gemm::gemm(
            dst.rows,
            dst.cols,
            a.cols,
            dst.data.as_mut_ptr(),
            dst.cs as isize,
            dst.rs as isize,
            accumulate,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            A::one(),
            A::one(),
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_product_matches_naive() {
        // a: 3x4 row-major, b: 4x2 given column-major (rs=1, cs=4), dst row-major 3x2.
        let a: Vec<f64> = (0..12).map(|v| v as f64 * 0.5 - 2.0).collect();
        let b: Vec<f64> = (0..8).map(|v| (v * v) as f64 - 3.0).collect();
        let mut d = vec![1.0f64; 6];
        matmul(
            MatMut {
                data: &mut d,
                rows: 3,
                cols: 2,
                rs: 2,
                cs: 1,
            },
            MatRef {
                data: &a,
                rows: 3,
                cols: 4,
                rs: 4,
                cs: 1,
            },
            MatRef {
                data: &b,
                rows: 4,
                cols: 2,
                rs: 1,
                cs: 4,
            },
            true,
        );
        for r in 0..3 {
            for c in 0..2 {
                let want: f64 = 1.0 + (0..4).map(|k| a[r * 4 + k] * b[k + c * 4]).sum::<f64>();
                assert_eq!(d[r * 2 + c], want);
            }
        }
    }
}
