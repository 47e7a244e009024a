//! The training loop on the GPU: the network of `model.rs`, every buffer device-resident.
//!
//! gradops' device API runs the convolutions, the pool, the resize and their gradients; the
//! few elementwise steps (relu and its gradient, the loss and dL/dout, the SGD update) are
//! this example's own kernels, compiled at start-up with NVRTC. Everything is queued on one
//! stream; the loss of each step is reduced on the device (a fixed-order block reduction, no
//! atomics, so the run is bitwise repeatable) into a per-step buffer, and the host reads one
//! value back only when it prints. The ops' outputs come from gradops' allocating variants, for
//! readability (cudarc allocates on the stream); a loop that holds its buffers calls the `_into`
//! variants instead.

#![allow(dead_code)] // each includer (the example, tests/cuda_ops.rs) uses its own part

use std::sync::Arc;
use std::time::Instant;

use gradops::cuda::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use gradops::cuda::{self, DeviceFilterRef, DeviceTensor};
use gradops::{Error, Result, TensorRef};

use crate::model::{Attrs, Config, Data, Params, LAYOUT};

/// Threads per block of the elementwise kernels and the loss reduction.
const BLOCK: u32 = 256;

const KERNELS: &str = r#"
#define BLOCK 256
extern "C" __global__ void relu_forward(float* v, unsigned int n) {
    unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n && v[i] <= 0.0f) v[i] = 0.0f;  // NaN stays NaN, as on the CPU
}
extern "C" __global__ void relu_backward(const float* relu_out, float* d, unsigned int n) {
    unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n && relu_out[i] <= 0.0f) d[i] = 0.0f;
}
// d = k (out - target); partial[block] = the block's sum of squared differences, summed in
// a fixed tree order.
extern "C" __global__ void mse_grad(const float* out, const float* target, float* d,
                                    float* partial, unsigned int n, float k) {
    __shared__ float s[BLOCK];
    unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    float sq = 0.0f;
    if (i < n) {
        float e = out[i] - target[i];
        d[i] = k * e;
        sq = e * e;
    }
    s[threadIdx.x] = sq;
    __syncthreads();
    for (unsigned int h = BLOCK / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
// One block: loss = (sum of partials, fixed order) * inv_n.
extern "C" __global__ void sum_loss(const float* partial, unsigned int parts, float inv_n,
                                    float* loss) {
    __shared__ float s[BLOCK];
    float acc = 0.0f;
    for (unsigned int j = threadIdx.x; j < parts; j += BLOCK) acc += partial[j];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned int h = BLOCK / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) *loss = s[0] * inv_n;
}
extern "C" __global__ void sgd(float* w, const float* g, float lr, unsigned int n) {
    unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) w[i] -= lr * g[i];
}
"#;

fn err(op: &'static str, e: impl std::fmt::Display) -> Error {
    Error::Cuda {
        op,
        msg: e.to_string(),
    }
}

/// `n` as the kernels' `unsigned int` element count.
fn count(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        err(
            "train",
            format!("{n} elements exceed the kernels' u32 count"),
        )
    })
}

fn blocks(n: usize) -> u32 {
    n.div_ceil(BLOCK as usize) as u32
}

fn grid(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks(n).max(1), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The example's elementwise kernels.
struct Kernels {
    relu_forward: CudaFunction,
    relu_backward: CudaFunction,
    mse_grad: CudaFunction,
    sum_loss: CudaFunction,
    sgd: CudaFunction,
}

impl Kernels {
    fn compile(stream: &Arc<CudaStream>) -> Result<Self> {
        const OP: &str = "train: NVRTC";
        let ptx = gradops::cuda::cudarc::nvrtc::compile_ptx(KERNELS).map_err(|e| err(OP, e))?;
        let m = stream.context().load_module(ptx).map_err(|e| err(OP, e))?;
        let f = |name: &str| m.load_function(name).map_err(|e| err(OP, e));
        Ok(Kernels {
            relu_forward: f("relu_forward")?,
            relu_backward: f("relu_backward")?,
            mse_grad: f("mse_grad")?,
            sum_loss: f("sum_loss")?,
            sgd: f("sgd")?,
        })
    }
}

/// Device-resident weights, data and loss history.
pub struct Trainer {
    stream: Arc<CudaStream>,
    cfg: Config,
    attrs: Attrs,
    k: Kernels,
    w1: CudaSlice<f32>,
    w2: CudaSlice<f32>,
    x: Vec<DeviceTensor<f32>>,
    target: Vec<CudaSlice<f32>>,
    /// dL/dout, fully rewritten by `mse_grad` every step (allocated once).
    d_out: DeviceTensor<f32>,
    partial: CudaSlice<f32>,
    losses: CudaSlice<f32>,
}

impl Trainer {
    /// Uploads `params` and `data` once; `max_steps` sizes the loss history.
    pub fn new(
        stream: Arc<CudaStream>,
        cfg: Config,
        params: &Params<f32>,
        data: &Data<f32>,
        max_steps: usize,
    ) -> Result<Self> {
        const OP: &str = "train: upload";
        let up = |v: &[f32]| stream.clone_htod(v).map_err(|e| err(OP, e));
        let x = data
            .x
            .iter()
            .map(|b| DeviceTensor::from_host(&stream, TensorRef::new(b, cfg.x_shape(), LAYOUT)))
            .collect::<Result<Vec<_>>>()?;
        let target = data
            .target
            .iter()
            .map(|t| up(t))
            .collect::<Result<Vec<_>>>()?;
        let out_len: usize = cfg.out_shape().iter().product();
        Ok(Trainer {
            k: Kernels::compile(&stream)?,
            w1: up(&params.w1)?,
            w2: up(&params.w2)?,
            x,
            target,
            d_out: DeviceTensor::zeros(&stream, cfg.out_shape(), LAYOUT)?,
            partial: stream
                .alloc_zeros(blocks(out_len) as usize)
                .map_err(|e| err(OP, e))?,
            losses: stream
                .alloc_zeros(max_steps.max(1))
                .map_err(|e| err(OP, e))?,
            attrs: Attrs::new(),
            cfg,
            stream,
        })
    }

    /// Queues one SGD step on batch `step % batches`, its loss (before the update) into the
    /// history at `step`. Nothing waits for the device.
    pub fn step(&mut self, step: usize, lr: f32) -> Result<()> {
        const OP: &str = "train: step";
        let (s, cfg, a) = (&self.stream, &self.cfg, &self.attrs);
        let b = step % self.x.len();
        let x = self.x[b].view();
        let w1 = DeviceFilterRef::new(self.w1.as_view(), cfg.w1_shape())?;
        let w2 = DeviceFilterRef::new(self.w2.as_view(), cfg.w2_shape())?;

        // Forward.
        let mut hidden = cuda::conv2d(s, x.clone(), w1, &a.conv)?;
        let n = hidden.len();
        {
            let n32 = count(n)?;
            let mut h = hidden.view_mut();
            let mut l = s.launch_builder(&self.k.relu_forward);
            l.arg(h.data_mut()).arg(&n32);
            // SAFETY: relu_forward reads and writes v[0..n), n = the buffer's length.
            unsafe { l.launch(grid(n)) }.map_err(|e| err(OP, e))?;
        }
        let (pooled, _) = cuda::max_pool(s, hidden.view(), &a.pool, false)?;
        let low = cuda::conv2d(s, pooled.view(), w2.clone(), &a.conv)?;
        let out = cuda::resize(s, low.view(), [cfg.hw, cfg.hw], &a.up)?;

        // Loss and dL/dout.
        let n = out.len();
        {
            let n32 = count(n)?;
            let mut d = self.d_out.view_mut();
            let k = 2.0f32 / n as f32;
            let mut l = s.launch_builder(&self.k.mse_grad);
            l.arg(out.as_slice())
                .arg(&self.target[b])
                .arg(d.data_mut())
                .arg(&mut self.partial)
                .arg(&n32)
                .arg(&k);
            // SAFETY: out, target and d hold n elements, partial one per block of the grid.
            unsafe { l.launch(grid(n)) }.map_err(|e| err(OP, e))?;
            let parts = blocks(n);
            let inv_n = 1.0f32 / n as f32;
            let mut loss = self.losses.slice_mut(step..step + 1);
            let mut l = s.launch_builder(&self.k.sum_loss);
            l.arg(&self.partial).arg(&parts).arg(&inv_n).arg(&mut loss);
            // SAFETY: one block reads partial[0..parts) and writes loss[0].
            unsafe { l.launch(grid(1)) }.map_err(|e| err(OP, e))?;
        }

        // Backward.
        let d_low = cuda::resize_grad(s, self.d_out.view(), cfg.low_shape(), &a.up)?;
        let g2 =
            cuda::conv2d_backprop_filter(s, pooled.view(), d_low.view(), cfg.w2_shape(), &a.conv)?;
        let d_pooled =
            cuda::conv2d_backprop_input(s, d_low.view(), w2, cfg.pooled_shape(), &a.conv)?;
        let mut d_hidden = cuda::max_pool_grad(
            s,
            d_pooled.view(),
            hidden.view(),
            Some(pooled.view()),
            &a.pool,
        )?;
        {
            let n = d_hidden.len();
            let n32 = count(n)?;
            let mut d = d_hidden.view_mut();
            let mut l = s.launch_builder(&self.k.relu_backward);
            l.arg(hidden.as_slice()).arg(d.data_mut()).arg(&n32);
            // SAFETY: relu_out and d hold n elements.
            unsafe { l.launch(grid(n)) }.map_err(|e| err(OP, e))?;
        }
        let g1 = cuda::conv2d_backprop_filter(s, x, d_hidden.view(), cfg.w1_shape(), &a.conv)?;

        // SGD.
        for (w, g) in [(&mut self.w1, &g1), (&mut self.w2, &g2)] {
            let n = g.len();
            let n32 = count(n)?;
            let mut l = s.launch_builder(&self.k.sgd);
            l.arg(w).arg(g.as_slice()).arg(&lr).arg(&n32);
            // SAFETY: w and g hold n elements each.
            unsafe { l.launch(grid(n)) }.map_err(|e| err(OP, e))?;
        }
        Ok(())
    }

    /// The losses of steps `0..n` (waits for the device).
    pub fn losses(&self, n: usize) -> Result<Vec<f64>> {
        let v = self
            .stream
            .clone_dtoh(&self.losses.slice(0..n))
            .map_err(|e| err("train: losses", e))?;
        Ok(v.into_iter().map(f64::from).collect())
    }

    /// The loss of one step (waits for the device).
    pub fn loss(&self, step: usize) -> Result<f64> {
        let v = self
            .stream
            .clone_dtoh(&self.losses.slice(step..step + 1))
            .map_err(|e| err("train: loss", e))?;
        Ok(f64::from(v[0]))
    }

    /// The current weights, on the host (waits for the device).
    pub fn params(&self) -> Result<Params<f32>> {
        let down = |w: &CudaSlice<f32>| {
            self.stream
                .clone_dtoh(w)
                .map_err(|e| err("train: params", e))
        };
        Ok(Params {
            w1: down(&self.w1)?,
            w2: down(&self.w2)?,
        })
    }

    /// Waits for the work queued so far.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| err("train: synchronize", e))
    }
}

/// The example's GPU run: `steps` SGD steps, printing the loss every tenth step with the mean
/// time per step since the previous print.
pub fn train(cfg: &Config, steps: usize, lr: f64, batches: usize) -> Result<()> {
    let stream = cuda::stream()?;
    let info = cuda::probe()?;
    let a = Attrs::new();
    let data: Data<f32> = Data::teacher(cfg, &a, batches)?;
    let p: Params<f32> = Params::init(cfg, 1);
    let mut t = Trainer::new(stream, *cfg, &p, &data, steps)?;
    println!(
        "CUDA ({}), f32, batch {} x {}x{}x{}: step, loss, ms/step (forward + backward + SGD, \
         device-resident)",
        info.name, cfg.batch, cfg.c_in, cfg.hw, cfg.hw
    );
    t.step(0, lr as f32)?; // warm-up: module loads and first-use plans
    let first = t.loss(0)?;
    println!("{:5} {first:12.6}", 0);
    let t_all = Instant::now();
    let mut t_mark = (Instant::now(), 1usize);
    for s in 1..steps {
        t.step(s, lr as f32)?;
        if s % 10 == 0 || s + 1 == steps {
            let loss = t.loss(s)?; // waits for the queued steps
            let ms = t_mark.0.elapsed().as_secs_f64() * 1e3 / (s + 1 - t_mark.1) as f64;
            println!("{s:5} {loss:12.6} {ms:9.3}");
            t_mark = (Instant::now(), s + 1);
        }
    }
    t.synchronize()?;
    let last = t.loss(steps.saturating_sub(1))?;
    crate::model::report(
        first,
        last,
        steps.saturating_sub(1),
        t_all.elapsed().as_secs_f64(),
    );
    Ok(())
}
