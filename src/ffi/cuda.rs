//! CUDA devices and `linear` on them (docs/cuda.md).
//!
//! Every function here is exported by every build. In a build without CUDA support, on a
//! machine without the NVIDIA driver, or for a device that does not exist, they return
//! `NINFER_STATUS_NO_DEVICE` with the reason in the message; they never abort. Device
//! memory travels as `uint64_t` addresses (`CUdeviceptr`), streams as `void *`
//! (`CUstream`; NULL = the device's default stream).

use super::boundary::{call, check_out_ptr, req, write};
use super::linear::ninfer_linear;
use super::view::{from_c, ninfer_weight_view};
use crate::dtype::Dtype;
use crate::error::{Error, Status, to_usize};
use crate::linear::PreparedWeight;
use crate::registry::{Format, Layout};
use std::ffi::c_char;

/// Properties of one CUDA device (`ninfer_cuda_device_properties`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ninfer_cuda_device_info {
    /// The device's name, NUL-terminated (truncated to 255 bytes).
    pub name: [c_char; 256],
    /// Compute capability major (9 for sm_90).
    pub compute_capability_major: u32,
    /// Compute capability minor (0 for sm_90).
    pub compute_capability_minor: u32,
    /// Global memory in bytes.
    pub total_memory_bytes: u64,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// L2 cache in bytes.
    pub l2_cache_bytes: u32,
    /// 1 when the library holds a CUBIN for the device's architecture (sm_80, 86, 89, 90,
    /// 100, 120); 0 when the driver compiles the embedded PTX once on first use.
    pub native_cubin: u32,
}

/// A weight whose planes are already in device memory (for
/// `ninfer_cuda_linear_prepare_device`): the same fields as `ninfer_weight_view`, with
/// each plane as a device address and a byte length (unused planes: 0 and 0).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ninfer_device_view {
    /// `NINFER_FORMAT_*`.
    pub format: u32,
    /// `NINFER_LAYOUT_*`.
    pub layout: u32,
    /// Logical rows (N), positive.
    pub rows: u64,
    /// Logical columns (K), positive.
    pub cols: u64,
    /// Device addresses (`CUdeviceptr`) of the layout's planes.
    pub plane_addresses: [u64; 3],
    /// Their byte lengths (as `ninfer_weight_view`'s planes would have).
    pub plane_lengths: [u64; 3],
}

/// 1 when this build of the library has CUDA support (built with the `cuda` feature or
/// CMake `-DNINFER_CUDA=ON`), else 0. Says nothing about the machine: see
/// `ninfer_cuda_device_count`.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_cuda_compiled() -> u32 {
    crate::cuda::compiled() as u32
}

/// The number of CUDA devices into `*out_count` (0 on a machine whose driver sees no GPU).
///
/// Errors: `NULL_POINTER`, `NO_DEVICE` (no CUDA support in this build, or the NVIDIA driver
/// is not installed or fails to initialize; the message says which), `CUDA`.
///
/// # Safety
/// `out_count` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_cuda_device_count(out_count: *mut u32) -> Status {
    call(|| {
        check_out_ptr(out_count, false, "out_count")?;
        let n = crate::cuda::device_count()?;
        // SAFETY: non-NULL; alignment checked by `write`.
        unsafe { write(out_count, n, "out_count") }
    })
}

/// The properties of device `ordinal` into `*out`.
///
/// Errors: `NULL_POINTER`, `NO_DEVICE` (as `ninfer_cuda_device_count`, or no device
/// `ordinal`), `CUDA`.
///
/// # Safety
/// `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_cuda_device_properties(
    ordinal: u32,
    out: *mut ninfer_cuda_device_info,
) -> Status {
    call(|| {
        check_out_ptr(out, false, "out")?;
        let p = crate::cuda::device_properties(ordinal)?;
        let mut name = [0 as c_char; 256];
        for (o, &b) in name.iter_mut().zip(p.name.as_bytes().iter().take(255)) {
            *o = b as c_char;
        }
        let info = ninfer_cuda_device_info {
            name,
            compute_capability_major: p.compute_capability.0,
            compute_capability_minor: p.compute_capability.1,
            total_memory_bytes: p.total_memory,
            multiprocessors: p.multiprocessors,
            l2_cache_bytes: p.l2_cache_bytes,
            native_cubin: p.native_cubin as u32,
        };
        // SAFETY: non-NULL; alignment checked by `write`.
        unsafe { write(out, info, "out") }
    })
}

/// Prepares the weight `view` on CUDA device `ordinal`: its planes are copied once into
/// device memory as they are (the persistent representation, nothing repacked), so the
/// host planes may be freed when this returns. The handle then computes on the device:
/// `ninfer_cuda_linear_forward` on device buffers, or `ninfer_linear_forward` on host
/// buffers (copies in and out, synchronous). Free it with `ninfer_linear_free`.
/// (`ninfer_linear_prepare` with `NINFER_DEVICE_CUDA` does the same on device 0.)
///
/// Errors: the view's structural errors, `NULL_POINTER`, `NO_DEVICE`, `UNSUPPORTED` (a
/// format the CUDA kernels do not cover: `ninfer_linear_supported` with
/// `NINFER_DEVICE_CUDA`), `CUDA` (e.g. `CUDA_ERROR_OUT_OF_MEMORY`). `*out_handle` is written
/// only on success.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check` (planes readable during the call);
/// `out_handle` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_cuda_linear_prepare(
    view: *const ninfer_weight_view,
    ordinal: u32,
    out_handle: *mut *mut ninfer_linear,
) -> Status {
    call(|| {
        check_out_ptr(out_handle, false, "out_handle")?;
        // SAFETY: the planes are read only during this call (uploaded).
        let v = unsafe { from_c(view) }?;
        let weight = PreparedWeight::on_cuda(v, ordinal)?;
        // SAFETY: out_handle checked non-NULL.
        unsafe { ninfer_linear::publish(weight, out_handle) }
    })
}

/// Prepares a weight whose planes the caller already holds in device memory of device
/// `ordinal` (zero copy: a runtime that uploaded the encoded payload keeps its physical
/// representation). Nothing is read here; the planes must stay valid and unmodified until
/// `ninfer_linear_free`.
///
/// Errors: `NULL_POINTER` (view, out_handle, or a plane address 0 with a non-zero length),
/// `UNKNOWN_FORMAT`, `UNKNOWN_LAYOUT`, `INCOMPATIBLE_LAYOUT`, `BAD_SHAPE`, `SIZE_MISMATCH`
/// (plane lengths), `OVERFLOW`, and as `ninfer_cuda_linear_prepare`.
///
/// # Safety
/// `view` readable; each plane address must be device memory of that device holding
/// `plane_lengths[i]` bytes of the plane, for the handle's life; `out_handle` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_cuda_linear_prepare_device(
    view: *const ninfer_device_view,
    ordinal: u32,
    out_handle: *mut *mut ninfer_linear,
) -> Status {
    call(|| {
        let v = unsafe { req(view, "view") }?;
        check_out_ptr(out_handle, false, "out_handle")?;
        let format = Format::from_u32(v.format)?;
        let layout = Layout::from_u32(v.layout)?;
        let rows = to_usize(v.rows, "rows")?;
        let cols = to_usize(v.cols, "cols")?;
        let mut planes = [(0u64, 0usize); 3];
        for (p, (&a, &len)) in planes
            .iter_mut()
            .zip(v.plane_addresses.iter().zip(&v.plane_lengths))
        {
            *p = (a, to_usize(len, "plane length")?);
        }
        // SAFETY: the caller's contract above.
        let weight =
            unsafe { PreparedWeight::borrow_cuda(format, layout, rows, cols, planes, ordinal) }?;
        // SAFETY: out_handle checked non-NULL.
        unsafe { ninfer_linear::publish(weight, out_handle) }
    })
}

/// The device workspace, in bytes, that `ninfer_cuda_linear_forward` of `m` rows needs
/// into `*out_bytes` (0 for a CPU handle, and for products that need none).
///
/// Errors: `NULL_POINTER`, `OVERFLOW`.
///
/// # Safety
/// `handle` from a prepare function and not freed; `out_bytes` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_cuda_linear_workspace_size(
    handle: *const ninfer_linear,
    m: u64,
    out_bytes: *mut u64,
) -> Status {
    call(|| {
        let h = unsafe { req(handle, "handle") }?;
        check_out_ptr(out_bytes, false, "out_bytes")?;
        let n = h.weight.workspace_size(to_usize(m, "m")?)?;
        unsafe { write(out_bytes, n as u64, "out_bytes") }
    })
}

/// `y = x · Wᵀ (+ bias)` on the handle's CUDA device, enqueued on `stream` and returning
/// without waiting (no host synchronisation): `x` = m × k values of `x_dtype`
/// (`NINFER_DTYPE_F32`, `_BF16`, `_F16`), `y` = m × N values of `y_dtype` (`F32` or `BF16`),
/// row-major, in device memory; `bias` = N floats in device memory or 0. `k` must equal K.
/// With `workspace` (16-byte aligned, as every device allocation is) ≥
/// `ninfer_cuda_linear_workspace_size(m)` bytes nothing is allocated,
/// so the call can be captured in a CUDA graph; with `workspace` = 0 the library allocates
/// and frees it in stream order. Several threads may call this on one handle with
/// different streams at once. The outputs are bit for bit the CPU's (docs/cuda.md).
///
/// Errors (nothing is enqueued unless OK): `NULL_POINTER` (handle; x or y 0 with m > 0),
/// `BAD_SHAPE`, `UNKNOWN_DTYPE`, `UNSUPPORTED` (f16 outputs, a CPU handle, m too large for
/// one launch), `BUFFER_TOO_SMALL` (workspace), `INVALID_ARGUMENT` (a workspace address
/// that is not a multiple of 16), `CUDA` (a failing launch, with the CUDA
/// error name). Errors of kernels that already ran surface from the stream, as for any
/// CUDA work.
///
/// # Safety
/// `handle` from a CUDA prepare function and not freed; the buffers are device memory of
/// the handle's device, large enough, valid until the stream has run the product; `y`
/// overlaps nothing else; `stream` is NULL or a stream of the device's primary context.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ninfer_cuda_linear_forward(
    handle: *const ninfer_linear,
    x: u64,
    x_dtype: u32,
    m: u64,
    k: u64,
    bias: u64,
    y: u64,
    y_dtype: u32,
    stream: *mut core::ffi::c_void,
    workspace: u64,
    workspace_bytes: u64,
) -> Status {
    call(|| {
        let h = unsafe { req(handle, "handle") }?;
        let x_dtype = Dtype::from_u32(x_dtype)?;
        let y_dtype = Dtype::from_u32(y_dtype)?;
        let m = to_usize(m, "m")?;
        if m > 0 && (x == 0 || y == 0) {
            return Err(Error::NullPointer("x / y"));
        }
        let ws = to_usize(workspace_bytes, "workspace_bytes")?;
        // SAFETY: the caller's contract above.
        unsafe {
            h.weight.forward_cuda(
                x,
                x_dtype,
                m,
                to_usize(k, "k")?,
                bias,
                y,
                y_dtype,
                stream,
                workspace,
                ws,
            )
        }
    })
}

/// Rows `first .. first + count` of a CUDA handle's weight decoded into `out` (device
/// memory, row-major count × K values of `out_dtype`, `F32` or `BF16` rounded to nearest
/// even: the exact represented values, as `ninfer_decode_row`), enqueued on `stream`.
///
/// Errors: `NULL_POINTER` (handle; out 0 with count > 0), `ROW_OUT_OF_RANGE`,
/// `UNKNOWN_DTYPE`, `UNSUPPORTED` (f16, a CPU handle), `CUDA`. Every format a CUDA handle
/// holds has a device decoder (the GGUF types included: ggml's dequantized values).
///
/// # Safety
/// `handle` from a CUDA prepare function and not freed; `out` device memory of its device
/// holding count × K values, valid until the stream has run the decode.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_cuda_linear_decode_rows(
    handle: *const ninfer_linear,
    first: u64,
    count: u64,
    out: u64,
    out_dtype: u32,
    stream: *mut core::ffi::c_void,
) -> Status {
    call(|| {
        let h = unsafe { req(handle, "handle") }?;
        let out_dtype = Dtype::from_u32(out_dtype)?;
        let count = to_usize(count, "count")?;
        if count > 0 && out == 0 {
            return Err(Error::NullPointer("out"));
        }
        // SAFETY: the caller's contract above.
        unsafe {
            h.weight
                .decode_rows_cuda(to_usize(first, "first")?, count, out, out_dtype, stream)
        }
    })
}
