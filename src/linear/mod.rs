//! `y = x · Wᵀ` with W kept in its persistent format (spec §2 "compute profile", §8, the
//! GGUF paragraph after §3.4, §9's operator oracle).
//!
//! A [`PreparedWeight`] is made once from a [`WeightView`] (N × K) and then applied to
//! activations x [M, K] (f32, bf16 or f16) giving y [M, N] (f32 or bf16), with an optional
//! f32 bias [N]:
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
//! - gguf_*: x is quantized per row to ggml's q8_1 blocks ([`q8_1`]) and the product of
//!   the exact weight values with the q8_1 values x̂ is accumulated in f32 (dedicated
//!   vec_dot kernels for Q8_0, Q4_0, Q5_0, the k-quants Q2_K..Q6_K and the grid i-quants
//!   IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S; any other decodable GGUF type
//!   runs through its decoded f32 row, still against x̂).
//! - Opt-in ([`PreparedWeight::set_activation`] with [`Activation::Q8_1`]): the grouped
//!   formats q2/t2/q4/q5/q6/q8 and nvfp4 (K a multiple of 32) quantize x to the same q8_1
//!   blocks and accumulate the exact weight values times x̂ in f32 with integer block sums
//!   ([`cpu::grouped_q8`], [`cpu::nvfp4_q8`]); [`supported_activation`] says which formats
//!   have it.
//! - Every output is computed by one thread in an order fixed per kernel family, so any
//!   thread count and any M give the same bits for the same row of x, and the AVX2 path
//!   gives the bits of the scalar path.
//! - Named tolerance criterion `linear_f32acc_v1`: see [`tolerance`].
//!
//! Non-finite values propagate as IEEE arithmetic does, except that in a q8_1 product (GGUF,
//! or the opt-in profile) a non-finite activation makes its whole q8_1 block NaN (so every
//! output is NaN). Products
//! do not validate payloads (§8): an in-place kernel computes with the words' arithmetic
//! meaning (never undefined behaviour), the decoded path fails with `InvalidEncoding`;
//! run `validate` first on untrusted payloads.

pub(crate) mod cpu;
pub mod q8_1;

pub use cpu::Isa;

use crate::decode;
use crate::dtype::Dtype;
use crate::error::{Error, Result, mul};
use crate::layouts;
use crate::registry::{Category, Format, Layout, check_compatible};
use crate::view::WeightView;
use cpu::float::{Grouped, WRow};
use cpu::gguf::Kind;
use rayon::prelude::*;
use std::sync::Arc;

/// Where a product runs. Numbers are part of the ABI (`NINFER_DEVICE_*`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// The host CPU.
    Cpu = 0,
    /// An NVIDIA GPU through CUDA (not implemented in this build).
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
}

impl Activation {
    /// The activation profile with this number, or [`Error::InvalidArgument`].
    pub fn from_u32(v: u32) -> Result<Activation> {
        match v {
            0 => Ok(Activation::Exact),
            1 => Ok(Activation::Q8_1),
            _ => Err(Error::InvalidArgument(format!("unknown activation {v}"))),
        }
    }

    /// Lower-case name (`exact`, `q8_1`).
    pub fn name(self) -> &'static str {
        match self {
            Activation::Exact => "exact",
            Activation::Q8_1 => "q8_1",
        }
    }
}

/// How a prepared weight computes its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// bf16 words, f32 activations.
    Bf16,
    /// fp32 words, f32 activations.
    Fp32,
    /// q2/q4/q5/q6/q8/t2 codes and scales read in place (row_split_k128_v1), f32
    /// activations (the decoded path's values and order without its validation pass).
    RowSplit(Grouped),
    /// fp8_e4m3fn_row_* codes read in place, f32 activations (same reasoning).
    Fp8Row,
    /// nvfp4 codes read in place (block scales gathered per row), f32 activations.
    Nvfp4,
    /// A dedicated GGUF vec_dot against q8_1.
    Gguf(Kind),
    /// A grouped format (row_split_k128_v1) against q8_1 (the opt-in profile).
    GroupedQ8(Grouped),
    /// nvfp4 against q8_1 (the opt-in profile; block scales gathered per row).
    Nvfp4Q8,
    /// A GGUF type without a dedicated kernel: decoded f32 row against x̂ (q8_1 values).
    GgufDecoded,
    /// Any other decodable format: decoded f32 row against x.
    Decoded,
}

/// The path for a view's format, or [`Error::Unsupported`].
fn path_for(view: &WeightView<'_>) -> Result<Path> {
    let format = view.format();
    let path = match format {
        Format::Bf16 => Path::Bf16,
        Format::Fp32 => Path::Fp32,
        f if view.layout() == Layout::RowSplitK128_V1 && grouped_kind(f).is_some() => {
            Path::RowSplit(grouped_kind(f).expect("checked"))
        }
        Format::Fp8E4m3fnRowBf16 | Format::Fp8E4m3fnRowFp16 => Path::Fp8Row,
        Format::Nvfp4 if view.layout() == Layout::BlockScaleK16_M128x4_V1 => Path::Nvfp4,
        f if f.info().category == Category::GgufBlock => match Kind::of(f) {
            Some(k) => Path::Gguf(k),
            None if decode::is_decodable(view) => Path::GgufDecoded,
            None => return Err(unsupported(format, view.layout())),
        },
        _ if decode::is_decodable(view) => Path::Decoded,
        _ => return Err(unsupported(format, view.layout())),
    };
    Ok(path)
}

/// The in-place code reader of a grouped format.
fn grouped_kind(format: Format) -> Option<Grouped> {
    Some(match format {
        Format::Q2_G64Fp16 => Grouped::Q2,
        Format::T2_G128Fp16 => Grouped::T2,
        Format::Q4_G64Fp16 => Grouped::Q4,
        Format::Q5_G64Fp16 => Grouped::Q5,
        Format::Q6_G64Fp16 => Grouped::Q6,
        Format::Q8_G32Fp16 => Grouped::Q8,
        _ => return None,
    })
}

fn unsupported(format: Format, layout: Layout) -> Error {
    Error::Unsupported(format!(
        "linear: no CPU kernel for {format} in {layout} in this build"
    ))
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
    if device != Device::Cpu || y_dtype == Dtype::F16 || check_compatible(format, layout).is_err() {
        return false;
    }
    // A zero payload of a small legal shape asks the decoders the same question a real view
    // would (K = 256 is a multiple of every block and group size).
    let Ok(sizes) = layouts::plane_sizes(format, layout, 1, 256) else {
        return false;
    };
    let bufs: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
    let Ok(view) = WeightView::new(format, layout, 1, 256, [&bufs[0], &bufs[1], &bufs[2]]) else {
        return false;
    };
    path_for(&view).is_ok()
}

/// Whether this build computes `linear` for weights of `format` in `layout` on `device`
/// with the activation profile `activation` ([`PreparedWeight::set_activation`]): gguf_*
/// only with [`Activation::Q8_1`]; q2/t2/q4/q5/q6/q8 in row_split_k128_v1 and nvfp4 in
/// block_scale_k16_m128x4_v1 with both; every other supported format only with
/// [`Activation::Exact`]. (Q8_1 also needs K to be a
/// multiple of 32, checked when it is set.)
pub fn supported_activation(
    format: Format,
    layout: Layout,
    activation: Activation,
    device: Device,
) -> bool {
    if !supported(format, layout, Dtype::F32, Dtype::F32, device) {
        return false;
    }
    let gguf = format.info().category == Category::GgufBlock;
    match activation {
        Activation::Exact => !gguf,
        Activation::Q8_1 => {
            gguf || (layout == Layout::RowSplitK128_V1 && grouped_kind(format).is_some())
                || (format == Format::Nvfp4 && layout == Layout::BlockScaleK16_M128x4_V1)
        }
    }
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

/// A weight prepared for `linear` on the CPU. Borrows the view's planes for `'a`.
pub struct PreparedWeight<'a> {
    view: WeightView<'a>,
    path: Path,
    activation: Activation,
    isa: Isa,
    threads: usize,
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl std::fmt::Debug for PreparedWeight<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedWeight")
            .field("format", &self.view.format())
            .field("rows", &self.view.rows())
            .field("cols", &self.view.cols())
            .field("path", &self.path)
            .field("activation", &self.activation)
            .field("isa", &self.isa)
            .field("threads", &self.threads)
            .finish()
    }
}

impl<'a> PreparedWeight<'a> {
    /// Prepares `view` for the CPU (best instruction set, the global rayon pool).
    ///
    /// Errors: [`Error::Unsupported`] when this build has no kernel for the format and
    /// layout (e.g. int32, or a format whose decoder is not built).
    pub fn new(view: WeightView<'a>) -> Result<Self> {
        Self::on(view, Device::Cpu)
    }

    /// Prepares `view` for `device`. Errors: [`Error::Unsupported`] for any device but the
    /// CPU in this build, or as [`PreparedWeight::new`].
    pub fn on(view: WeightView<'a>, device: Device) -> Result<Self> {
        if device != Device::Cpu {
            return Err(Error::Unsupported(format!(
                "linear on {device:?} is not implemented in this build"
            )));
        }
        let path = path_for(&view)?;
        let activation = match path {
            Path::Gguf(_) | Path::GgufDecoded => Activation::Q8_1,
            _ => Activation::Exact,
        };
        Ok(PreparedWeight {
            view,
            path,
            activation,
            isa: Isa::detect(),
            threads: 0,
            pool: None,
        })
    }

    /// The weight's view.
    pub fn view(&self) -> &WeightView<'a> {
        &self.view
    }

    /// N (output features).
    pub fn rows(&self) -> usize {
        self.view.rows()
    }

    /// K (input features).
    pub fn cols(&self) -> usize {
        self.view.cols()
    }

    /// The instruction set in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Chooses the instruction set (to test or benchmark the scalar fallback). Results do
    /// not depend on it. Errors: [`Error::Unsupported`] when this machine lacks it.
    pub fn set_isa(&mut self, isa: Isa) -> Result<()> {
        if !isa.available() {
            return Err(Error::Unsupported(format!(
                "{} is not available here",
                isa.name()
            )));
        }
        self.isa = isa;
        Ok(())
    }

    /// Threads for [`forward`](Self::forward): 0 = rayon's global pool (the default),
    /// 1 = the calling thread only, n ≥ 2 = a pool of n threads owned by this weight.
    /// Results do not depend on it.
    ///
    /// Errors: [`Error::InvalidArgument`] for more than 1024 threads, [`Error::Internal`]
    /// if the pool cannot be created.
    pub fn set_threads(&mut self, threads: usize) -> Result<()> {
        if threads > 1024 {
            return Err(Error::InvalidArgument(format!(
                "{threads} threads (at most 1024)"
            )));
        }
        self.pool = if threads >= 2 {
            Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .map_err(|e| Error::Internal(format!("thread pool: {e}")))?,
            ))
        } else {
            None
        };
        self.threads = threads;
        Ok(())
    }

    /// Chooses the activation profile (docs/linear.md, "Activation profiles"): with
    /// [`Activation::Q8_1`] every row of x is quantized to q8_1 blocks and the product is
    /// that of the weight values with x̂ (criterion `linear_f32acc_v1` with x̂ for x).
    /// Defaults: gguf_* → Q8_1 (their only profile), every other format → Exact.
    ///
    /// Errors (the setting is unchanged on error): [`Error::Unsupported`] for Exact on a
    /// gguf_* weight (the spec's GGUF product quantizes x to q8_1) or Q8_1 on a format
    /// without it ([`supported_activation`]); [`Error::BadShape`] for Q8_1 when K is not a
    /// multiple of 32.
    pub fn set_activation(&mut self, activation: Activation) -> Result<()> {
        let (format, layout) = (self.view.format(), self.view.layout());
        let path = match (activation, path_for(&self.view)?) {
            (Activation::Q8_1, p @ (Path::Gguf(_) | Path::GgufDecoded)) => p,
            (Activation::Exact, Path::Gguf(_) | Path::GgufDecoded) => {
                return Err(Error::Unsupported(format!(
                    "linear: {format} has no exact-activation profile (spec, paragraph after \
                     §3.4: a GGUF product quantizes x to q8_1 blocks)"
                )));
            }
            (Activation::Q8_1, p @ (Path::RowSplit(_) | Path::Nvfp4)) => {
                if self.cols() % q8_1::QK8_1 != 0 {
                    return Err(Error::BadShape(format!(
                        "linear: q8_1 activations need K a multiple of 32 (K = {})",
                        self.cols()
                    )));
                }
                match p {
                    Path::RowSplit(kind) => Path::GroupedQ8(kind),
                    _ => Path::Nvfp4Q8,
                }
            }
            (Activation::Q8_1, _) => {
                return Err(Error::Unsupported(format!(
                    "linear: no q8_1-activation kernel for {format} in {layout} in this build"
                )));
            }
            (Activation::Exact, p) => p,
        };
        self.path = path;
        self.activation = activation;
        Ok(())
    }

    /// The activation profile (see [`set_activation`](Self::set_activation)).
    pub fn activation(&self) -> Activation {
        self.activation
    }

    /// The thread setting (see [`set_threads`](Self::set_threads)).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// `y = x · Wᵀ (+ bias)` for `m` rows: `x` holds m × k values of `x_dtype`
    /// (native-endian, no alignment required), `y` receives m × N values of `y_dtype`
    /// (f32 or bf16, round-to-nearest-even from the f32 result), `bias` (optional) N f32.
    /// Longer buffers are accepted; only their first elements are used. `m = 0` does
    /// nothing.
    ///
    /// Errors (nothing is written on error): [`Error::BadShape`] when `k` is not the
    /// weight's K, [`Error::Unsupported`] for f16 outputs, [`Error::BufferTooSmall`] for a
    /// short x, y or bias, [`Error::Overflow`], and a decoder's error for a weight decoded
    /// row by row.
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
        self.check_shapes(m, k, bias)?;
        if y_dtype == Dtype::F16 {
            return Err(Error::Unsupported(
                "linear: f16 outputs (use f32 or bf16)".into(),
            ));
        }
        let x_bytes = mul(mul(m, k, "M × K")?, x_dtype.size(), "x bytes")?;
        if x.len() < x_bytes {
            return Err(Error::BufferTooSmall {
                what: "x",
                needed: x_bytes,
                actual: x.len(),
            });
        }
        let y_bytes = mul(mul(m, n, "M × N")?, y_dtype.size(), "y bytes")?;
        if y.len() < y_bytes {
            return Err(Error::BufferTooSmall {
                what: "y",
                needed: y_bytes,
                actual: y.len(),
            });
        }
        if m == 0 {
            return Ok(());
        }
        let xf = to_f32(&x[..x_bytes], x_dtype);
        let yt = self.compute(&xf, m)?;
        let y = &mut y[..y_bytes];
        match y_dtype {
            Dtype::F32 => {
                for (i, o) in y.chunks_exact_mut(4).enumerate() {
                    let v = output(&yt, bias, m, i / n, i % n);
                    o.copy_from_slice(&v.to_ne_bytes());
                }
            }
            _ => {
                for (i, o) in y.chunks_exact_mut(2).enumerate() {
                    let v = output(&yt, bias, m, i / n, i % n);
                    o.copy_from_slice(&half::bf16::from_f32(v).to_bits().to_ne_bytes());
                }
            }
        }
        Ok(())
    }

    /// [`forward`](Self::forward) for f32 x and y (x: m × K, y: m × N).
    pub fn forward_f32(
        &self,
        x: &[f32],
        m: usize,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) -> Result<()> {
        let (n, k) = (self.rows(), self.cols());
        self.check_shapes(m, k, bias)?;
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
        if m == 0 {
            return Ok(());
        }
        let yt = self.compute(&x[..xl], m)?;
        for (i, o) in y[..yl].iter_mut().enumerate() {
            *o = output(&yt, bias, m, i / n, i % n);
        }
        Ok(())
    }

    fn check_shapes(&self, _m: usize, k: usize, bias: Option<&[f32]>) -> Result<()> {
        if k != self.cols() {
            return Err(Error::BadShape(format!(
                "linear: x has K = {k} but the weight has K = {}",
                self.cols()
            )));
        }
        if let Some(b) = bias {
            if b.len() < self.rows() {
                return Err(Error::BufferTooSmall {
                    what: "bias",
                    needed: self.rows(),
                    actual: b.len(),
                });
            }
        }
        Ok(())
    }

    /// The products as an N × M (row of W major) array.
    fn compute(&self, x: &[f32], m: usize) -> Result<Vec<f32>> {
        let (n, k) = (self.rows(), self.cols());
        let mut yt = vec![0f32; mul(n, m, "N × M")?];
        let q = match self.path {
            Path::Gguf(kind) => Some(cpu::gguf::prepare(
                self.isa,
                kind,
                q8_1::Rows::quantize(x, m, k),
            )),
            Path::GgufDecoded => Some(q8_1::Rows::quantize(x, m, k)),
            Path::GroupedQ8(kind) => Some(cpu::grouped_q8::prepare(
                self.isa,
                kind,
                q8_1::Rows::quantize(x, m, k),
            )),
            Path::Nvfp4Q8 => Some(cpu::nvfp4_q8::prepare(
                self.isa,
                q8_1::Rows::quantize(x, m, k),
            )),
            _ => None,
        };
        let xhat = match (self.path, &q) {
            (Path::GgufDecoded, Some(q)) => Some(q.dequantized()),
            _ => None,
        };
        let qrows: Vec<q8_1::Row<'_>> = q
            .as_ref()
            .map_or(Vec::new(), |q| (0..m).map(|i| q.row(i)).collect());
        let xf: &[f32] = xhat.as_deref().unwrap_or(x);
        // Which activation rows may meet fp8 / nvfp4 rows in the scaled order (once per
        // forward).
        let xok: Vec<bool> = match self.path {
            Path::Fp8Row => xf.chunks(k).map(cpu::float::fp8_scaled_x).collect(),
            Path::Nvfp4 => xf.chunks(k).map(cpu::float::nvfp4_scaled_x).collect(),
            _ => Vec::new(),
        };

        // Chunks of whole W rows; each output is computed entirely inside one chunk, so the
        // partition (and the thread count) never changes a bit.
        let per_thread = match self.threads {
            0 => rayon::current_num_threads(),
            t => t,
        };
        let rows_per_chunk = n
            .div_ceil(per_thread * 8)
            .clamp(1, 64)
            .next_multiple_of(FLOAT_GROUP);
        // Weight rows per kernel call: the float kernels run up to 8 rows side by side at
        // M = 1 (eight independent accumulator chains), the GGUF ones 4.
        let group = match self.path {
            Path::Gguf(_) | Path::GroupedQ8(_) | Path::Nvfp4Q8 => ROW_GROUP,
            _ => FLOAT_GROUP,
        };
        let work = |(ci, out): (usize, &mut [f32])| -> Result<()> {
            let mut scratch = [Vec::new(), Vec::new()];
            let first = ci * rows_per_chunk;
            // nvfp4 (exact profile): the chunk's scale words in block order, gathered once
            // (tile by tile, not row by row: a row's words are 512 bytes apart).
            let mut words = Vec::new();
            let nkb = match self.path {
                Path::Nvfp4 => {
                    let nkb = k / crate::layouts::block_scale::BLOCK;
                    words.resize(out.len() / m * nkb, 0);
                    nvfp4_rows_words(&self.view, first, nkb, &mut words);
                    nkb
                }
                _ => 0,
            };
            for (g, o) in out.chunks_mut(group * m).enumerate() {
                let w = words
                    .get(g * group * nkb..(g * group + o.len() / m) * nkb)
                    .unwrap_or(&[]);
                self.row_group(first + g * group, xf, m, &qrows, &xok, o, &mut scratch, w)?;
            }
            Ok(())
        };
        let chunks = yt.chunks_mut(rows_per_chunk * m).enumerate();
        match (self.threads, &self.pool) {
            (1, _) => chunks.into_iter().try_for_each(work)?,
            (_, Some(pool)) => pool.install(|| {
                yt.par_chunks_mut(rows_per_chunk * m)
                    .enumerate()
                    .try_for_each(work)
            })?,
            _ => yt
                .par_chunks_mut(rows_per_chunk * m)
                .enumerate()
                .try_for_each(work)?,
        }
        Ok(yt)
    }

    /// Output rows `r0 .. r0 + out.len() / m` of W against every activation row (`out` is
    /// row of W major). `scratch` holds reused buffers; `words` the rows' nvfp4 scale
    /// words in block order (nvfp4 paths only).
    #[allow(clippy::too_many_arguments)]
    fn row_group(
        &self,
        r0: usize,
        x: &[f32],
        m: usize,
        q: &[q8_1::Row<'_>],
        xok: &[bool],
        out: &mut [f32],
        scratch: &mut [Vec<f32>; 2],
        words: &[u8],
    ) -> Result<()> {
        let v = &self.view;
        let [scratch, values] = scratch;
        let count = out.len() / m;
        let bytes = |i: usize| v.row_bytes(0, r0 + i);
        match self.path {
            Path::Bf16 | Path::Fp32 => {
                let mut ws = [WRow::F32(&[]); FLOAT_GROUP];
                for (i, wr) in ws.iter_mut().enumerate().take(count) {
                    *wr = match self.path {
                        Path::Bf16 => WRow::Bf16Le(bytes(i)),
                        _ => WRow::F32Le(bytes(i)),
                    };
                }
                self.float_rows(&ws[..count], x, m, out, values)
            }
            Path::Fp8Row => {
                let (mut scaled, mut plain) =
                    ([WRow::F32(&[]); FLOAT_GROUP], [WRow::F32(&[]); FLOAT_GROUP]);
                for i in 0..count {
                    let (word, codes) = layouts::fp8_row::row_parts(v, r0 + i);
                    let codes = &codes[..v.cols()];
                    let scale = crate::formats::fp8_row::scale_value(v.format(), word);
                    plain[i] = WRow::Fp8 { codes, scale };
                    scaled[i] = if cpu::float::fp8_scaled_row(scale) {
                        WRow::Fp8Scaled {
                            codes,
                            factor: 256.0 * scale,
                        }
                    } else {
                        plain[i]
                    };
                }
                self.scaled_rows(&scaled[..count], &plain[..count], x, m, xok, out, values);
            }
            Path::RowSplit(kind) => {
                // The logical groups' binary16 scales as f32 (exact), once per row.
                let k = v.cols();
                let ng = k.div_ceil(kind.group());
                scratch.resize(count * ng, 0.0);
                for (i, sf) in scratch.chunks_exact_mut(ng).enumerate() {
                    cpu::float::f16_words_to_f32(self.isa, v.row_bytes(2, r0 + i), sf);
                }
                let mut ws = [WRow::F32(&[]); FLOAT_GROUP];
                for (i, (wr, sf)) in ws.iter_mut().zip(scratch.chunks_exact(ng)).enumerate() {
                    *wr = WRow::Grouped {
                        kind,
                        lo: bytes(i),
                        hi: v.row_bytes(1, r0 + i),
                        sf,
                        k,
                    };
                }
                self.float_rows(&ws[..count], x, m, out, values)
            }
            Path::Nvfp4 => {
                let nkb = v.cols() / crate::layouts::block_scale::BLOCK;
                scratch.resize(count * nkb, 0.0);
                cpu::float::e4m3fn_to_f32(self.isa, words, scratch);
                let (mut scaled, mut plain) =
                    ([WRow::F32(&[]); FLOAT_GROUP], [WRow::F32(&[]); FLOAT_GROUP]);
                for (i, sf) in scratch.chunks_exact(nkb).enumerate() {
                    let d = nvfp4_row_divisor(v, r0 + i);
                    let codes = bytes(i);
                    plain[i] = WRow::Nvfp4 { codes, sf, d };
                    scaled[i] = if cpu::float::nvfp4_scaled_row(d) {
                        WRow::Nvfp4Scaled { codes, sf, d }
                    } else {
                        plain[i]
                    };
                }
                self.scaled_rows(&scaled[..count], &plain[..count], x, m, xok, out, values);
            }
            Path::Nvfp4Q8 => {
                // The kernel reads each row's scale words in place: 4 contiguous words per
                // tile of the swizzled plane, tiles TILE_BYTES apart.
                let nkb = v.cols() / crate::layouts::block_scale::BLOCK;
                let empty = cpu::nvfp4_q8::NRow {
                    codes: &[],
                    scales: &[],
                    d: 0.0,
                };
                let mut ws = [empty; ROW_GROUP];
                for (i, wr) in ws.iter_mut().enumerate().take(count) {
                    let at = crate::layouts::block_scale::offset(r0 + i, 0, nkb);
                    *wr = cpu::nvfp4_q8::NRow {
                        codes: bytes(i),
                        scales: &v.plane(1)[at..],
                        d: nvfp4_row_divisor(v, r0 + i),
                    };
                }
                cpu::nvfp4_q8::dot_row_group(self.isa, &ws[..count], q, out);
            }
            Path::Gguf(kind) => {
                let mut ws: [&[u8]; ROW_GROUP] = [&[]; ROW_GROUP];
                for (i, w) in ws.iter_mut().enumerate().take(count) {
                    *w = bytes(i);
                }
                cpu::gguf::dot_row_group(self.isa, kind, &ws[..count], q, out);
            }
            Path::GroupedQ8(kind) => {
                let empty = cpu::grouped_q8::GRow {
                    codes: &[],
                    hi: &[],
                    scales: &[],
                };
                let mut ws = [empty; ROW_GROUP];
                for (i, w) in ws.iter_mut().enumerate().take(count) {
                    *w = cpu::grouped_q8::GRow {
                        codes: bytes(i),
                        hi: v.row_bytes(1, r0 + i),
                        scales: v.row_bytes(2, r0 + i),
                    };
                }
                cpu::grouped_q8::dot_row_group(self.isa, kind, &ws[..count], q, out);
            }
            Path::GgufDecoded | Path::Decoded => {
                let k = v.cols();
                scratch.resize(count * k, 0.0);
                for (i, d) in scratch.chunks_exact_mut(k).enumerate() {
                    decode::decode_row(v, (r0 + i) as u64, d)?;
                }
                let mut ws = [WRow::F32(&[]); FLOAT_GROUP];
                for (wr, d) in ws.iter_mut().zip(scratch.chunks_exact(k)) {
                    *wr = WRow::F32(d);
                }
                cpu::float::dot_rows(self.isa, &ws[..count], x, m, out)
            }
        }
        Ok(())
    }

    /// fp8 / nvfp4 rows against every activation row: output (i, r) runs in the scaled
    /// order (`scaled[i]`, where row i allows it) when activation row r allows it
    /// (`xok[r]`, cpu::float docs), else in the plain order (`plain[i]`): fixed per output,
    /// whatever the batch around it. A batch mixing both kinds of activation rows computes
    /// the group both ways and picks per row.
    #[allow(clippy::too_many_arguments)]
    fn scaled_rows(
        &self,
        scaled: &[WRow<'_>],
        plain: &[WRow<'_>],
        x: &[f32],
        m: usize,
        xok: &[bool],
        out: &mut [f32],
        values: &mut Vec<f32>,
    ) {
        let (all, any) = (xok.iter().all(|&o| o), xok.iter().any(|&o| o));
        self.runs(if any { scaled } else { plain }, x, m, out, values);
        if any && !all {
            let mut other = vec![0f32; out.len()];
            self.runs(plain, x, m, &mut other, values);
            for (i, o) in out.iter_mut().enumerate() {
                if !xok[i % m] {
                    *o = other[i];
                }
            }
        }
    }

    /// [`Self::float_rows`] over runs of consecutive rows of one kind.
    fn runs(&self, ws: &[WRow<'_>], x: &[f32], m: usize, out: &mut [f32], values: &mut Vec<f32>) {
        let mut start = 0;
        while start < ws.len() {
            let kind = std::mem::discriminant(&ws[start]);
            let end = (start..ws.len())
                .find(|&i| std::mem::discriminant(&ws[i]) != kind)
                .unwrap_or(ws.len());
            self.float_rows(&ws[start..end], x, m, &mut out[start * m..end * m], values);
            start = end;
        }
    }

    /// The f32 kernel over weight rows read in place. With many activation rows, rows
    /// whose words take real work to turn into values (q4/q8 codes, E4M3FN, E2M1) are
    /// first materialized once into `values`, then reused by every activation tile: the
    /// values and the evaluation order are the same, so are the bits.
    fn float_rows(
        &self,
        ws: &[WRow<'_>],
        x: &[f32],
        m: usize,
        out: &mut [f32],
        values: &mut Vec<f32>,
    ) {
        let cheap = matches!(
            ws.first(),
            Some(WRow::Bf16Le(_) | WRow::F32Le(_) | WRow::F32(_))
        );
        if cheap || m < MATERIALIZE_M {
            return cpu::float::dot_rows(self.isa, ws, x, m, out);
        }
        let k = self.cols();
        values.resize(ws.len() * k, 0.0);
        for (w, vals) in ws.iter().zip(values.chunks_exact_mut(k)) {
            cpu::float::materialize(self.isa, w, vals);
        }
        let mut fs = [WRow::F32(&[]); FLOAT_GROUP];
        for (f, vals) in fs.iter_mut().zip(values.chunks_exact(k)) {
            *f = WRow::F32(vals);
        }
        cpu::float::dot_rows(self.isa, &fs[..ws.len()], x, m, out);
        for (w, o) in ws.iter().zip(out.chunks_exact_mut(m)) {
            o.iter_mut().for_each(|y| *y = w.finish(*y));
        }
    }
}

/// The nvfp4 block scale words of rows `first .. first + out.len() / nkb` in block order
/// (`out` = rows × nkb), gathered from the swizzled scale plane tile by tile: row m's 4
/// words of a 128×4 tile are contiguous, and consecutive rows are 16 bytes apart, so one
/// pass over each tile serves all the rows it holds.
fn nvfp4_rows_words(v: &WeightView<'_>, first: usize, nkb: usize, out: &mut [u8]) {
    use crate::layouts::block_scale::{TILE_BLOCKS, offset};
    let scales = v.plane(1);
    let rows = out.len() / nkb;
    for kb in (0..nkb).step_by(TILE_BLOCKS) {
        let nw = TILE_BLOCKS.min(nkb - kb);
        for (i, o) in out.chunks_exact_mut(nkb).enumerate().take(rows) {
            let at = offset(first + i, kb, nkb);
            if nw == TILE_BLOCKS {
                // A fixed-size copy (one 32-bit move, not a memmove call).
                let o: &mut [u8; TILE_BLOCKS] =
                    (&mut o[kb..kb + TILE_BLOCKS]).try_into().expect("4 words");
                *o = scales[at..at + TILE_BLOCKS].try_into().expect("4 words");
            } else {
                o[kb..kb + nw].copy_from_slice(&scales[at..at + nw]);
            }
        }
    }
}

/// Row `r`'s nvfp4 divisor d_w (that of its stacked source).
fn nvfp4_row_divisor(v: &WeightView<'_>, r: usize) -> f32 {
    let src = r / crate::formats::nvfp4::rows_per_source(v);
    let d = &v.plane(crate::layouts::block_scale::DIVISORS_PLANE)[4 * src..4 * src + 4];
    f32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// Weight rows computed together (the float kernels' tile height).
const ROW_GROUP: usize = 4;

/// Weight rows per call of the f32-activation kernels (a multiple of [`ROW_GROUP`]).
const FLOAT_GROUP: usize = 8;

/// From this many activation rows on, in-place rows are materialized once per row group.
const MATERIALIZE_M: usize = 2;

/// y[mi, ni] from the N × M products, plus the bias (one f32 addition).
#[inline]
fn output(yt: &[f32], bias: Option<&[f32]>, m: usize, mi: usize, ni: usize) -> f32 {
    let v = yt[ni * m + mi];
    match bias {
        Some(b) => v + b[ni],
        None => v,
    }
}

/// Native-endian words of `dtype` to f32 (exact).
fn to_f32(x: &[u8], dtype: Dtype) -> Vec<f32> {
    match dtype {
        Dtype::F32 => x
            .chunks_exact(4)
            .map(|w| f32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
            .collect(),
        Dtype::Bf16 => x
            .chunks_exact(2)
            .map(|w| f32::from_bits((u16::from_ne_bytes([w[0], w[1]]) as u32) << 16))
            .collect(),
        Dtype::F16 => x
            .chunks_exact(2)
            .map(|w| half::f16::from_bits(u16::from_ne_bytes([w[0], w[1]])).to_f32())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weight(format: Format, n: usize, k: usize) -> Vec<u8> {
        let info = format.info();
        let bytes = n * k / info.block_values as usize * info.block_bytes as usize;
        let mut w: Vec<u8> = (0..bytes).map(|i| (i * 131 % 251) as u8).collect();
        match format {
            Format::Bf16 => {
                for c in w.chunks_exact_mut(2) {
                    c[1] = 0x3C | (c[1] & 0x81); // finite, moderate exponents
                }
            }
            _ => {
                for b in w.chunks_exact_mut(info.block_bytes as usize) {
                    let at = if format == Format::GgufQ6_K { 208 } else { 0 };
                    b[at..at + 2]
                        .copy_from_slice(&half::f16::from_f32(0.01).to_bits().to_le_bytes());
                    if format == Format::GgufQ4_K {
                        b[2..4]
                            .copy_from_slice(&half::f16::from_f32(0.003).to_bits().to_le_bytes());
                    }
                }
            }
        }
        w
    }

    /// The generic decoded path (how formats without a dedicated kernel run) on formats
    /// that also have one: bf16 through decode_row gives the bf16 kernel's bits (same
    /// order, exact decode); GGUF through decode_row + x̂ stays within twice the criterion
    /// of the dedicated vec_dot.
    #[test]
    fn decoded_paths_agree_with_dedicated_kernels() {
        let (n, k, m) = (7, 512, 3);
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 250.0)
            .collect();
        for format in [
            Format::Bf16,
            Format::GgufQ8_0,
            Format::GgufQ4_K,
            Format::GgufQ6_K,
        ] {
            let wb = weight(format, n, k);
            let view = WeightView::single(format, n, k, &wb).unwrap();
            let mut w = PreparedWeight::new(view).unwrap();
            let mut y = vec![0f32; m * n];
            w.forward_f32(&x, m, None, &mut y).unwrap();
            w.path = if format == Format::Bf16 {
                Path::Decoded
            } else {
                Path::GgufDecoded
            };
            for isa in [Isa::Scalar, Isa::detect()] {
                w.set_isa(isa).unwrap();
                let mut yd = vec![0f32; m * n];
                w.forward_f32(&x, m, None, &mut yd).unwrap();
                if format == Format::Bf16 {
                    assert_eq!(
                        y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        yd.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                    );
                } else {
                    let q = q8_1::Rows::quantize(&x, m, k).dequantized();
                    let mut wd = vec![0f32; k];
                    for r in 0..n {
                        decode::decode_row(&view, r as u64, &mut wd).unwrap();
                        for i in 0..m {
                            let s: f64 = (0..k)
                                .map(|j| (wd[j] as f64 * q[i * k + j] as f64).abs())
                                .sum();
                            let tol = 2.0 * tolerance(k, s, 0.0, Dtype::F32);
                            let (a, b) = (y[i * n + r], yd[i * n + r]);
                            assert!(((a - b) as f64).abs() <= tol, "{format}: {a} vs {b}");
                        }
                    }
                }
            }
        }
    }

    /// Planes of a row_split_k128_v1 weight from logical codes (N × K) and scale words
    /// (N × ceil(K/G)), packed by the layout codec without validation (so invalid words can
    /// be tested too).
    fn row_split_planes(
        format: Format,
        n: usize,
        k: usize,
        codes: &[i8],
        scales: &[u16],
    ) -> Vec<Vec<u8>> {
        let s = crate::formats::grouped::Scheme::of(format).unwrap();
        let per = layouts::row_split::row_plane_bytes(format, k).unwrap();
        let kp = layouts::row_split::padded_k(k).unwrap();
        let ng = k.div_ceil(s.group);
        let mut p: Vec<Vec<u8>> = per.iter().map(|&l| vec![0u8; l * n]).collect();
        let mut padded = vec![0i8; kp];
        for r in 0..n {
            let [a, b, c] = &mut p[..] else {
                unreachable!()
            };
            layouts::row_split::pack_row(
                &s,
                &codes[r * k..(r + 1) * k],
                &scales[r * ng..(r + 1) * ng],
                &mut padded,
                [
                    &mut a[r * per[0]..(r + 1) * per[0]],
                    &mut b[r * per[1]..(r + 1) * per[1]],
                    &mut c[r * per[2]..(r + 1) * per[2]],
                ],
            );
        }
        p
    }

    const GROUPED: [Format; 6] = [
        Format::Q2_G64Fp16,
        Format::T2_G128Fp16,
        Format::Q4_G64Fp16,
        Format::Q5_G64Fp16,
        Format::Q6_G64Fp16,
        Format::Q8_G32Fp16,
    ];

    /// Outputs (bits) of `w` for x on both instruction sets, M = `m` and each row alone.
    fn grouped_runs(w: &mut PreparedWeight<'_>, x: &[f32], m: usize) -> Vec<Vec<u32>> {
        let (n, k) = (w.rows(), w.cols());
        let mut results = Vec::new();
        for isa in [Isa::Scalar, Isa::detect()] {
            w.set_isa(isa).unwrap();
            let mut y = vec![0f32; m * n];
            w.forward_f32(x, m, None, &mut y).unwrap();
            results.push(y.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            // Each activation row alone (the M = 1 kernel, no materialization).
            let mut single = Vec::new();
            for r in 0..m {
                let mut y1 = vec![0f32; n];
                w.forward_f32(&x[r * k..(r + 1) * k], 1, None, &mut y1)
                    .unwrap();
                single.extend(y1.iter().map(|v| v.to_bits()));
            }
            results.push(single);
        }
        results
    }

    /// The in-place grouped kernels (q2, t2, q4, q5, q6, q8) give the decoded path's bits on
    /// valid payloads (same values, same order): every code word, K with a partial last
    /// group, K % 32 ≠ 0 (scalar tail after the 32-value steps), several groups, N not a
    /// multiple of 4; extreme scales (±65504, the subnormal 2⁻²⁴, negative, q2's −0).
    #[test]
    fn row_split_kernels_match_the_decoded_path_bitwise() {
        for format in GROUPED {
            for k in [8, 40, 200, 256, 1029] {
                let (n, m) = (7, 5);
                let info = format.info();
                let span = (info.code_max - info.code_min + 1) as usize;
                let codes: Vec<i8> = (0..n * k)
                    .map(|i| (info.code_min + ((i * 7919 + 13) % span) as i64) as i8)
                    .collect();
                let g = info.block_values as usize;
                let specials = [0x7BFFu16, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x0400];
                let scales: Vec<u16> = (0..n * k.div_ceil(g))
                    .map(|i| match i % 5 {
                        0 => specials[(i / 5) % specials.len()],
                        1 if format == Format::Q2_G64Fp16 => 0x8000,
                        _ => half::f16::from_f32(
                            0.003 * (1 + i % 11) as f32 * if i % 3 == 0 { -1.0 } else { 1.0 },
                        )
                        .to_bits(),
                    })
                    .collect();
                let p = row_split_planes(format, n, k, &codes, &scales);
                let view =
                    WeightView::new(format, Layout::RowSplitK128_V1, n, k, [&p[0], &p[1], &p[2]])
                        .unwrap();
                let x: Vec<f32> = (0..m * k)
                    .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
                    .collect();
                let mut w = PreparedWeight::new(view).unwrap();
                assert!(matches!(w.path, Path::RowSplit(_)));
                let mut results = grouped_runs(&mut w, &x, m);
                w.path = Path::Decoded;
                results.extend(grouped_runs(&mut w, &x, m));
                assert!(results.windows(2).all(|r| r[0] == r[1]), "{format} K={k}");
            }
        }
    }

    /// Words outside the valid language (Inf / NaN scales, q8's −128, t2's −2, non-zero
    /// padding codes) are computed with their arithmetic meaning, identically on every path
    /// (scalar, AVX2, batched, single row); padding never reaches the result.
    #[test]
    fn row_split_kernels_agree_on_invalid_words() {
        for format in GROUPED {
            let (n, k, m) = (6, 200, 4);
            let info = format.info();
            let g = info.block_values as usize;
            let span = 1usize << info.code_bits;
            let scheme = crate::formats::grouped::Scheme::of(format).unwrap();
            let codes: Vec<i8> = (0..n * k)
                .map(|i| scheme.code_from_word(((i * 37 + 3) % span) as u8))
                .collect();
            let scales: Vec<u16> = (0..n * k.div_ceil(g))
                .map(|i| match i % 7 {
                    0 if i / 7 % 3 == 1 => 0x7C00,
                    0 if i / 7 % 3 == 2 => 0xFE01,
                    _ => half::f16::from_f32(0.01 * (i % 5) as f32 - 0.02).to_bits(),
                })
                .collect();
            let mut p = row_split_planes(format, n, k, &codes, &scales);
            // Non-zero padding codes and scales: outside the logical tensor, never read as
            // values (x has no element there).
            let per = layouts::row_split::row_plane_bytes(format, k).unwrap();
            for r in 0..n {
                let last = &mut p[0][r * per[0]..(r + 1) * per[0]];
                *last.last_mut().unwrap() = 0xFF;
                let sc = &mut p[2][r * per[2]..(r + 1) * per[2]];
                let at = sc.len() - 2;
                if at >= 2 * k.div_ceil(g) {
                    sc[at..].copy_from_slice(&0x7E00u16.to_le_bytes());
                }
            }
            let view =
                WeightView::new(format, Layout::RowSplitK128_V1, n, k, [&p[0], &p[1], &p[2]])
                    .unwrap();
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
                .collect();
            let mut w = PreparedWeight::new(view).unwrap();
            let results = grouped_runs(&mut w, &x, m);
            // Where several NaNs meet (a NaN word, Inf − Inf), which one an fma passes on
            // depends on its operand order, an instruction-selection detail: NaN outputs
            // are compared as NaN, every other output bit for bit.
            let canon = |r: &Vec<u32>| -> Vec<u32> {
                r.iter()
                    .map(|&b| {
                        if f32::from_bits(b).is_nan() {
                            0x7FC0_0000
                        } else {
                            b
                        }
                    })
                    .collect()
            };
            let results: Vec<Vec<u32>> = results.iter().map(canon).collect();
            assert!(results.windows(2).all(|r| r[0] == r[1]), "{format}");
            // Rows whose groups are all finite give finite outputs; a NaN or Inf scale
            // gives NaN (codes of both signs meet x of both signs) or ±Inf.
            let ng = k.div_ceil(g);
            for r in 0..n {
                let finite = scales[r * ng..(r + 1) * ng]
                    .iter()
                    .all(|s| s & 0x7C00 != 0x7C00);
                for i in 0..m {
                    let y = f32::from_bits(results[0][i * n + r]);
                    assert_eq!(y.is_finite(), finite, "{format} row {r}: {y}");
                }
            }
        }
    }

    /// fp8 outputs (bits) written plainly from cpu::float's two orders, independently of
    /// the kernels and of their condition functions: y[r·n + i] for weight row i and
    /// activation row r.
    fn fp8_plain(view: &WeightView<'_>, x: &[f32], m: usize) -> Vec<u32> {
        let (n, k) = (view.rows(), view.cols());
        let mut y = vec![0u32; m * n];
        for i in 0..n {
            let (word, codes) = layouts::fp8_row::row_parts(view, i);
            let s = crate::formats::fp8_row::scale_value(view.format(), word);
            for r in 0..m {
                let xr = &x[r * k..(r + 1) * k];
                let max = xr.iter().fold(0f64, |a, v| a.max(v.abs() as f64));
                let scaled = (s.abs() as f64) < 2f64.powi(119)
                    && xr.iter().all(|v| v.is_finite())
                    && xr
                        .iter()
                        .all(|&v| v == 0.0 || v.abs() as f64 >= 2f64.powi(-109))
                    && k as f64 * max <= 2f64.powi(126);
                let mut acc = [0f32; 8];
                for j in 0..k {
                    let v = crate::words::e4m3fn::decode(codes[j]);
                    let w = if scaled { v / 256.0 } else { v * s };
                    acc[j % 8] = w.mul_add(xr[j], acc[j % 8]);
                }
                let t = cpu::tree8(acc);
                y[r * n + i] = if scaled { t * (256.0 * s) } else { t }.to_bits();
            }
        }
        y
    }

    /// The in-place fp8 row kernel gives the bits of its order written plainly (scalar and
    /// AVX2, batched and single rows), both layouts.
    #[test]
    fn fp8_row_kernel_matches_its_order_written_plainly() {
        for (format, k) in [
            (Format::Fp8E4m3fnRowBf16, 77),
            (Format::Fp8E4m3fnRowFp16, 301),
        ] {
            let (n, m) = (5, 3);
            let layout = format.info().layout;
            let sizes = layouts::plane_sizes(format, layout, n, k).unwrap();
            let mut p: Vec<Vec<u8>> = sizes
                .iter()
                .map(|&l| (0..l).map(|i| ((i * 7919 + 11) % 251) as u8).collect())
                .collect();
            let code = |c: &mut u8| {
                if *c & 0x7F == 0x7F {
                    *c ^= 1
                }
            };
            if layout == Layout::RowScaleV1 {
                p[0].iter_mut().for_each(code);
                for (i, s) in p[1].chunks_exact_mut(2).enumerate() {
                    let v = half::bf16::from_f32(0.002 * (i + 1) as f32);
                    s.copy_from_slice(&v.to_bits().to_le_bytes());
                }
            } else {
                let stride = p[0].len() / n;
                for (i, rec) in p[0].chunks_exact_mut(stride).enumerate() {
                    let v = half::f16::from_f32(0.002 * (i + 1) as f32);
                    rec[..2].copy_from_slice(&v.to_bits().to_le_bytes());
                    rec[2..2 + k].iter_mut().for_each(code);
                    rec[2 + k..].iter_mut().for_each(|b| *b = 0);
                }
            }
            let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
                .collect();
            let mut w = PreparedWeight::new(view).unwrap();
            assert_eq!(w.path, Path::Fp8Row);
            let run = |w: &PreparedWeight<'_>| {
                let mut y = vec![0f32; m * n];
                w.forward_f32(&x, m, None, &mut y).unwrap();
                y.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            };
            let mut results = grouped_runs(&mut w, &x, m);
            for isa in [Isa::Scalar, Isa::detect()] {
                w.set_isa(isa).unwrap();
                results.push(run(&w));
            }
            let plain = fp8_plain(&view, &x, m);
            assert!(results.iter().all(|r| *r == plain), "{format} K={k}");
        }
    }

    /// nvfp4 outputs (bits) written plainly from cpu::float's two orders (the scaled one
    /// unless `plain`), independently of the kernels and their condition functions:
    /// y[r·n + i] for weight row i and activation row r.
    fn nvfp4_plain(view: &WeightView<'_>, x: &[f32], m: usize, plain: bool) -> Vec<u32> {
        let (n, k) = (view.rows(), view.cols());
        let nkb = k / 16;
        let per = crate::formats::nvfp4::rows_per_source(view);
        let mut y = vec![0u32; m * n];
        for i in 0..n {
            let codes = view.row_bytes(0, i);
            let sf: Vec<f32> = (0..nkb)
                .map(|b| {
                    let at = crate::layouts::block_scale::offset(i, b, nkb);
                    crate::words::e4m3fn::decode(view.plane(1)[at])
                })
                .collect();
            let dw = &view.plane(2)[4 * (i / per)..4 * (i / per) + 4];
            let d = f32::from_le_bytes([dw[0], dw[1], dw[2], dw[3]]);
            for r in 0..m {
                let xr = &x[r * k..(r + 1) * k];
                let max = xr.iter().fold(0f64, |a, v| a.max(v.abs() as f64));
                let scaled = !plain
                    && (2f64.powi(-115)..=2f64.powi(116)).contains(&(d.abs() as f64))
                    && xr.iter().all(|v| v.is_finite())
                    && xr
                        .iter()
                        .all(|&v| v == 0.0 || v.abs() as f64 >= 2f64.powi(-116))
                    && k as f64 * max <= 2f64.powi(116);
                let mut acc = [0f32; 8];
                for j in 0..k {
                    let c = codes[j / 2] >> (4 * (j % 2));
                    let mag = crate::words::e2m1::MAGNITUDES[(c & 7) as usize] * sf[j / 16];
                    let mag = if scaled { mag } else { mag / d };
                    let w = if c & 8 != 0 { -mag } else { mag };
                    acc[j % 8] = w.mul_add(xr[j], acc[j % 8]);
                }
                let t = cpu::tree8(acc);
                y[r * n + i] = if scaled { t / d } else { t }.to_bits();
            }
        }
        y
    }

    /// The in-place nvfp4 kernel gives the bits of its order written plainly (scalar and
    /// AVX2, batched and single rows), with two stacked sources (two divisors) and rows
    /// beyond one swizzle tile; where the plain order applies it is the decoded path's.
    #[test]
    fn nvfp4_kernel_matches_its_order_written_plainly() {
        let pow2 = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
        let (n, k, m) = (130, 80, 5);
        let layout = Layout::BlockScaleK16_M128x4_V1;
        // Divisor pairs (two stacked sources): moderate; 2¹¹⁶ / 2¹¹⁷ (either side of the
        // scaled order's bound; the smallest E4M3FN magnitudes divided by them are normal /
        // subnormal); tiny (quotients overflow to Inf); huge with 2⁻¹²⁶ (subnormal
        // quotients).
        for ds in [
            [0.75f32, 1.625],
            [pow2(116), pow2(117)],
            [f32::from_bits(1 << 9), 1e-30], // 2⁻¹⁴⁰ (subnormal)
            [3e38, pow2(-126)],
        ] {
            let sizes = layouts::plane_sizes(Format::Nvfp4, layout, n, k).unwrap();
            let mut p: Vec<Vec<u8>> = sizes
                .iter()
                .map(|&l| (0..l).map(|i| ((i * 7919 + 5) % 253) as u8).collect())
                .collect();
            // Valid scales (sign clear, no NaN word), subnormal E4M3FN ones included.
            p[1].iter_mut().for_each(|s| *s &= 0x7E);
            p[2] = ds.iter().flat_map(|d| d.to_le_bytes()).collect();
            let view = WeightView::new(Format::Nvfp4, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
                .collect();
            let mut w = PreparedWeight::new(view).unwrap();
            assert_eq!(w.path, Path::Nvfp4);
            let results = grouped_runs(&mut w, &x, m);
            let want = nvfp4_plain(&view, &x, m, false);
            assert!(results.iter().all(|r| *r == want), "divisors {ds:?}");
            w.path = Path::Decoded;
            let results = grouped_runs(&mut w, &x, m);
            let want = nvfp4_plain(&view, &x, m, true);
            assert!(
                results.iter().all(|r| *r == want),
                "decoded, divisors {ds:?}"
            );
        }
    }

    /// The in-place fp8 kernel on E4M3FN NaN words (invalid, computed as NaN) and extreme
    /// row scales: the same bits on every path; valid rows also match the decoded path.
    #[test]
    fn fp8_row_kernel_agrees_on_nan_words_and_extreme_scales() {
        for format in [Format::Fp8E4m3fnRowBf16, Format::Fp8E4m3fnRowFp16] {
            let (n, k, m) = (6, 100, 5);
            let layout = format.info().layout;
            let sizes = layouts::plane_sizes(format, layout, n, k).unwrap();
            let mut p: Vec<Vec<u8>> = sizes.iter().map(|&l| vec![0u8; l]).collect();
            // Scales: the largest finite, the smallest subnormal, 1, 0.01 (bf16 / binary16).
            let scales: [u16; 6] = if format == Format::Fp8E4m3fnRowBf16 {
                [0x7F7F, 0x0001, 0x3F80, 0x3C24, 0x7F7F, 0x3F80]
            } else {
                [0x7BFF, 0x0001, 0x3C00, 0x211F, 0x7BFF, 0x3C00]
            };
            // Rows 4 and 5 hold a NaN word (one in the short-form chunk test, one in the tail).
            let code = |r: usize, j: usize| -> u8 {
                match (r, j) {
                    (4, 40) => 0x7F,
                    (5, 97) => 0xFF,
                    _ => {
                        let c = ((r * k + j) * 7919 % 256) as u8;
                        if c & 0x7F == 0x7F { c ^ 1 } else { c }
                    }
                }
            };
            if layout == Layout::RowScaleV1 {
                for r in 0..n {
                    for j in 0..k {
                        p[0][r * k + j] = code(r, j);
                    }
                    p[1][2 * r..2 * r + 2].copy_from_slice(&scales[r].to_le_bytes());
                }
            } else {
                let stride = p[0].len() / n;
                for (r, rec) in p[0].chunks_exact_mut(stride).enumerate() {
                    rec[..2].copy_from_slice(&scales[r].to_le_bytes());
                    for j in 0..k {
                        rec[2 + j] = code(r, j);
                    }
                }
            }
            let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
                .collect();
            let mut w = PreparedWeight::new(view).unwrap();
            assert_eq!(w.path, Path::Fp8Row);
            let results = grouped_runs(&mut w, &x, m);
            // Where several NaNs meet (a NaN word, Inf − Inf), which one an fma passes on
            // depends on its operand order, an instruction-selection detail: NaN outputs
            // are compared as NaN, every other output bit for bit.
            let canon = |r: &Vec<u32>| -> Vec<u32> {
                r.iter()
                    .map(|&b| {
                        if f32::from_bits(b).is_nan() {
                            0x7FC0_0000
                        } else {
                            b
                        }
                    })
                    .collect()
            };
            let results: Vec<Vec<u32>> = results.iter().map(canon).collect();
            assert!(results.windows(2).all(|r| r[0] == r[1]), "{format}");
            // Rows 4 and 5 hold a NaN word; rows 1..3 have small scales (finite outputs).
            for r in 1..n {
                for i in 0..m {
                    let y = f32::from_bits(results[0][i * n + r]);
                    assert_eq!(y.is_nan(), r >= 4, "{format} row {r}: {y}");
                    assert_eq!(y.is_finite(), r < 4, "{format} row {r}: {y}");
                }
            }
            // Every row against its order written plainly (the largest bf16 scale takes the
            // multiply-per-element order, the others the scaled one).
            assert_eq!(results[0], canon(&fp8_plain(&view, &x, m)), "{format}");
        }
    }
}
