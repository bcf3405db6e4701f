//! `y = x · Wᵀ` with W kept in its persistent format (spec §2 "compute profile", §8, the
//! GGUF paragraph after §3.4, §9's operator oracle).
//!
//! A [`PreparedWeight`] is made once from a [`WeightView`] (N × K) and then applied to
//! activations x \[M, K\] (f32, bf16 or f16) giving y \[M, N\] (f32 or bf16), with an optional
//! f32 bias \[N\]:
//!
//! ```text
//! y[m, n] = Σ_k x[m, k] · w[n, k]  (+ bias[n])
//! ```
//!
//! **Preparation** checks, once, what the view's construction already checked (pair, shape,
//! plane lengths: spec §2's structural checks) and whether this build has a kernel for the
//! format and layout on the device; nothing is scanned, repacked or requantized (§8). An
//! unsupported combination fails here with [`Error::Unsupported`]. [`supported`] answers
//! the same question without a payload.
//!
//! **Ownership**: a prepared weight *borrows* the view's planes for its lifetime `'a`
//! (zero-copy; in C, the plane buffers must stay valid and unmodified until
//! `ninfer_linear_free`). It owns only its settings and, with two or more threads, its
//! thread pool.
//!
//! **Compute profile** (docs/linear.md):
//! - bf16 / fp32 and every other non-GGUF decodable format: the weight values decoded
//!   exactly, times x as f32, accumulated in f32 (bf16, fp32, the six grouped formats
//!   q2/t2/q4/q5/q6/q8, fp8_e4m3fn_row_* and nvfp4 read their words in place; any other
//!   decodable format goes through `decode_row`).
//! - gguf_*: x is quantized per row to ggml's q8_1 blocks ([`q8_1`]; opt-in for the
//!   k-quants and 256-value i-quants: q8_K blocks, [`q8_k`]) and the product of the exact
//!   weight values with the quantized values x̂ is accumulated in f32 (dedicated
//!   vec_dot kernels for Q8_0, Q4_0, Q5_0, the k-quants Q2_K..Q6_K and the grid i-quants
//!   IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S; any other decodable GGUF type
//!   runs through its decoded f32 row, still against x̂).
//! - Opt-in ([`PreparedWeight::set_activation`] with [`Activation::Q8_1`]): the grouped
//!   formats q2/t2/q4/q5/q6/q8 and nvfp4 (K a multiple of 32) quantize x to the same q8_1
//!   blocks and accumulate the exact weight values times x̂ in f32 with integer block sums
//!   (`linear::cpu::grouped_q8`, `linear::cpu::nvfp4_q8`); [`supported_activation`] says which formats
//!   have it.
//! - Opt-in [`Activation::Q8K`]: the GGUF k-quants and 256-value i-quants quantize x to
//!   ggml's q8_K blocks ([`q8_k`], one binary32 scale per 256 values) and accumulate one
//!   exact integer super-block sum per fma (`linear::cpu::gguf_q8k`).
//! - Every output is computed by one thread in an order fixed per kernel family, so any
//!   thread count and any M give the same bits for the same row of x, and the AVX2 path
//!   gives the bits of the scalar path.
//! - Named tolerance criterion `linear_f32acc_v1`: see [`tolerance`].
//!
//! **CUDA** (feature `cuda`, docs/cuda.md): [`PreparedWeight::on_cuda`] uploads the planes
//! once, [`PreparedWeight::borrow_cuda`] reads planes already in device memory, and
//! [`PreparedWeight::forward_cuda`] runs on a caller's stream; the outputs are the CPU's
//! bits (same evaluation orders). The kernel family comes from one table (`plan.rs`) for
//! every device.
//!
//! Non-finite values propagate as IEEE arithmetic does, except that in a q8_1 product (GGUF,
//! or the opt-in profile) a non-finite activation makes its whole q8_1 block NaN (so every
//! output is NaN), and likewise its q8_K block under [`Activation::Q8K`]. Products
//! do not validate payloads (§8): an in-place kernel computes with the words' arithmetic
//! meaning (never undefined behaviour), the decoded path fails with `InvalidEncoding`;
//! run `validate` first on untrusted payloads.

pub(crate) mod cpu;
pub(crate) mod cuda;
pub(crate) mod plan;
pub(crate) mod plane;
pub mod q8_1;
pub mod q8_k;

pub use cpu::Isa;

use crate::dtype::Dtype;
use crate::error::{Error, Result, mul, try_vec};
use crate::registry::{Format, Layout};
use crate::view::WeightView;
use plan::Plan;
use std::ops::Range;

/// Where a product runs. Numbers are part of the ABI (`NINFER_DEVICE_*`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// The host CPU.
    Cpu = 0,
    /// An NVIDIA GPU through CUDA (the `cuda` feature; docs/cuda.md). Builds without it,
    /// and machines without the driver or a GPU, answer [`Error::NoDevice`].
    Cuda = 1,
}

impl Device {
    /// The device with this number, or [`Error::InvalidArgument`].
    pub fn from_u32(v: u32) -> Result<Device> {
        match v {
            0 => Ok(Device::Cpu),
            1 => Ok(Device::Cuda),
            _ => Err(Error::InvalidArgument(format!("unknown device {v}"))),
        }
    }
}

impl std::fmt::Display for Device {
    /// `CPU` or `CUDA`, as in the C names `NINFER_DEVICE_*`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Device::Cpu => "CPU",
            Device::Cuda => "CUDA",
        })
    }
}

/// The activation precision of a product (spec §2: "Activation and output precision are
/// chosen by the consumer"; a compute profile owns explicit quantization boundaries).
/// Numbers are part of the ABI (`NINFER_ACTIVATION_*`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    /// x as given (converted to f32 exactly): the weight values times x. The default of
    /// every non-GGUF format; GGUF products have no such profile.
    Exact = 0,
    /// x quantized per row to ggml's q8_1 blocks ([`q8_1`]); the weight values times the
    /// q8_1 values x̂. The only profile of gguf_* (the spec's GGUF product), opt-in for the
    /// grouped formats and nvfp4 (K a multiple of 32).
    Q8_1 = 1,
    /// x quantized per row to ggml's q8_K blocks ([`q8_k`]: 256 values, a binary32 scale);
    /// the weight values times the q8_K values x̂. Opt-in for the GGUF k-quants
    /// (gguf_q2_k..gguf_q6_k) and the 256-value i-quants (gguf_iq4_xs, gguf_iq1_s,
    /// gguf_iq1_m, gguf_iq2_xxs, gguf_iq2_xs, gguf_iq2_s, gguf_iq3_xxs, gguf_iq3_s).
    Q8K = 2,
}

impl Activation {
    /// The activation profile with this number, or [`Error::InvalidArgument`].
    pub fn from_u32(v: u32) -> Result<Activation> {
        match v {
            0 => Ok(Activation::Exact),
            1 => Ok(Activation::Q8_1),
            2 => Ok(Activation::Q8K),
            _ => Err(Error::InvalidArgument(format!("unknown activation {v}"))),
        }
    }

    /// Name (`exact`, `q8_1`, `q8_K`).
    pub fn name(self) -> &'static str {
        match self {
            Activation::Exact => "exact",
            Activation::Q8_1 => "q8_1",
            Activation::Q8K => "q8_K",
        }
    }
}

/// Whether this build computes `linear` for weights of `format` in `layout`, activations of
/// `x_dtype` and outputs of `y_dtype` on `device` (spec §2: a kernel supports specific
/// combinations). Answers without a payload; [`PreparedWeight::new`] fails with
/// [`Error::Unsupported`] exactly when the format/layout/device part is `false`.
pub fn supported(
    format: Format,
    layout: Layout,
    x_dtype: Dtype,
    y_dtype: Dtype,
    device: Device,
) -> bool {
    let _ = x_dtype; // every dtype is accepted as an activation
    y_dtype != Dtype::F16 && Plan::new(format, layout).is_ok_and(|p| backend_runs(device, &p))
}

/// Whether `device`'s backend in this build runs `plan` (the CPU runs every family; CUDA
/// those its kernels cover, when built with the `cuda` feature).
fn backend_runs(device: Device, plan: &Plan) -> bool {
    match device {
        Device::Cpu => true,
        #[cfg(feature = "cuda")]
        Device::Cuda => cuda::weight::covers(plan),
        #[cfg(not(feature = "cuda"))]
        Device::Cuda => {
            let _ = plan;
            false
        }
    }
}

/// [`Error::Unsupported`] unless the CUDA kernels cover `plan`.
#[cfg(feature = "cuda")]
fn cuda_covers(plan: &Plan) -> Result<()> {
    if cuda::weight::covers(plan) {
        Ok(())
    } else {
        Err(Error::Unsupported(format!(
            "linear on CUDA: no kernel for {} in {} with {} activations in this build",
            plan.format,
            plan.layout,
            plan.activation.name()
        )))
    }
}

/// Whether this build computes `linear` for weights of `format` in `layout` on `device`
/// with the activation profile `activation` ([`PreparedWeight::set_activation`]): gguf_*
/// only with [`Activation::Q8_1`]; q2/t2/q4/q5/q6/q8 in row_split_k128_v1 and nvfp4 in
/// block_scale_k16_m128x4_v1 with both; every other supported format only with
/// [`Activation::Exact`]; [`Activation::Q8K`] only for gguf_q2_k..gguf_q6_k, gguf_iq4_xs,
/// gguf_iq1_s, gguf_iq1_m, gguf_iq2_xxs, gguf_iq2_xs, gguf_iq2_s, gguf_iq3_xxs and
/// gguf_iq3_s, on the CPU. (Q8_1 also needs K to be a multiple of 32, checked when it is
/// set.)
pub fn supported_activation(
    format: Format,
    layout: Layout,
    activation: Activation,
    device: Device,
) -> bool {
    Plan::with(format, layout, activation).is_ok_and(|p| backend_runs(device, &p))
}

/// The named tolerance criterion `linear_f32acc_v1` (docs/linear.md) for one output:
/// the largest `|y − y_ref|` allowed when `y_ref` is the f64 product of the exact weight
/// values with the activation values (for GGUF, the q8_1 values x̂), plus the bias, and
/// `sum_abs = Σ_k |w_k · x_k| + |bias|` (in f64; for gguf_q2_k, gguf_q4_k and gguf_q5_k,
/// whose weights are `d·sc·q − dmin·m`, the sum of both terms' magnitudes
/// `Σ_k (|d·sc·q_k·x_k| + |dmin·m·x_k|) + |bias|`, docs/linear.md).
///
/// `tol = (K + 8)·2⁻²³·sum_abs + (K + 8)·2⁻¹⁴⁹`, and for bf16 outputs additionally
/// `2⁻⁸·(|y_ref| + tol_f32)` (one rounding to 8 significant bits).
pub fn tolerance(k: usize, sum_abs: f64, y_ref: f64, y_dtype: Dtype) -> f64 {
    let n = k as f64 + 8.0;
    let f32_tol = n * 2f64.powi(-23) * sum_abs + n * 2f64.powi(-149);
    match y_dtype {
        Dtype::F32 => f32_tol,
        _ => f32_tol + 2f64.powi(-8) * (y_ref.abs() + f32_tol),
    }
}

/// A weight prepared for `linear`: its plan (which kernel family, which activation
/// profile) and the state of the device that runs it. Borrows the view's planes for `'a`.
pub struct PreparedWeight<'a> {
    plan: Plan,
    rows: usize,
    cols: usize,
    backend: Backend<'a>,
}

/// The device side of a prepared weight.
enum Backend<'a> {
    Cpu(cpu::engine::Engine<'a>),
    #[cfg(feature = "cuda")]
    Cuda(cuda::weight::CudaWeight),
}

impl std::fmt::Debug for PreparedWeight<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("PreparedWeight");
        d.field("format", &self.plan.format)
            .field("rows", &self.rows())
            .field("cols", &self.cols())
            .field("family", &self.plan.family)
            .field("activation", &self.plan.activation);
        match &self.backend {
            Backend::Cpu(e) => d
                .field("kernel", &e.kernel)
                .field("isa", &e.isa)
                .field("threads", &e.threads),
            #[cfg(feature = "cuda")]
            Backend::Cuda(c) => d.field("cuda_device", &c.ordinal()),
        };
        d.finish()
    }
}

impl<'a> PreparedWeight<'a> {
    /// Prepares `view` for the CPU (best instruction set, the default thread setting).
    ///
    /// Errors: [`Error::Unsupported`] when this build has no kernel for the format and
    /// layout (e.g. int32, or a format whose decoder is not built).
    pub fn new(view: WeightView<'a>) -> Result<Self> {
        Self::on(view, Device::Cpu)
    }

    /// Prepares `view` for `device` (CUDA: device 0, see [`PreparedWeight::on_cuda`]).
    /// Errors: [`Error::Unsupported`] for a combination this build has no kernel for on
    /// that device, [`Error::NoDevice`] for CUDA without a usable GPU, or as
    /// [`PreparedWeight::new`].
    pub fn on(view: WeightView<'a>, device: Device) -> Result<Self> {
        let plan = Plan::new(view.format(), view.layout())?;
        match device {
            Device::Cpu => Ok(PreparedWeight {
                plan,
                rows: view.rows(),
                cols: view.cols(),
                backend: Backend::Cpu(cpu::engine::Engine::new(view, &plan)),
            }),
            Device::Cuda => Self::on_cuda(view, 0),
        }
    }

    /// Prepares `view` on CUDA device `ordinal`: its planes are copied once to device
    /// memory as they are (the persistent representation, no repacking: spec §8), so the
    /// host planes may be released afterwards. Forwards then run on the device
    /// ([`PreparedWeight::forward_cuda`], or [`PreparedWeight::forward`] from host
    /// buffers).
    ///
    /// Errors: [`Error::NoDevice`] (no CUDA support in this build, no driver, no device
    /// `ordinal`), [`Error::Unsupported`] for a format the CUDA kernels do not cover
    /// ([`supported`] with [`Device::Cuda`]), [`Error::Cuda`] for a failing driver call.
    pub fn on_cuda(view: WeightView<'_>, ordinal: u32) -> Result<Self> {
        let plan = Plan::new(view.format(), view.layout())?;
        #[cfg(feature = "cuda")]
        {
            cuda_covers(&plan)?;
            let w = cuda::weight::CudaWeight::upload(
                view.format(),
                view.layout(),
                view.rows(),
                view.cols(),
                [view.plane(0), view.plane(1), view.plane(2)],
                ordinal,
            )?;
            Ok(PreparedWeight {
                plan,
                rows: view.rows(),
                cols: view.cols(),
                backend: Backend::Cuda(w),
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (plan, ordinal);
            Err(crate::cuda::not_compiled())
        }
    }

    /// A weight over planes already in device memory of CUDA device `ordinal` (zero copy:
    /// the runtime keeps its uploaded encoded payload). `planes[i]` = (device address,
    /// byte length) of plane i, the lengths a [`WeightView`] of this format, layout and
    /// shape would have (unused planes: (0, 0)). Nothing is read or copied here.
    ///
    /// Errors: the structural errors of [`WeightView::new`] (pair, shape, plane lengths),
    /// [`Error::NullPointer`] for a null address with a non-zero length, and as
    /// [`PreparedWeight::on_cuda`].
    ///
    /// # Safety
    /// Each address must point to that many bytes of device memory of that device, holding
    /// the plane, valid and unmodified until the weight is dropped.
    pub unsafe fn borrow_cuda(
        format: Format,
        layout: Layout,
        rows: usize,
        cols: usize,
        planes: [(u64, usize); 3],
        ordinal: u32,
    ) -> Result<PreparedWeight<'static>> {
        crate::layouts::check_plane_lens(format, layout, rows, cols, planes.map(|p| p.1))?;
        if planes.iter().any(|&(a, len)| a == 0 && len != 0) {
            return Err(Error::NullWithLength("device plane"));
        }
        let plan = Plan::new(format, layout)?;
        #[cfg(feature = "cuda")]
        {
            cuda_covers(&plan)?;
            // SAFETY: the caller's contract above.
            let w = unsafe {
                cuda::weight::CudaWeight::borrow(
                    format,
                    layout,
                    rows,
                    cols,
                    planes.map(|p| p.1),
                    planes.map(|p| p.0),
                    ordinal,
                )?
            };
            Ok(PreparedWeight {
                plan,
                rows,
                cols,
                backend: Backend::Cuda(w),
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (plan, ordinal);
            Err(crate::cuda::not_compiled())
        }
    }

    /// Where the weight computes.
    pub fn device(&self) -> Device {
        match &self.backend {
            Backend::Cpu(_) => Device::Cpu,
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => Device::Cuda,
        }
    }

    /// The weight's host view (`None` for a CUDA weight, whose planes live on the device).
    pub fn view(&self) -> Option<&WeightView<'a>> {
        match &self.backend {
            Backend::Cpu(e) => Some(&e.view),
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => None,
        }
    }

    /// N (output features).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// K (input features).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The CPU instruction set in use (`None` for a CUDA weight).
    pub fn isa(&self) -> Option<Isa> {
        match &self.backend {
            Backend::Cpu(e) => Some(e.isa),
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => None,
        }
    }

    /// Chooses the instruction set (to test or benchmark the scalar fallback). Results do
    /// not depend on it. Errors: [`Error::Unsupported`] when this machine lacks it, or for
    /// a CUDA weight.
    pub fn set_isa(&mut self, isa: Isa) -> Result<()> {
        match &mut self.backend {
            Backend::Cpu(e) => e.set_isa(isa),
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => Err(Error::Unsupported(
                "a CUDA weight has no CPU instruction set".into(),
            )),
        }
    }

    /// Threads for [`forward`](Self::forward) and [`forward_rows`](Self::forward_rows):
    /// 0 = the default, `RAYON_NUM_THREADS` threads if set, else one per logical CPU: the
    /// calling thread and that many − 1 of a pool the library keeps for the process (made
    /// on first use; should no thread start, the call runs on the calling thread alone and
    /// a later one tries again), 1 = the calling
    /// thread only, n ≥ 2 = the calling thread and a pool of n − 1 threads owned by this
    /// weight. The calling thread starts on the work at once; the others take work items
    /// from the same queue as they wake up (none is woken beyond one per item). Results do
    /// not depend on it. A caller that splits N across its own threads sets 1. Products
    /// may run on one weight from several threads at once (each allocates its own
    /// temporaries); calls sharing a pool share its threads. A CUDA weight keeps the
    /// setting and ignores it.
    ///
    /// Errors: [`Error::InvalidArgument`] for more than 1024 threads, [`Error::Internal`]
    /// if the pool cannot be created.
    pub fn set_threads(&mut self, threads: usize) -> Result<()> {
        match &mut self.backend {
            Backend::Cpu(e) => e.set_threads(threads),
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) if threads > 1024 => Err(Error::InvalidArgument(format!(
                "{threads} threads (at most 1024)"
            ))),
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => Ok(()),
        }
    }

    /// Chooses the activation profile (docs/linear.md, "Activation profiles"): with
    /// [`Activation::Q8_1`] every row of x is quantized to q8_1 blocks and the product is
    /// that of the weight values with x̂ (criterion `linear_f32acc_v1` with x̂ for x).
    /// With [`Activation::Q8K`] (the GGUF k-quants and 256-value i-quants) x is quantized to
    /// q8_K blocks ([`q8_k`]) instead. Defaults: gguf_* → Q8_1, every other format → Exact.
    ///
    /// Errors (the setting is unchanged on error): [`Error::Unsupported`] for Exact on a
    /// gguf_* weight (the spec's GGUF product quantizes x to q8_1), Q8_1 or Q8K on a format
    /// without it ([`supported_activation`]); [`Error::BadShape`] for Q8_1 when K is not a
    /// multiple of 32 (Q8K: of 256).
    pub fn set_activation(&mut self, activation: Activation) -> Result<()> {
        let plan = Plan::with(self.plan.format, self.plan.layout, activation)?;
        #[cfg(feature = "cuda")]
        if let Backend::Cuda(_) = self.backend {
            cuda_covers(&plan)?;
        }
        if plan.quantizes_x() && !self.cols().is_multiple_of(q8_1::QK8_1) {
            return Err(Error::BadShape(format!(
                "linear: q8_1 activations need K a multiple of 32 (K = {})",
                self.cols()
            )));
        }
        if activation == Activation::Q8K && !self.cols().is_multiple_of(q8_k::QK_K) {
            return Err(Error::BadShape(format!(
                "linear: q8_K activations need K a multiple of 256 (K = {})",
                self.cols()
            )));
        }
        #[allow(irrefutable_let_patterns)] // without the `cuda` feature
        if let Backend::Cpu(e) = &mut self.backend {
            e.set_plan(&plan);
        }
        self.plan = plan;
        Ok(())
    }

    /// The activation profile (see [`set_activation`](Self::set_activation)).
    pub fn activation(&self) -> Activation {
        self.plan.activation
    }

    /// The thread setting (see [`set_threads`](Self::set_threads)).
    pub fn threads(&self) -> usize {
        match &self.backend {
            Backend::Cpu(e) => e.threads,
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => 0,
        }
    }

    /// Whether the AVX-512 tier runs its 512-bit float kernel for every row kind (tests).
    #[cfg(test)]
    pub(crate) fn cpu_all_512(&mut self) -> &mut bool {
        match &mut self.backend {
            Backend::Cpu(e) => &mut e.all_512,
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => panic!("not a CPU weight"),
        }
    }

    /// The CPU kernel (tests swap it to compare kernels on one weight).
    #[cfg(test)]
    pub(crate) fn cpu_kernel(&mut self) -> &mut cpu::engine::Kernel {
        match &mut self.backend {
            Backend::Cpu(e) => &mut e.kernel,
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => panic!("not a CPU weight"),
        }
    }

    /// `y = x · Wᵀ (+ bias)` for `m ≥ 1` rows of `x` (checked shapes and lengths) and the
    /// weight rows `rows` (a non-empty range of a CPU weight; all N on CUDA), y written
    /// through `put` (first row, row count, their `rows.len()` × count products, row of W
    /// major). Every temporary is allocated before the first output is written; on the CPU
    /// they hold one tile of rows, not M, and scale with the range, not N.
    fn tiled(
        &self,
        m: usize,
        x: TileX<'_>,
        rows: Range<usize>,
        put: &mut dyn FnMut(usize, usize, &[f32]),
    ) -> Result<()> {
        let k = self.cols;
        let tile = match &self.backend {
            Backend::Cpu(_) => cpu::engine::TILE_M.min(m),
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => m,
        };
        let mut xf: Vec<f32> = match x {
            TileX::F32(_) => Vec::new(),
            TileX::Bytes(..) => try_vec(mul(tile, k, "a tile of x")?, "a tile of x as f32")?,
        };
        match &self.backend {
            Backend::Cpu(e) => {
                let mut ws = e.take_workspace(m, rows.clone())?;
                let mut first = 0;
                while first < m {
                    let count = tile.min(m - first);
                    let xt = x.rows(first, count, k, &mut xf);
                    e.compute_tile(xt, count, rows.clone(), &mut ws)?;
                    put(first, count, &ws.yt[..rows.len() * count]);
                    first += count;
                }
                e.keep_workspace(ws);
                Ok(())
            }
            #[cfg(feature = "cuda")]
            Backend::Cuda(c) => {
                debug_assert!(rows == (0..self.rows));
                // The synchronous host path, one call for all rows: x up, y [M][N] down,
                // transposed to N × M.
                let x = x.rows(0, m, k, &mut xf);
                let n = self.rows;
                let mut xb: Vec<u8> = crate::error::try_vec(mul(x.len(), 4, "x bytes")?, "x")?;
                xb.extend(x.iter().flat_map(|v| v.to_ne_bytes()));
                let dx = c.to_device(&xb)?;
                drop(xb);
                let mn = mul(m, n, "M × N")?;
                let dy = cuda::weight::DeviceBuffer::new(mul(mn, 4, "y bytes")?)?;
                c.forward(
                    &self.plan,
                    dx.0,
                    Dtype::F32,
                    m,
                    0,
                    dy.0,
                    Dtype::F32,
                    std::ptr::null_mut(),
                    0,
                    0,
                )?;
                let mut yb = crate::error::try_filled(mn * 4, 0u8, "y from the device")?;
                c.to_host(&dy, &mut yb)?;
                let mut yt = crate::error::try_filled(mn, 0f32, "products")?;
                for (i, w) in yb.chunks_exact(4).enumerate() {
                    yt[(i % n) * m + i / n] = f32::from_ne_bytes([w[0], w[1], w[2], w[3]]);
                }
                put(0, m, &yt);
                Ok(())
            }
        }
    }

    /// Bytes of device workspace a [`forward_cuda`](Self::forward_cuda) of `m` rows needs
    /// (0 for a CPU weight, and for CUDA products that need none). Errors:
    /// [`Error::Overflow`].
    pub fn workspace_size(&self, m: usize) -> Result<usize> {
        match &self.backend {
            Backend::Cpu(_) => {
                let _ = m;
                Ok(0)
            }
            #[cfg(feature = "cuda")]
            Backend::Cuda(c) => c.workspace_size(&self.plan, m),
        }
    }

    /// `y = x · Wᵀ (+ bias)` on the weight's CUDA device, enqueued on `stream` (a
    /// `CUstream`; null = the default stream) and returning without waiting: x holds m × K
    /// values of `x_dtype` and y receives m × N values of `y_dtype` (f32 or bf16), both in
    /// device memory of the weight's device, row-major; `bias` is N f32 in device memory
    /// or 0. With a `workspace` (16-byte aligned, as every device allocation is) of at
    /// least [`workspace_size`](Self::workspace_size)(m)
    /// bytes nothing is allocated (the call can be captured in a CUDA graph); with 0 the
    /// workspace is allocated and freed in stream order. Several streams may run forwards
    /// of one weight at once. The results are the CPU's bits (docs/linear.md, "CUDA").
    ///
    /// Errors (nothing is enqueued on error): [`Error::BadShape`] when `k` is not K,
    /// [`Error::Unsupported`] for a CPU weight or f16 outputs, [`Error::BufferTooSmall`]
    /// for a short workspace, [`Error::InvalidArgument`] for a workspace address that is not
    /// a multiple of 16, [`Error::Cuda`] for a failing driver call.
    ///
    /// # Safety
    /// x, y, bias and workspace must be device memory of the weight's device, large enough
    /// for the shapes above, and stay valid until the stream has run the product; y must
    /// not overlap x, bias or the workspace.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn forward_cuda(
        &self,
        x: u64,
        x_dtype: Dtype,
        m: usize,
        k: usize,
        bias: u64,
        y: u64,
        y_dtype: Dtype,
        stream: *mut std::ffi::c_void,
        workspace: u64,
        workspace_bytes: usize,
    ) -> Result<()> {
        self.check_shapes(m, k, None)?;
        if y_dtype == Dtype::F16 {
            return Err(Error::Unsupported(
                "linear: f16 outputs (use f32 or bf16)".into(),
            ));
        }
        if !workspace.is_multiple_of(16) {
            return Err(Error::InvalidArgument(format!(
                "linear on CUDA: the workspace address {workspace:#x} is not a multiple of 16"
            )));
        }
        match &self.backend {
            Backend::Cpu(_) => {
                let _ = (x, x_dtype, bias, y, stream, workspace, workspace_bytes);
                Err(Error::Unsupported(
                    "forward_cuda on a CPU weight (prepare it on a CUDA device)".into(),
                ))
            }
            #[cfg(feature = "cuda")]
            Backend::Cuda(c) => c.forward(
                &self.plan,
                x,
                x_dtype,
                m,
                bias,
                y,
                y_dtype,
                stream,
                workspace,
                workspace_bytes,
            ),
        }
    }

    /// Rows `first .. first + count` of a CUDA weight decoded into `out` (device memory,
    /// row-major count × K values of `out_dtype`, f32 or bf16 rounded to nearest even: the
    /// exact represented values, as [`crate::decode::decode_row_as`]), enqueued on
    /// `stream`.
    ///
    /// Errors: [`Error::RowOutOfRange`], [`Error::Unsupported`] for a CPU weight, f16
    /// output or a format without a device decoder, [`Error::Cuda`].
    ///
    /// # Safety
    /// `out` must be device memory of the weight's device holding count × K values of
    /// `out_dtype`, valid until the stream has run the decode.
    pub unsafe fn decode_rows_cuda(
        &self,
        first: usize,
        count: usize,
        out: u64,
        out_dtype: Dtype,
        stream: *mut std::ffi::c_void,
    ) -> Result<()> {
        let end = first.checked_add(count).filter(|&e| e <= self.rows);
        if end.is_none() {
            return Err(Error::RowOutOfRange {
                row: first.saturating_add(count) as u64,
                rows: self.rows as u64,
            });
        }
        if out_dtype == Dtype::F16 {
            return Err(Error::Unsupported(
                "device decode to f16 (use f32 or bf16)".into(),
            ));
        }
        match &self.backend {
            Backend::Cpu(_) => {
                let _ = (out, stream);
                Err(Error::Unsupported(
                    "decode_rows_cuda on a CPU weight".into(),
                ))
            }
            #[cfg(feature = "cuda")]
            Backend::Cuda(c) => {
                if !cuda::weight::decodes(self.plan.format) {
                    return Err(Error::Unsupported(format!(
                        "no device decoder for {} in this build",
                        self.plan.format
                    )));
                }
                c.decode_rows(first, count, out, out_dtype, stream)
            }
        }
    }

    /// `y = x · Wᵀ (+ bias)` for `m` rows: `x` holds m × k values of `x_dtype`
    /// (native-endian, no alignment required), `y` receives m × N values of `y_dtype`
    /// (f32 or bf16, round-to-nearest-even from the f32 result), `bias` (optional) N f32.
    /// Longer buffers are accepted; only their first elements are used. `m = 0` does
    /// nothing. The special case of [`forward_rows`](Self::forward_rows) with all N rows
    /// and packed x and y (`ldx = k`, `ldy = N`).
    ///
    /// **Memory**: on the CPU, rows of x are taken 64 at a time (converted to f32,
    /// quantized where the profile does, multiplied, written to y), so the temporaries are
    /// bounded by one tile of 64 rows, N, K and the thread count, whatever M is (the bits
    /// do not depend on the tiling: every output is computed in its family's fixed order).
    /// They are all allocated, fallibly, before any output is written. Temporaries of at
    /// most 256 KiB (a single-row product of up to about 16k outputs) stay with the weight
    /// for the next call of the same shape, so a decoding step allocates nothing; no
    /// contents carry over, and a call that finds them taken by another thread allocates
    /// its own. (A CUDA weight's host path converts and transfers all M rows at once, also
    /// fallibly.)
    ///
    /// Errors (nothing is written on error, [`Error::OutOfMemory`] included): [`Error::BadShape`]
    /// when `k` is not the weight's K, [`Error::Unsupported`] for f16 outputs,
    /// [`Error::BufferTooSmall`] for a short x, y or bias, [`Error::Overflow`],
    /// [`Error::OutOfMemory`] when the allocator refuses a temporary (the message names it
    /// and its bytes; the process keeps running), and a decoder's error for a weight decoded
    /// row by row (raised on the first tile, before any output is written).
    #[allow(clippy::too_many_arguments)]
    pub fn forward(
        &self,
        x: &[u8],
        x_dtype: Dtype,
        m: usize,
        k: usize,
        bias: Option<&[f32]>,
        y: &mut [u8],
        y_dtype: Dtype,
    ) -> Result<()> {
        let n = self.rows();
        self.forward_rows(x, x_dtype, m, k, k, bias, 0..n, y, n, y_dtype)
    }

    /// The outputs `rows` = `n0 .. n1` of [`forward`](Self::forward), with strided x and y:
    /// for every activation row r < m and weight row n in `n0 .. n1`,
    /// `y[r·ldy + n] = Σ_j x[r·ldx + j] · w[n, j] (+ bias[n])`, the bits of the same output
    /// of the whole product (every format, activation profile, instruction set, thread
    /// setting and m). This is how a runtime splits one product across its own threads
    /// (each takes a range of N; see [`set_threads`](Self::set_threads)) and reads from and
    /// writes into parts of larger tensors.
    ///
    /// - `x`: m rows of `x_dtype`, row r starting at element `r·ldx` (`ldx ≥ k`, in
    ///   elements); the buffer needs `(m − 1)·ldx + k` elements (the last row only its k),
    ///   none when m = 0. Elements between rows are not read.
    /// - `y`: points at the start of the **full** output row 0 (not at column n0); row r
    ///   starts at element `r·ldy` (`ldy ≥ n1`, in elements) and column n is at `r·ldy + n`.
    ///   The buffer needs `(m − 1)·ldy + n1` elements, none when m = 0. Only the elements
    ///   `r·ldy + n`, r < m, n0 ≤ n < n1 are written; every other byte is untouched.
    /// - `bias`: indexed by the absolute n (`bias[n]` for column n): at least n1 floats.
    /// - `n0 ≤ n1 ≤ N`; an empty range (n0 = n1), like m = 0, checks the arguments and
    ///   writes nothing.
    ///
    /// Memory: as [`forward`](Self::forward), with the temporaries sized by the range's
    /// length instead of N.
    ///
    /// Errors (checked in this order; nothing is written on error): [`Error::BadShape`]
    /// (`k` is not K, then `ldx < k`), [`Error::InvalidArgument`] (`n0 > n1`),
    /// [`Error::RowOutOfRange`] (`n1 > N`, reported as row n1), [`Error::BadShape`]
    /// (`ldy < n1`), [`Error::BufferTooSmall`] (bias shorter than n1),
    /// [`Error::Unsupported`] (f16 outputs), [`Error::Overflow`] and
    /// [`Error::BufferTooSmall`] (x or y shorter than their extents above),
    /// [`Error::Unsupported`] (a CUDA weight, unless the call is the whole product with
    /// packed x and y, i.e. [`forward`](Self::forward)), then as
    /// [`forward`](Self::forward).
    #[allow(clippy::too_many_arguments)]
    pub fn forward_rows(
        &self,
        x: &[u8],
        x_dtype: Dtype,
        m: usize,
        k: usize,
        ldx: usize,
        bias: Option<&[f32]>,
        rows: Range<usize>,
        y: &mut [u8],
        ldy: usize,
        y_dtype: Dtype,
    ) -> Result<()> {
        let (yp, yl) = (y.as_mut_ptr(), y.len());
        // SAFETY: `y` is an exclusive borrow of `yl` bytes for the whole call.
        unsafe { self.forward_rows_ptr(x, x_dtype, m, k, ldx, bias, rows, yp, yl, ldy, y_dtype) }
    }

    /// [`forward_rows`](Self::forward_rows) writing through a pointer: only the elements
    /// of the range are ever borrowed (one row segment at a time), so threads may fill
    /// disjoint ranges of one y at once (the C export's contract).
    ///
    /// # Safety
    /// `y` must be valid for writes of `y_bytes` bytes (NULL only if m = 0), and the
    /// elements this call writes must not be read or written by anyone else during the
    /// call, nor overlap `x`, `bias` or the weight's planes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn forward_rows_ptr(
        &self,
        x: &[u8],
        x_dtype: Dtype,
        m: usize,
        k: usize,
        ldx: usize,
        bias: Option<&[f32]>,
        rows: Range<usize>,
        y: *mut u8,
        y_bytes: usize,
        ldy: usize,
        y_dtype: Dtype,
    ) -> Result<()> {
        self.check_rows(k, ldx, bias, rows.clone(), ldy)?;
        if y_dtype == Dtype::F16 {
            return Err(Error::Unsupported(
                "linear: f16 outputs (use f32 or bf16)".into(),
            ));
        }
        let (n0, n1) = (rows.start, rows.end);
        let x_len = extent(m, ldx, k, x_dtype.size(), "x")?;
        if x.len() < x_len {
            return Err(Error::BufferTooSmall {
                what: "x (bytes)",
                needed: x_len,
                actual: x.len(),
            });
        }
        let y_len = extent(m, ldy, n1, y_dtype.size(), "y")?;
        if y_bytes < y_len {
            return Err(Error::BufferTooSmall {
                what: "y (bytes)",
                needed: y_len,
                actual: y_bytes,
            });
        }
        if self.device() != Device::Cpu && (rows != (0..self.rows) || ldx != k || ldy != n1) {
            return Err(Error::Unsupported(
                "linear: a row range or strided x / y on a CUDA weight (use the whole \
                 product with packed rows, or forward_cuda)"
                    .into(),
            ));
        }
        if m == 0 || n0 == n1 {
            return Ok(());
        }
        let (ys, width) = (y_dtype.size(), n1 - n0);
        self.tiled(
            m,
            TileX::Bytes(&x[..x_len], x_dtype, ldx),
            rows,
            &mut |first, count, yt| {
                for r in 0..count {
                    let at = ((first + r) * ldy + n0) * ys;
                    // SAFETY: row first + r < m, so at + width·ys ≤ ((m − 1)·ldy + n1)·ys
                    // = y_len ≤ y_bytes (checked above, no overflow); these are this
                    // call's own elements, exclusive by the caller's contract.
                    let y = unsafe { std::slice::from_raw_parts_mut(y.add(at), width * ys) };
                    match y_dtype {
                        Dtype::F32 => {
                            for (i, o) in y.chunks_exact_mut(4).enumerate() {
                                let v = output(yt, bias, count, r, i, n0);
                                o.copy_from_slice(&v.to_ne_bytes());
                            }
                        }
                        _ => {
                            for (i, o) in y.chunks_exact_mut(2).enumerate() {
                                let v = output(yt, bias, count, r, i, n0);
                                o.copy_from_slice(&half::bf16::from_f32(v).to_bits().to_ne_bytes());
                            }
                        }
                    }
                }
            },
        )
    }

    /// [`forward`](Self::forward) for f32 x and y (x: m × K, y: m × N; x is read in place,
    /// the same bounded temporaries, the same errors, nothing written on error).
    pub fn forward_f32(
        &self,
        x: &[f32],
        m: usize,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) -> Result<()> {
        let (n, k) = (self.rows(), self.cols());
        self.check_rows(k, k, bias, 0..n, n)?;
        let xl = mul(m, k, "M × K")?;
        if x.len() < xl {
            return Err(Error::BufferTooSmall {
                what: "x",
                needed: xl,
                actual: x.len(),
            });
        }
        let yl = mul(m, n, "M × N")?;
        if y.len() < yl {
            return Err(Error::BufferTooSmall {
                what: "y",
                needed: yl,
                actual: y.len(),
            });
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        self.tiled(m, TileX::F32(&x[..xl]), 0..n, &mut |first, count, yt| {
            for (r, yr) in y[first * n..(first + count) * n]
                .chunks_exact_mut(n)
                .enumerate()
            {
                for (i, o) in yr.iter_mut().enumerate() {
                    *o = output(yt, bias, count, r, i, 0);
                }
            }
        })
    }

    /// The argument checks of a product with the outputs `rows`, x rows `ldx` and y rows
    /// `ldy` elements apart (buffers excepted).
    fn check_rows(
        &self,
        k: usize,
        ldx: usize,
        bias: Option<&[f32]>,
        rows: Range<usize>,
        ldy: usize,
    ) -> Result<()> {
        if k != self.cols() {
            return Err(Error::BadShape(format!(
                "linear: x has K = {k} but the weight has K = {}",
                self.cols()
            )));
        }
        if ldx < k {
            return Err(Error::BadShape(format!(
                "linear: ldx = {ldx} is less than K = {k} (rows of x would overlap)"
            )));
        }
        if rows.start > rows.end {
            return Err(Error::InvalidArgument(format!(
                "linear: output range n0 = {} > n1 = {}",
                rows.start, rows.end
            )));
        }
        if rows.end > self.rows() {
            // n1 is an exclusive end: n1 = N is the last valid value.
            return Err(Error::RangeEndOutOfRange {
                end: rows.end as u64,
                rows: self.rows() as u64,
            });
        }
        if ldy < rows.end {
            return Err(Error::BadShape(format!(
                "linear: ldy = {ldy} is less than n1 = {} (rows of y would overlap)",
                rows.end
            )));
        }
        if let Some(b) = bias
            && b.len() < rows.end
        {
            return Err(Error::BufferTooSmall {
                what: "bias",
                needed: rows.end,
                actual: b.len(),
            });
        }
        Ok(())
    }

    fn check_shapes(&self, _m: usize, k: usize, bias: Option<&[f32]>) -> Result<()> {
        let n = self.rows();
        self.check_rows(k, k, bias, 0..n, n)
    }
}

/// Bytes of a buffer of `m` rows of `ld` elements of `size` bytes whose last row holds only
/// its first `used` elements: `((m − 1)·ld + used)·size`, 0 when m = 0.
fn extent(m: usize, ld: usize, used: usize, size: usize, what: &str) -> Result<usize> {
    if m == 0 {
        return Ok(0);
    }
    let elems = mul(m - 1, ld, what)?
        .checked_add(used)
        .ok_or_else(|| Error::Overflow(format!("{what}: (m − 1)·ld + {used} elements")))?;
    mul(elems, size, what)
}

/// y[mi, n0 + i] from the products of the outputs n0.. (row of W major, `m` activation
/// rows), plus the bias of the absolute column (one f32 addition).
#[inline]
fn output(yt: &[f32], bias: Option<&[f32]>, m: usize, mi: usize, i: usize, n0: usize) -> f32 {
    let v = yt[i * m + mi];
    match bias {
        Some(b) => v + b[n0 + i],
        None => v,
    }
}

/// The activations of a product: f32 rows read in place (packed, K apart), or
/// native-endian words of a dtype, rows `ldx` elements apart, converted one tile at a time.
#[derive(Clone, Copy)]
enum TileX<'b> {
    F32(&'b [f32]),
    Bytes(&'b [u8], Dtype, usize),
}

impl<'b> TileX<'b> {
    /// Rows `first .. first + count` (of `k` values) as f32: in place, or converted into
    /// `buf` (its contents replaced).
    fn rows<'s>(self, first: usize, count: usize, k: usize, buf: &'s mut Vec<f32>) -> &'s [f32]
    where
        'b: 's,
    {
        match self {
            TileX::F32(x) => &x[first * k..(first + count) * k],
            TileX::Bytes(x, dtype, ld) => {
                let s = dtype.size();
                buf.clear();
                for r in first..first + count {
                    to_f32(&x[r * ld * s..(r * ld + k) * s], dtype, buf);
                }
                buf
            }
        }
    }
}

/// Native-endian words of `dtype` to f32 (exact), appended to `out` (within its capacity
/// when it has room).
fn to_f32(x: &[u8], dtype: Dtype, out: &mut Vec<f32>) {
    match dtype {
        Dtype::F32 => out.extend(
            x.chunks_exact(4)
                .map(|w| f32::from_ne_bytes([w[0], w[1], w[2], w[3]])),
        ),
        Dtype::Bf16 => out.extend(
            x.chunks_exact(2)
                .map(|w| f32::from_bits((u16::from_ne_bytes([w[0], w[1]]) as u32) << 16)),
        ),
        Dtype::F16 => out.extend(
            x.chunks_exact(2)
                .map(|w| half::f16::from_bits(u16::from_ne_bytes([w[0], w[1]])).to_f32()),
        ),
    }
}
