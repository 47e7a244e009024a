//! Max-pool gradient routing per the TF CPU rule: ties, NaN, padding, overlapping windows.

use gradops::{
    bf16, f16, max_pool, max_pool_grad, max_pool_grad_with_argmax, Layout, MaxPoolAttrs, Padding,
    TensorRef,
};

fn grad(x: &[f32], hw: [usize; 2], dy: &[f32], ohw: [usize; 2], attrs: &MaxPoolAttrs) -> Vec<f32> {
    let dx = max_pool_grad(
        TensorRef::new(dy, [1, ohw[0], ohw[1], 1], Layout::Nhwc),
        TensorRef::new(x, [1, hw[0], hw[1], 1], Layout::Nhwc),
        None,
        attrs,
    )
    .unwrap();
    // The stored-argmax path must route identically.
    let (_, arg) = max_pool(
        TensorRef::new(x, [1, hw[0], hw[1], 1], Layout::Nhwc),
        attrs,
        true,
    )
    .unwrap();
    let dx2 = max_pool_grad_with_argmax(
        TensorRef::new(dy, [1, ohw[0], ohw[1], 1], Layout::Nhwc),
        &arg.unwrap(),
        [1, hw[0], hw[1], 1],
        attrs,
    )
    .unwrap();
    assert_eq!(
        dx.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        dx2.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    dx.data
}

#[test]
fn ties_go_to_the_first_cell_in_row_major_order() {
    let x = [5.0, 5.0, 5.0, 5.0];
    let dx = grad(&x, [2, 2], &[3.0], [1, 1], &MaxPoolAttrs::new([2, 2]));
    assert_eq!(dx, vec![3.0, 0.0, 0.0, 0.0]);
    let x = [1.0, 7.0, 7.0, 2.0]; // tie between (0,1) and (1,0): (0,1) comes first
    assert_eq!(
        grad(&x, [2, 2], &[3.0], [1, 1], &MaxPoolAttrs::new([2, 2])),
        vec![0.0, 3.0, 0.0, 0.0]
    );
}

#[test]
fn nan_first_keeps_the_gradient_and_later_nan_never_wins() {
    let n = f32::NAN;
    assert_eq!(
        grad(
            &[n, 9.0, 1.0, 2.0],
            [2, 2],
            &[4.0],
            [1, 1],
            &MaxPoolAttrs::new([2, 2])
        ),
        vec![4.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(
        grad(
            &[1.0, n, 3.0, 2.0],
            [2, 2],
            &[4.0],
            [1, 1],
            &MaxPoolAttrs::new([2, 2])
        ),
        vec![0.0, 0.0, 4.0, 0.0]
    );
    // All NaN: TF routes to the first cell (tfjs routes nowhere: do not copy).
    assert_eq!(
        grad(
            &[n, n, n, n],
            [2, 2],
            &[4.0],
            [1, 1],
            &MaxPoolAttrs::new([2, 2])
        ),
        vec![4.0, 0.0, 0.0, 0.0]
    );
}

#[test]
fn nan_in_dy_propagates_to_its_argmax() {
    let dx = grad(
        &[1.0, 2.0, 3.0, 4.0],
        [2, 2],
        &[f32::NAN],
        [1, 1],
        &MaxPoolAttrs::new([2, 2]),
    );
    assert!(dx[3].is_nan() && dx[..3] == [0.0, 0.0, 0.0]);
}

#[test]
fn padded_cells_are_never_candidates() {
    // All values negative: a zero-valued padding cell would win if it were a candidate.
    let x = [-5.0, -1.0, -3.0, -2.0];
    let a = MaxPoolAttrs::new([3, 3])
        .strides([1, 1])
        .padding(Padding::Same);
    // SAME 3x3 stride 1 on 2x2: pads 1 before? need = (2-1)*1+3-2 = 2 -> top 1, bottom 1.
    let dx = grad(&x, [2, 2], &[1.0, 10.0, 100.0, 1000.0], [2, 2], &a);
    assert_eq!(dx, vec![0.0, 1111.0, 0.0, 0.0]);
    // Explicit padding 2x2 window with pads [[1,0],[1,0]]: window (0,0) sees only x[0].
    let a = MaxPoolAttrs::new([2, 2])
        .strides([2, 2])
        .padding(Padding::Explicit([[1, 0], [1, 0]]));
    let x = [-5.0, -1.0, -3.0, -2.0, -9.0, -8.0, -7.0, -6.0, -4.0];
    let dx = grad(&x, [3, 3], &[1.0, 2.0, 3.0, 4.0], [2, 2], &a);
    // window (1,1) covers x[4], x[5], x[7], x[8]: -4 at index 8 wins.
    assert_eq!(dx, vec![1.0, 2.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 4.0]);
}

#[test]
fn overlapping_windows_sum_their_gradients() {
    // 3x3 windows, stride 1 on 4x4: the global max at (1,1)... (2,2) is in all four windows.
    let mut x = [0.0f32; 16];
    x[10] = 9.0;
    let dx = grad(
        &x,
        [4, 4],
        &[1.0, 2.0, 3.0, 4.0],
        [2, 2],
        &MaxPoolAttrs::new([3, 3]),
    );
    let mut want = [0.0f32; 16];
    want[10] = 10.0;
    assert_eq!(dx, want);
}

#[test]
fn f16_sums_in_f32_and_rounds_once() {
    // The centre of a 3x3 image is the max of all four 2x2 windows. 2048 + 1 + 1 + 1 summed in
    // f16 sticks at 2048 (each +1 is a tie rounding to even); summed in f32 it is 2051, which
    // rounds once to 2052.
    let x: Vec<f16> = (0..9)
        .map(|i| f16::from_f32(if i == 4 { 9.0 } else { 0.0 }))
        .collect();
    let dy: Vec<f16> = [2048.0, 1.0, 1.0, 1.0]
        .iter()
        .map(|&v| f16::from_f32(v))
        .collect();
    let dx = max_pool_grad(
        TensorRef::new(&dy, [1, 2, 2, 1], Layout::Nhwc),
        TensorRef::new(&x, [1, 3, 3, 1], Layout::Nhwc),
        None,
        &MaxPoolAttrs::new([2, 2]),
    )
    .unwrap();
    assert_eq!(dx.data[4].to_f32(), 2052.0);
}

#[test]
fn bf16_sums_in_f32_and_rounds_once() {
    // As above with bf16's 8-bit significand: 256 + 1 + 1 + 1 summed in bf16 sticks at 256
    // (each +1 is a tie rounding to even); summed in f32 it is 259, a tie between 258 and
    // 260 that rounds once, to the even 260.
    let x: Vec<bf16> = (0..9)
        .map(|i| bf16::from_f32(if i == 4 { 9.0 } else { 0.0 }))
        .collect();
    let dy: Vec<bf16> = [256.0, 1.0, 1.0, 1.0]
        .iter()
        .map(|&v| bf16::from_f32(v))
        .collect();
    let dx = max_pool_grad(
        TensorRef::new(&dy, [1, 2, 2, 1], Layout::Nhwc),
        TensorRef::new(&x, [1, 3, 3, 1], Layout::Nhwc),
        None,
        &MaxPoolAttrs::new([2, 2]),
    )
    .unwrap();
    assert_eq!(dx.data[4].to_f32(), 260.0);
}

#[test]
fn stored_argmax_anywhere_in_its_unit_scatters_in_window_order() {
    // Indices anywhere in their window's unit (plane or image) and channel, far ahead of and
    // behind the window, -1 among them, land where a plain zero-then-scatter in window order
    // puts them, bit for bit, into a poisoned dx: the kernel zeroes small units piecemeal as
    // the indices reach them, and this covers units of several pieces.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let attrs = MaxPoolAttrs::new([3, 3])
        .strides([2, 2])
        .padding(Padding::Same);
    for (layout, n, c, h, w) in [
        (Layout::Nchw, 2usize, 3usize, 83usize, 83usize),
        (Layout::Nchw, 1, 2, 9, 7),
        (Layout::Nhwc, 2, 5, 50, 50),
        (Layout::Nhwc, 2, 4, 40, 33),
        (Layout::Nhwc, 1, 1, 97, 90),
        // A unit over 1 MiB: zeroed whole before the scatter, not piecemeal.
        (Layout::Nhwc, 1, 4, 300, 300),
    ] {
        let (oh, ow) = (h.div_ceil(2), w.div_ceil(2));
        let (xs, ys) = match layout {
            Layout::Nchw => ([n, c, h, w], [n, c, oh, ow]),
            Layout::Nhwc => ([n, h, w, c], [n, oh, ow, c]),
        };
        let ny = n * c * oh * ow;
        let dy: Vec<f32> = (0..ny)
            .map(|_| (next() % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        let unit = match layout {
            Layout::Nchw => h * w,
            Layout::Nhwc => h * w * c,
        };
        let argmax: Vec<i64> = (0..ny)
            .map(|o| {
                let (u, ch) = match layout {
                    Layout::Nchw => (o / (oh * ow), 0),
                    Layout::Nhwc => (o / (oh * ow * c), o % c),
                };
                if next() % 10 == 0 {
                    return -1;
                }
                let cell = next() as usize % (h * w);
                let within = match layout {
                    Layout::Nchw => cell,
                    Layout::Nhwc => cell * c + ch,
                };
                (u * unit + within) as i64
            })
            .collect();
        let mut want = vec![0.0f32; n * c * h * w];
        for (&d, &a) in dy.iter().zip(&argmax) {
            if a >= 0 {
                want[a as usize] += d;
            }
        }
        let mut got = vec![f32::NAN; want.len()];
        gradops::max_pool_grad_with_argmax_into(
            TensorRef::new(&dy, ys, layout),
            &argmax,
            xs,
            &attrs,
            &mut got,
        )
        .unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(&got) == bits(&want),
            "{layout:?} {xs:?}: first difference at {:?}",
            got.iter()
                .zip(&want)
                .position(|(a, b)| a.to_bits() != b.to_bits())
        );
    }
}
