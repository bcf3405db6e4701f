//! A weight prepared on a CUDA device: its planes in device memory (uploaded once, in the
//! persistent representation, or borrowed from the caller), the kernels' descriptor, and
//! the launches of a product or a row decode on a caller's stream.

use super::abi::NfWeight;
use crate::cuda::driver::{Device, cuda_error};
use crate::dtype::Dtype;
use crate::error::{Error, Result, mul};
use crate::linear::plan::{Family, Plan};
use crate::registry::{Format, Layout};
use cudarc::driver::{result, sys};
use std::ffi::c_void;

/// Whether the CUDA kernels compute `plan`: every family of the plan table but the generic
/// decoded one and the q8_K profile has an entry point per format (`nf_exact_<n>` or
/// `nf_q8_<n>`; a test checks the kernel source declares each one).
pub(crate) fn covers(plan: &Plan) -> bool {
    !matches!(plan.family, Family::Decoded | Family::GgufQ8K)
}

/// Whether the device decodes rows of `format` (`nf_decode_<n>`): every format the CPU
/// decodes.
pub(crate) fn decodes(format: Format) -> bool {
    crate::decode::is_decodable_format(format)
}

/// GEMV geometry (nf_kernels.cu): 16 weight rows per 128-thread block, 8 activation rows
/// per grid row.
const ROWS_PER_BLOCK: usize = 16;
const MMAX: usize = 8;

/// Where a weight's planes live.
enum Planes {
    /// Device copies this weight owns (freed on drop).
    Owned([u64; 3]),
    /// The caller's device memory (never freed here).
    Borrowed,
}

/// A weight on one CUDA device.
pub(crate) struct CudaWeight {
    dev: &'static Device,
    desc: NfWeight,
    planes: Planes,
    format: Format,
}

// SAFETY: the descriptor holds device addresses only; every use binds the device's
// context first. Concurrent forwards only read the weight.
unsafe impl Send for CudaWeight {}
unsafe impl Sync for CudaWeight {}

impl Drop for CudaWeight {
    fn drop(&mut self) {
        if let Planes::Owned(p) = self.planes
            && self.dev.bind().is_ok()
        {
            for d in p.into_iter().filter(|&d| d != 0) {
                // SAFETY: allocated by `upload`, freed once. A failure cannot be
                // reported from drop; the memory is then the driver's to reclaim.
                let _ = unsafe { result::free_sync(d) };
            }
        }
    }
}

/// A CUstream from the C API (`NULL` = the context's default stream).
pub(crate) type Stream = *mut c_void;

impl CudaWeight {
    /// Uploads `planes` (host bytes, lengths checked by a view) to device `ordinal`.
    pub(crate) fn upload(
        format: Format,
        layout: Layout,
        n: usize,
        k: usize,
        planes: [&[u8]; 3],
        ordinal: u32,
    ) -> Result<CudaWeight> {
        let dev = Device::get(ordinal)?;
        dev.bind()?;
        let mut owned = [0u64; 3];
        let mut w = CudaWeight {
            dev,
            desc: NfWeight::new(format, layout, n, k, planes.map(|p| p.len()), [0; 3])?,
            planes: Planes::Owned([0; 3]),
            format,
        };
        for (i, p) in planes.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
            // SAFETY: a fresh allocation of p.len() bytes, filled from p (synchronous).
            unsafe {
                let d = result::malloc_sync(p.len()).map_err(|e| cuda_error("cuMemAlloc", e))?;
                owned[i] = d;
                w.planes = Planes::Owned(owned); // freed by drop from here on
                result::memcpy_htod_sync(d, p).map_err(|e| cuda_error("cuMemcpyHtoD", e))?;
            }
        }
        w.desc = NfWeight::new(format, layout, n, k, planes.map(|p| p.len()), owned)?;
        Ok(w)
    }

    /// A weight over planes the caller already holds on device `ordinal` (zero copy).
    ///
    /// # Safety
    /// `base[i]` must be device addresses of `lens[i]` readable bytes on that device,
    /// holding the planes of this format and layout, valid and unmodified for the weight's
    /// life.
    pub(crate) unsafe fn borrow(
        format: Format,
        layout: Layout,
        n: usize,
        k: usize,
        lens: [usize; 3],
        base: [u64; 3],
        ordinal: u32,
    ) -> Result<CudaWeight> {
        let dev = Device::get(ordinal)?;
        Ok(CudaWeight {
            dev,
            desc: NfWeight::new(format, layout, n, k, lens, base)?,
            planes: Planes::Borrowed,
            format,
        })
    }

    /// The device's ordinal.
    pub(crate) fn ordinal(&self) -> u32 {
        self.dev.ordinal
    }

    /// Workspace bytes a forward of `m` rows needs under `plan`: q8_1 codes and scales, or
    /// the activation rows' scaled-order flags (fp8 / nvfp4), else 0.
    pub(crate) fn workspace_size(&self, plan: &Plan, m: usize) -> Result<usize> {
        let k = self.desc.cols as usize;
        if plan.quantizes_x() {
            let codes = mul(m, k, "M × K")?.next_multiple_of(256);
            return Ok(codes + mul(m, k / 32 * 4, "q8_1 scales")?);
        }
        Ok(match plan.family {
            Family::Fp8Row | Family::Nvfp4 => m.next_multiple_of(256),
            _ => 0,
        })
    }

    /// `y = x · Wᵀ (+ bias)` on device memory, asynchronously on `stream`: x [m][K] of
    /// `x_dtype`, y [m][N] of `y_dtype` (f32 or bf16), bias N f32 or 0. With `workspace` = 0
    /// a workspace is allocated and freed in stream order.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn forward(
        &self,
        plan: &Plan,
        x: u64,
        x_dtype: Dtype,
        m: usize,
        bias: u64,
        y: u64,
        y_dtype: Dtype,
        stream: Stream,
        workspace: u64,
        workspace_bytes: usize,
    ) -> Result<()> {
        if m == 0 {
            return Ok(());
        }
        let need = self.workspace_size(plan, m)?;
        if workspace != 0 && workspace_bytes < need {
            return Err(Error::BufferTooSmall {
                what: "workspace (bytes)",
                needed: need,
                actual: workspace_bytes,
            });
        }
        let (n, k) = (self.desc.rows as usize, self.desc.cols as usize);
        let grid_y = m.div_ceil(MMAX);
        // Launch geometry: 65535 grid rows of 8 activation rows, and the q8_1 quantizer's
        // one thread per 32-value block in at most 2³¹ − 1 blocks of 128.
        if grid_y > 65535 || (m * k / 32).div_ceil(128) > i32::MAX as usize {
            return Err(Error::Unsupported(format!(
                "linear on CUDA: M = {m} rows of K = {k} in one call (at most {} rows, and M·K \
                 below 2⁴³)",
                65535 * MMAX
            )));
        }
        self.dev.bind()?;
        let stream = stream as sys::CUstream;
        let ws = if workspace == 0 && need > 0 {
            // SAFETY: stream-ordered allocation, freed in stream order below.
            unsafe { result::malloc_async(stream, need) }
                .map_err(|e| cuda_error("cuMemAllocAsync", e))?
        } else {
            workspace
        };
        let run = || -> Result<()> {
            let grid = (n.div_ceil(ROWS_PER_BLOCK) as u32, grid_y as u32, 1);
            let (xd, yd, mi) = (x_dtype as i32, y_dtype as i32, m as i32);
            let mut desc = self.desc;
            let (mut x, mut y, mut bias) = (x, y, bias);
            let f = self.format as u32;
            if plan.quantizes_x() {
                let (mut q, mut d) = (ws, ws + (m * k).next_multiple_of(256) as u64);
                let blocks = m * k / 32;
                let (mut xd, mut mi2, mut ki) = (xd, mi, k as i32);
                self.launch(
                    "nf_quantize_q8_1",
                    (blocks.div_ceil(128) as u32, 1, 1),
                    128,
                    stream,
                    &mut [
                        arg(&mut x),
                        arg(&mut xd),
                        arg(&mut mi2),
                        arg(&mut ki),
                        arg(&mut q),
                        arg(&mut d),
                    ],
                )?;
                let (mut mi, mut yd) = (mi, yd);
                self.launch(
                    &format!("nf_q8_{f}"),
                    grid,
                    128,
                    stream,
                    &mut [
                        arg(&mut desc),
                        arg(&mut q),
                        arg(&mut d),
                        arg(&mut mi),
                        arg(&mut bias),
                        arg(&mut y),
                        arg(&mut yd),
                    ],
                )
            } else {
                let mut xok: u64 = 0;
                let (tiny, sum) = match plan.family {
                    Family::Fp8Row => (-109, 126),
                    _ => (-116, 116),
                };
                if matches!(plan.family, Family::Fp8Row | Family::Nvfp4) {
                    xok = ws;
                    let (mut xd, mut ki, mut tiny, mut sum) = (xd, k as i32, tiny, sum);
                    self.launch(
                        "nf_scaled_x_rows",
                        (m as u32, 1, 1),
                        256,
                        stream,
                        &mut [
                            arg(&mut x),
                            arg(&mut xd),
                            arg(&mut ki),
                            arg(&mut tiny),
                            arg(&mut sum),
                            arg(&mut xok),
                        ],
                    )?;
                }
                let (mut xd, mut mi, mut yd) = (xd, mi, yd);
                self.launch(
                    &format!("nf_exact_{f}"),
                    grid,
                    128,
                    stream,
                    &mut [
                        arg(&mut desc),
                        arg(&mut x),
                        arg(&mut xd),
                        arg(&mut mi),
                        arg(&mut xok),
                        arg(&mut bias),
                        arg(&mut y),
                        arg(&mut yd),
                    ],
                )
            }
        };
        let r = run();
        if ws != workspace {
            // SAFETY: allocated above on this stream; freed after the launches in order.
            let f = unsafe { result::free_async(ws, stream) }
                .map_err(|e| cuda_error("cuMemFreeAsync", e));
            r?;
            f?;
            return Ok(());
        }
        r
    }

    /// Rows `first .. first + count` decoded to `out` (device, [count][K] of f32 or bf16)
    /// on `stream`. The caller checked the range and the format ([`decodes`]).
    pub(crate) fn decode_rows(
        &self,
        first: usize,
        count: usize,
        out: u64,
        out_dtype: Dtype,
        stream: Stream,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let total = mul(count, self.desc.cols as usize, "rows × K")?;
        if total.div_ceil(256) > i32::MAX as usize {
            return Err(Error::Unsupported(format!(
                "device decode of {count} rows of K = {} in one call (fewer rows per call)",
                self.desc.cols
            )));
        }
        self.dev.bind()?;
        let (mut desc, mut first, mut count, mut out, mut od) =
            (self.desc, first as i32, count as i32, out, out_dtype as i32);
        self.launch(
            &format!("nf_decode_{}", self.format as u32),
            (total.div_ceil(256) as u32, 1, 1),
            256,
            stream as sys::CUstream,
            &mut [
                arg(&mut desc),
                arg(&mut first),
                arg(&mut count),
                arg(&mut out),
                arg(&mut od),
            ],
        )
    }

    fn launch(
        &self,
        name: &str,
        grid: (u32, u32, u32),
        block: u32,
        stream: sys::CUstream,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let f = self.dev.function(name)?;
        // SAFETY: the kernel's parameter list matches `params` (nf_kernels.cu); every
        // address points into memory the caller or this weight holds for the launch.
        unsafe { result::launch_kernel(f.0, grid, (block, 1, 1), 0, stream, params) }
            .map_err(|e| cuda_error(&format!("cuLaunchKernel({name})"), e))
    }

    /// Copies `bytes` host bytes to a fresh device buffer (synchronous).
    pub(crate) fn to_device(&self, bytes: &[u8]) -> Result<DeviceBuffer> {
        self.dev.bind()?;
        let b = DeviceBuffer::new(bytes.len().max(1))?;
        // SAFETY: the buffer holds at least bytes.len() bytes.
        unsafe { result::memcpy_htod_sync(b.0, bytes) }
            .map_err(|e| cuda_error("cuMemcpyHtoD", e))?;
        Ok(b)
    }

    /// Waits for `stream` and copies `out.len()` bytes of `src` back (synchronous).
    pub(crate) fn to_host(&self, src: &DeviceBuffer, out: &mut [u8]) -> Result<()> {
        self.dev.bind()?;
        // SAFETY: the default stream; src holds at least out.len() bytes.
        unsafe {
            result::stream::synchronize(std::ptr::null_mut())
                .map_err(|e| cuda_error("cuStreamSynchronize", e))?;
            result::memcpy_dtoh_sync(out, src.0).map_err(|e| cuda_error("cuMemcpyDtoH", e))
        }
    }
}

/// A device allocation freed on drop (the synchronous host-buffer paths).
pub(crate) struct DeviceBuffer(pub(crate) u64);

impl DeviceBuffer {
    pub(crate) fn new(bytes: usize) -> Result<DeviceBuffer> {
        // SAFETY: a plain allocation.
        unsafe { result::malloc_sync(bytes) }
            .map(DeviceBuffer)
            .map_err(|e| cuda_error("cuMemAlloc", e))
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by `new`, freed once.
        let _ = unsafe { result::free_sync(self.0) };
    }
}

/// A kernel parameter: the address of its value.
fn arg<T>(v: &mut T) -> *mut c_void {
    (v as *mut T).cast()
}
