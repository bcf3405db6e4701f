//! `linear`: y = x · Wᵀ with W in its persistent format (spec §2 "compute profile", §8).

use super::boundary::{bytes, call, check_out_ptr, in_slice, out_slice, req, write};
use super::view::{from_c, ninfer_weight_view};
use crate::dtype::Dtype;
use crate::error::{Error, Result, Status, to_usize};
use crate::linear::{self, Activation, Device, PreparedWeight};
use crate::registry::{Format, Layout, check_compatible};

/// `ninfer_linear_prepare`'s device: the host CPU.
#[allow(dead_code)] // exported to the header; Rust code uses `linear::Device`
pub const NINFER_DEVICE_CPU: u32 = 0;
/// `ninfer_linear_prepare`'s device: an NVIDIA GPU through CUDA (device 0; see
/// `ninfer_cuda_linear_prepare` for the others). Builds without CUDA support, and machines
/// without the NVIDIA driver or a GPU, answer `NINFER_STATUS_NO_DEVICE`.
#[allow(dead_code)] // exported to the header; Rust code uses `linear::Device`
pub const NINFER_DEVICE_CUDA: u32 = 1;

/// `ninfer_linear_set_activation`'s profile: x as given (the weight values times x); the
/// default of every non-GGUF format, unavailable for GGUF weights.
#[allow(dead_code)] // exported to the header; Rust code uses `linear::Activation`
pub const NINFER_ACTIVATION_EXACT: u32 = 0;
/// `ninfer_linear_set_activation`'s profile: each row of x quantized to ggml's q8_1
/// blocks (32 values, binary16 scale, int8 codes); the weight values times those values x̂.
/// The only profile of GGUF weights; opt-in for q2/t2/q4/q5/q6/q8 grouped formats and
/// nvfp4.
#[allow(dead_code)] // exported to the header; Rust code uses `linear::Activation`
pub const NINFER_ACTIVATION_Q8_1: u32 = 1;
/// `ninfer_linear_set_activation`'s profile: each row of x quantized to ggml's q8_K blocks
/// (256 values, binary32 scale d, int8 codes); the weight values times those values
/// x̂ = d·code. Opt-in for the GGUF k-quants (Q2_K..Q6_K) and the 256-value i-quants
/// (IQ4_XS, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S), on the CPU.
#[allow(dead_code)] // exported to the header; Rust code uses `linear::Activation`
pub const NINFER_ACTIVATION_Q8_K: u32 = 2;

/// A weight prepared for `ninfer_linear_forward` (opaque).
///
/// Ownership rules: a CPU handle **borrows** the plane buffers of the view it was prepared
/// from (zero-copy): they must stay valid and unmodified until `ninfer_linear_free`. A
/// CUDA handle from `ninfer_linear_prepare` / `ninfer_cuda_linear_prepare` owns a device
/// copy (the host planes may be freed after preparation); one from
/// `ninfer_cuda_linear_prepare_device` borrows the caller's device planes until
/// `ninfer_linear_free`. The view struct itself may be discarded after preparation. The handle
/// owns its settings and thread pool; `ninfer_linear_free` releases them, after which the
/// handle must not be used (as with `free`). `ninfer_linear_forward` and
/// `ninfer_linear_forward_rows` may be called on one handle from several threads at once;
/// `ninfer_linear_set_threads` and `ninfer_linear_set_activation` must not run concurrently
/// with any other call on the same handle.
pub struct ninfer_linear {
    pub(crate) weight: PreparedWeight<'static>,
}

impl ninfer_linear {
    /// Boxes `weight` into a new handle stored in `*out_handle`.
    ///
    /// # Safety
    /// `out_handle` non-NULL (alignment is checked).
    pub(crate) unsafe fn publish(
        weight: PreparedWeight<'static>,
        out_handle: *mut *mut ninfer_linear,
    ) -> crate::error::Result<()> {
        let h = Box::into_raw(Box::new(ninfer_linear { weight }));
        // SAFETY: non-NULL by the caller; alignment checked by `write`.
        unsafe { write(out_handle, h, "out_handle") }.inspect_err(|_| {
            // SAFETY: h came from Box::into_raw just above and was not published.
            drop(unsafe { Box::from_raw(h) });
        })
    }
}

/// Whether this build implements `linear` for weights of `format` stored in `layout`,
/// activations of `x_dtype` and outputs of `y_dtype` (`NINFER_DTYPE_*`) on `device`
/// (`NINFER_DEVICE_*`).
///
/// Returns `NINFER_STATUS_OK` when it does, `NINFER_STATUS_UNSUPPORTED` when every number
/// is valid but the combination is not implemented (e.g. int32 weights, f16 outputs, CUDA),
/// and `UNKNOWN_FORMAT`, `UNKNOWN_LAYOUT`, `INCOMPATIBLE_LAYOUT`, `UNKNOWN_DTYPE` or
/// `INVALID_ARGUMENT` (device) for numbers that name nothing.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_linear_supported(
    format: u32,
    layout: u32,
    x_dtype: u32,
    y_dtype: u32,
    device: u32,
) -> Status {
    call(|| {
        let format = Format::from_u32(format)?;
        let layout = Layout::from_u32(layout)?;
        check_compatible(format, layout)?;
        let x = Dtype::from_u32(x_dtype)?;
        let y = Dtype::from_u32(y_dtype)?;
        let device = Device::from_u32(device)?;
        if linear::supported(format, layout, x, y, device) {
            Ok(())
        } else {
            Err(Error::Unsupported(format!(
                "linear: {format} in {layout}, x {}, y {} on {device} is not implemented",
                x.name(),
                y.name()
            )))
        }
    })
}

/// Whether this build implements `linear` for weights of `format` in `layout` on `device`
/// with the activation profile `activation` (`NINFER_ACTIVATION_*`, see
/// `ninfer_linear_set_activation`): GGUF formats only with `Q8_1`, q2_g64_fp16,
/// t2_g128_fp16, q4_g64_fp16, q5_g64_fp16, q6_g64_fp16 and q8_g32_fp16 in
/// row_split_k128_v1 and nvfp4 in block_scale_k16_m128x4_v1 with both, every other
/// supported format only with `EXACT`; `Q8_K` only for gguf_q2_k..gguf_q6_k, gguf_iq4_xs,
/// gguf_iq1_s, gguf_iq1_m, gguf_iq2_xxs, gguf_iq2_xs, gguf_iq2_s, gguf_iq3_xxs and
/// gguf_iq3_s on the CPU.
///
/// Returns `OK` when it does, `UNSUPPORTED` when every number is valid but the
/// combination is not implemented, and `UNKNOWN_FORMAT`, `UNKNOWN_LAYOUT`,
/// `INCOMPATIBLE_LAYOUT` or `INVALID_ARGUMENT` (activation, device) for numbers that name
/// nothing. (`Q8_1` also needs K to be a multiple of 32, `Q8_K` a multiple of 256, checked
/// when it is set.)
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_linear_activation_supported(
    format: u32,
    layout: u32,
    activation: u32,
    device: u32,
) -> Status {
    call(|| {
        let format = Format::from_u32(format)?;
        let layout = Layout::from_u32(layout)?;
        check_compatible(format, layout)?;
        let activation = Activation::from_u32(activation)?;
        let device = Device::from_u32(device)?;
        if linear::supported_activation(format, layout, activation, device) {
            Ok(())
        } else {
            Err(Error::Unsupported(format!(
                "linear: {format} in {layout} with {} activations on {device} is not \
                 implemented",
                activation.name()
            )))
        }
    })
}

/// Prepares the weight described by `view` (N = rows outputs, K = cols inputs) for
/// `device` and stores a new handle in `*out_handle`. Checks the view's structure once
/// (no payload scan, no repacking, spec §8). Free the handle with `ninfer_linear_free`;
/// the view's plane buffers must outlive it (see `ninfer_linear`).
///
/// Errors: the structural errors of `ninfer_weight_view_check`, `UNSUPPORTED` for a
/// combination without a kernel (see `ninfer_linear_supported`), `INVALID_ARGUMENT` for an
/// unknown device, `NULL_POINTER`, `MISALIGNED` (`out_handle`); for `NINFER_DEVICE_CUDA`
/// also those of `ninfer_cuda_linear_prepare` (`NO_DEVICE`, `CUDA`). `*out_handle` is
/// written only on success.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`, with plane buffers valid until the handle is
/// freed; `out_handle` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_linear_prepare(
    view: *const ninfer_weight_view,
    device: u32,
    out_handle: *mut *mut ninfer_linear,
) -> Status {
    call(|| {
        let device = Device::from_u32(device)?;
        check_out_ptr(out_handle, false, "out_handle")?;
        // SAFETY: the caller keeps the planes valid until ninfer_linear_free ('static here).
        let v = unsafe { from_c::<'static>(view) }?;
        let weight = PreparedWeight::on(v, device)?;
        // SAFETY: checked non-NULL and aligned above.
        unsafe { ninfer_linear::publish(weight, out_handle) }
    })
}

/// Sets the threads `ninfer_linear_forward` and `ninfer_linear_forward_rows` use on this
/// handle: 0 = the default, `RAYON_NUM_THREADS` threads if set, else one per logical CPU:
/// the calling thread and that many − 1 of a pool the library keeps for the process
/// (made on first use; should no thread start, e.g. under a resource limit, the call runs
/// on the calling thread alone and a later one tries again), 1 = the calling thread only, n ≥ 2 = the calling thread and a
/// pool of n − 1 threads owned by the handle. The calling thread starts at once; the
/// others join in as they wake up. Results never depend on it (each output is computed by
/// one thread in a fixed order). A runtime that splits products across its own threads sets 1.
///
/// Errors: `NULL_POINTER`, `INVALID_ARGUMENT` above 1024, `INTERNAL` if threads cannot be
/// created.
///
/// # Safety
/// `handle` must come from `ninfer_linear_prepare`, not be freed, and not be in use by
/// another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_linear_set_threads(
    handle: *mut ninfer_linear,
    threads: u32,
) -> Status {
    call(|| {
        if handle.is_null() {
            return Err(Error::NullPointer("handle"));
        }
        // SAFETY: non-NULL, exclusive by the caller's promise.
        let h = unsafe { &mut *handle };
        h.weight.set_threads(threads as usize)
    })
}

/// Chooses the activation profile of `ninfer_linear_forward` on this handle (spec §2: the
/// consumer chooses activation precision; docs/linear.md "Activation profiles"):
/// `NINFER_ACTIVATION_EXACT` multiplies the weight values with x as given;
/// `NINFER_ACTIVATION_Q8_1` first quantizes each row of x to ggml's q8_1 blocks (32
/// values, binary16 scale d, codes round(x/d) in [−127, 127]) and multiplies the weight
/// values with x̂ = d·code, with integer block sums (criterion `linear_f32acc_v1` with x̂
/// for x). `NINFER_ACTIVATION_Q8_K` (GGUF k-quants and 256-value i-quants) quantizes each
/// row of x to ggml's q8_K blocks instead (256 values, binary32 scale d, codes
/// min(127, round_half_even(binary32(iscale·x))) with iscale = binary32(−127/max), max
/// the first element of largest magnitude, d = binary32(1/iscale), x̂ = d·code;
/// docs/linear.md). Defaults: GGUF
/// formats `Q8_1`, every other format `EXACT`.
///
/// Errors (the setting is unchanged on error): `NULL_POINTER`, `INVALID_ARGUMENT` (unknown
/// activation number), `UNSUPPORTED` (`EXACT` on a GGUF weight; `Q8_1` or `Q8_K` on a
/// format without it, see `ninfer_linear_activation_supported`), `BAD_SHAPE` (`Q8_1` with K
/// not a multiple of 32, `Q8_K` with K not a multiple of 256).
///
/// # Safety
/// `handle` must come from `ninfer_linear_prepare`, not be freed, and not be in use by
/// another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_linear_set_activation(
    handle: *mut ninfer_linear,
    activation: u32,
) -> Status {
    call(|| {
        if handle.is_null() {
            return Err(Error::NullPointer("handle"));
        }
        let activation = Activation::from_u32(activation)?;
        // SAFETY: non-NULL, exclusive by the caller's promise.
        let h = unsafe { &mut *handle };
        h.weight.set_activation(activation)
    })
}

/// The prepared weight's shape: N (outputs) into `*out_rows`, K (inputs) into `*out_cols`.
///
/// Errors: `NULL_POINTER`, `MISALIGNED` (an out-pointer not 8-byte aligned). Neither output
/// is written unless the status is OK.
///
/// # Safety
/// `handle` from `ninfer_linear_prepare` and not freed; outputs writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_linear_shape(
    handle: *const ninfer_linear,
    out_rows: *mut u64,
    out_cols: *mut u64,
) -> Status {
    call(|| {
        let h = unsafe { req(handle, "handle") }?;
        // Both outputs are checked before either is written.
        check_out_ptr(out_rows, false, "out_rows")?;
        check_out_ptr(out_cols, false, "out_cols")?;
        unsafe { write(out_rows, h.weight.rows() as u64, "out_rows") }?;
        unsafe { write(out_cols, h.weight.cols() as u64, "out_cols") }
    })
}

/// The arguments both forward exports share, translated and checked before anything is
/// written.
struct ForwardArgs<'a> {
    x: &'a [u8],
    x_dtype: Dtype,
    m: usize,
    k: usize,
    bias: Option<&'a [f32]>,
    y_dtype: Dtype,
}

/// Translates the shared arguments of the forward exports: dtypes, sizes, x and the bias as
/// slices; x and y may be NULL only when `m` is 0.
///
/// # Safety
/// `x` readable for `x_bytes` and `bias` for `bias_len` elements (when not NULL), unchanged
/// for `'a`.
#[allow(clippy::too_many_arguments)]
unsafe fn forward_args<'a>(
    x: *const core::ffi::c_void,
    x_bytes: usize,
    x_dtype: u32,
    m: u64,
    k: u64,
    bias: *const f32,
    bias_len: usize,
    y: *mut core::ffi::c_void,
    y_dtype: u32,
) -> Result<ForwardArgs<'a>> {
    let x_dtype = Dtype::from_u32(x_dtype)?;
    let y_dtype = Dtype::from_u32(y_dtype)?;
    let m = to_usize(m, "m")?;
    let k = to_usize(k, "k")?;
    // x NULL with x_bytes 0 is an empty buffer (then too small for m > 0 and k > 0); NULL
    // with a length is NULL_POINTER (`bytes`).
    if m > 0 && y.is_null() {
        return Err(Error::NullPointer("y"));
    }
    // SAFETY: the caller's contract.
    let x = unsafe { bytes(x.cast(), x_bytes, "x") }?;
    let bias = if bias.is_null() && bias_len == 0 {
        None
    } else {
        // SAFETY: the caller's contract.
        Some(unsafe { in_slice(bias, bias_len, "bias") }?)
    };
    Ok(ForwardArgs {
        x,
        x_dtype,
        m,
        k,
        bias,
        y_dtype,
    })
}

/// `y = x · Wᵀ (+ bias)`: `x` holds `m × k` activations of `x_dtype` (`NINFER_DTYPE_F32`,
/// `_BF16` or `_F16`, native-endian, row-major, no alignment required) in `x_bytes` bytes;
/// `y` receives `m × N` outputs of `y_dtype` (`F32` or `BF16`, rounded to nearest even from
/// the f32 result) in `y_bytes` bytes; `bias` is NULL (with `bias_len` 0) or N floats.
/// `k` must equal the weight's K. GGUF weights (and any weight set to
/// `NINFER_ACTIVATION_Q8_1`) quantize each row of x to q8_1 blocks (or to q8_K blocks
/// under `NINFER_ACTIVATION_Q8_K`) and accumulate in f32;
/// other formats multiply the exact weight values with x in f32. The
/// named tolerance criterion is `linear_f32acc_v1` (docs/linear.md). `m = 0` does nothing.
/// `ninfer_linear_forward_rows` computes a range of the N outputs with strided x and y (a
/// runtime's own threads and tensors); this call is its case n0 = 0, n1 = N, ldx = k,
/// ldy = N.
///
/// Memory (CPU handles): rows of x are processed 64 at a time, so the temporaries are
/// bounded by one tile of 64 rows, N, K and the thread count, never by m; they are all
/// allocated before any output is written. Temporaries of at most 256 KiB (a single-row
/// product of up to about 16k outputs) stay with the handle for its next call of the
/// same shape, so a decoding step allocates nothing (no contents carry over; a concurrent
/// call that finds them taken allocates its own; `ninfer_linear_free` releases them).
/// Results do not depend on the tiling.
///
/// Errors (nothing is written unless OK, `OUT_OF_MEMORY` included): `NULL_POINTER`,
/// `BAD_SHAPE` (k differs from K), `BUFFER_TOO_SMALL` (x, y or bias shorter than needed),
/// `UNKNOWN_DTYPE`, `UNSUPPORTED` (f16 outputs), `MISALIGNED` (bias), `OVERFLOW`,
/// `OUT_OF_MEMORY` (a temporary could not be allocated, e.g. under a memory limit: the
/// message names it and its bytes; `y` is untouched and the process keeps running).
/// Every format is read in place (bf16, fp32, the six grouped formats, fp8_e4m3fn_row_*,
/// nvfp4), and payloads are not checked (spec §8): a word that breaks a
/// rule `ninfer_decode_row` checks is multiplied with its arithmetic meaning (an E4M3FN
/// NaN word as NaN, a NaN group scale as NaN, a −0 scale as −0), never undefined
/// behaviour. GGUF weights are never refused: NaN/±Inf binary16
/// scales propagate into `y` as in ggml. Run `ninfer_validate` first on untrusted weights
/// (docs/linear.md).
///
/// # Safety
/// `handle` from `ninfer_linear_prepare` and not freed (its planes still valid); `x`
/// readable for `x_bytes`, `y` writable for `y_bytes`, `bias` readable for `bias_len`
/// floats; `y` must not overlap `x`, `bias` or the weight.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ninfer_linear_forward(
    handle: *const ninfer_linear,
    x: *const core::ffi::c_void,
    x_bytes: usize,
    x_dtype: u32,
    m: u64,
    k: u64,
    bias: *const f32,
    bias_len: usize,
    y: *mut core::ffi::c_void,
    y_bytes: usize,
    y_dtype: u32,
) -> Status {
    call(|| {
        let h = unsafe { req(handle, "handle") }?;
        // SAFETY: forwarded from this function's contract.
        let a = unsafe { forward_args(x, x_bytes, x_dtype, m, k, bias, bias_len, y, y_dtype) }?;
        let y = unsafe { out_slice(y.cast::<u8>(), y_bytes, "y") }?;
        h.weight
            .forward(a.x, a.x_dtype, a.m, a.k, a.bias, y, a.y_dtype)
    })
}

/// The outputs `n0 .. n1` of `ninfer_linear_forward`, with strided x and y: for every
/// row r < m of x and every weight row n with n0 ≤ n < n1,
/// `y[r·ldy + n] = Σ_j x[r·ldx + j] · w[n, j] (+ bias[n])`, with exactly the bits the same
/// output has in the whole `ninfer_linear_forward` (every format, activation profile,
/// instruction set, thread setting and m). A runtime splits one product across its own
/// threads by giving each a range of N, and reads x from / writes y into parts of larger
/// tensors. `ninfer_linear_forward` is the case n0 = 0, n1 = N, ldx = k, ldy = N.
///
/// - `x`: m rows of `x_dtype` (as for `ninfer_linear_forward`), row r at element
///   `r·ldx`; `ldx ≥ k`, in elements (not bytes). `x_bytes` must cover
///   `(m − 1)·ldx + k` elements (the last row needs only its k), 0 when m = 0.
/// - `y`: points at the start of the **full** output row 0, not at column n0: column n of
///   row r is element `r·ldy + n`; `ldy ≥ n1`, in elements (`ldy = N` for a packed
///   m × N output, the row stride of a larger tensor otherwise). `y_bytes` must cover
///   `(m − 1)·ldy + n1` elements of `y_dtype`, 0 when m = 0. Only the elements
///   `r·ldy + n` (r < m, n0 ≤ n < n1) are written; every other byte is untouched, so
///   threads may write disjoint ranges of one y at once.
/// - `bias`: NULL (with `bias_len` 0) or at least n1 floats, indexed by the absolute n
///   (`bias[n]` is added to column n, as in the whole call).
/// - `n0 ≤ n1 ≤ N`: an empty range (n0 = n1), like m = 0, checks the arguments and writes
///   nothing.
///
/// Threads: on a CPU handle each call runs on the handle's thread setting
/// (`ninfer_linear_set_threads`): by default (0) on the calling thread and the library's
/// process-wide pool (sized by `RAYON_NUM_THREADS`, else one thread per logical CPU), with
/// n ≥ 2 on the calling thread and the handle's own pool of n − 1 threads, with 1 on the
/// calling thread only. A runtime that partitions N with its own threads should set 1, so
/// that each call stays on the thread that makes it instead of also queueing on the
/// library's pool. Any number of `ninfer_linear_forward` /
/// `ninfer_linear_forward_rows` calls may run on one handle at once (each call allocates
/// its own temporaries; the handle is only read); `ninfer_linear_set_threads`,
/// `ninfer_linear_set_activation` and `ninfer_linear_free` must not run concurrently with
/// them. Calls sharing a pool (the global one, or the handle's) share its threads.
///
/// Memory (CPU handles): as `ninfer_linear_forward`, with the temporaries sized by one tile
/// of 64 rows of x, K, n1 − n0 (not N) and the thread count; all allocated before any
/// output is written. Each call converts all m rows of x to f32 (and, with q8_1
/// activations, quantizes them) itself, so each of T threads repeats that step: small beside
/// the product unless the ranges are only a few rows wide.
///
/// CUDA handles: `NINFER_STATUS_UNSUPPORTED` unless the call is the whole product with
/// packed rows (n0 = 0, n1 = N, ldx = k, ldy = N, i.e. `ninfer_linear_forward`); on the
/// device, use `ninfer_cuda_linear_forward` on sub-buffers.
///
/// Errors (nothing is written unless OK): `NULL_POINTER`; `BAD_SHAPE` (k differs from K,
/// `ldx < k`, `ldy < n1`); `INVALID_ARGUMENT` (n0 > n1); `ROW_OUT_OF_RANGE` (n1 > N);
/// `BUFFER_TOO_SMALL` (bias shorter than n1, x or y shorter than the extents above);
/// `MISALIGNED` (bias); `UNSUPPORTED` (f16 outputs, the CUDA case above); `OVERFLOW` (an
/// extent above beyond the address space; with m = 1 the strides are unused and any
/// value ≥ k, ≥ n1 is accepted); and as `ninfer_linear_forward` (`UNKNOWN_DTYPE`,
/// `OUT_OF_MEMORY`).
///
/// # Safety
/// `handle` from `ninfer_linear_prepare` and not freed (its planes still valid); `x`
/// readable for `x_bytes`, `y` writable for `y_bytes`, `bias` readable for `bias_len`
/// floats; the elements the call writes must not overlap the `x_bytes` at `x`, `bias` or
/// the weight, and no other thread may access them during the call. Other elements of the
/// same y may be written meanwhile, e.g. by concurrent calls with disjoint ranges n0..n1
/// (only the range's elements are ever accessed).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ninfer_linear_forward_rows(
    handle: *const ninfer_linear,
    x: *const core::ffi::c_void,
    x_bytes: usize,
    x_dtype: u32,
    m: u64,
    k: u64,
    ldx: u64,
    bias: *const f32,
    bias_len: usize,
    n0: u64,
    n1: u64,
    y: *mut core::ffi::c_void,
    y_bytes: usize,
    y_dtype: u32,
    ldy: u64,
) -> Status {
    call(|| {
        let h = unsafe { req(handle, "handle") }?;
        // SAFETY: forwarded from this function's contract.
        let a = unsafe { forward_args(x, x_bytes, x_dtype, m, k, bias, bias_len, y, y_dtype) }?;
        // Strides only ever multiply a row index below m − 1: with m = 1 any value is
        // unused, and with more rows an extent beyond memory is OVERFLOW or
        // BUFFER_TOO_SMALL where it is computed. So they saturate here instead of failing.
        let ldx = usize::try_from(ldx).unwrap_or(usize::MAX);
        let n0 = to_usize(n0, "n0")?;
        let n1 = to_usize(n1, "n1")?;
        let ldy = usize::try_from(ldy).unwrap_or(usize::MAX);
        if y_bytes > isize::MAX as usize {
            return Err(Error::Overflow(format!("y: length {y_bytes}")));
        }
        let (w, y) = (&h.weight, y.cast::<u8>());
        // SAFETY: y writable for y_bytes (NULL only with m = 0, checked above); the elements
        // written are exclusive to this call and do not overlap x, bias or the weight, by
        // the caller's contract.
        unsafe {
            w.forward_rows_ptr(
                a.x,
                a.x_dtype,
                a.m,
                a.k,
                ldx,
                a.bias,
                n0..n1,
                y,
                y_bytes,
                ldy,
                a.y_dtype,
            )
        }
    })
}

/// Frees a handle from `ninfer_linear_prepare` (its thread pool included). NULL is a no-op.
///
/// # Safety
/// `handle` must be NULL or a handle not yet freed and not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_linear_free(handle: *mut ninfer_linear) {
    if !handle.is_null() {
        // SAFETY: from Box::into_raw in ninfer_linear_prepare, freed once by contract.
        drop(unsafe { Box::from_raw(handle) });
    }
}
