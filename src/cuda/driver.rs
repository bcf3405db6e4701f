//! The CUDA driver, loaded at run time (cudarc's `dynamic-loading`): initialization, device
//! queries, one primary context and one kernel module per device, and the mapping of driver
//! errors to [`Error::Cuda`] / [`Error::NoDevice`].
//!
//! cudarc panics when it cannot load `libcuda` (its lazy loader); every path here first asks
//! [`cudarc::driver::sys::is_culib_present`], so a machine without the driver gets a status,
//! never a panic.

use super::DeviceProperties;
use crate::error::{Error, Result};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use cudarc::driver::{DriverError, result};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The kernel images compiled by build.rs: (architecture, is PTX, bytes). PTX images are
/// NUL-terminated.
mod images {
    #![allow(dead_code)] // BUILD_LOG is read by the tests only
    include!(concat!(env!("OUT_DIR"), "/nf_images.rs"));
}

/// NVRTC's and ptxas's reports of the kernels' build (registers, spills per kernel).
#[cfg(test)]
pub(crate) fn build_log() -> &'static str {
    images::BUILD_LOG
}

/// `what: CUDA_ERROR_…` for a failed driver call.
pub(crate) fn cuda_error(what: &str, e: DriverError) -> Error {
    let name = e
        .error_name()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("CUresult {}", e.0 as u32));
    match e.0 {
        sys::CUresult::CUDA_ERROR_NO_DEVICE => Error::NoDevice(format!("{what}: {name}")),
        _ => Error::Cuda(format!("{what}: {name}")),
    }
}

/// Loads and initializes the driver once per process.
fn init() -> Result<()> {
    static INIT: OnceLock<Result<()>> = OnceLock::new();
    INIT.get_or_init(|| {
        // SAFETY: only tries to dlopen the driver library; no driver call is made.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDevice(
                "the NVIDIA driver (libcuda.so.1) is not installed on this machine".into(),
            ));
        }
        result::init().map_err(|e| cuda_error("cuInit", e))
    })
    .clone()
}

pub(crate) fn device_count() -> Result<u32> {
    init()?;
    let n = result::device::get_count().map_err(|e| cuda_error("cuDeviceGetCount", e))?;
    Ok(n.max(0) as u32)
}

/// The driver's handle of device `ordinal`, or [`Error::NoDevice`].
fn handle(ordinal: u32) -> Result<sys::CUdevice> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(Error::NoDevice(format!(
            "CUDA device {ordinal} does not exist ({count} device{} here)",
            if count == 1 { "" } else { "s" }
        )));
    }
    result::device::get(ordinal as i32).map_err(|e| cuda_error("cuDeviceGet", e))
}

fn attribute(dev: sys::CUdevice, a: Attr) -> Result<u32> {
    // SAFETY: `dev` is a handle the driver returned; attributes are plain queries.
    unsafe { result::device::get_attribute(dev, a) }
        .map(|v| v.max(0) as u32)
        .map_err(|e| cuda_error("cuDeviceGetAttribute", e))
}

pub(crate) fn properties(ordinal: u32) -> Result<DeviceProperties> {
    let dev = handle(ordinal)?;
    let major = attribute(dev, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(dev, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    Ok(DeviceProperties {
        name: result::device::get_name(dev).map_err(|e| cuda_error("cuDeviceGetName", e))?,
        compute_capability: (major, minor),
        // SAFETY: as above.
        total_memory: unsafe { result::device::total_mem(dev) }
            .map_err(|e| cuda_error("cuDeviceTotalMem", e))? as u64,
        multiprocessors: attribute(dev, Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        l2_cache_bytes: attribute(dev, Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        native_cubin: image_for(10 * major + minor).1,
    })
}

/// The kernel image for architecture `sm` (10·major + minor): the CUBIN built for it, else
/// the PTX of the newest architecture not above it (the driver compiles it), and whether
/// it is a CUBIN.
fn image_for(sm: u32) -> (Option<&'static [u8]>, bool) {
    if let Some(&(_, _, bytes)) = images::IMAGES.iter().find(|&&(a, ptx, _)| a == sm && !ptx) {
        return (Some(bytes), true);
    }
    let ptx = images::IMAGES
        .iter()
        .filter(|&&(a, ptx, _)| ptx && a <= sm)
        .max_by_key(|&&(a, _, _)| a)
        .map(|&(_, _, b)| b);
    (ptx, false)
}

/// A kernel of the module (a driver handle, valid while the module is loaded, which is for
/// the life of the process).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Function(pub(crate) sys::CUfunction);
// SAFETY: driver handles may be used from any thread whose current context is the one they
// belong to; `Device::bind` makes it current before every use.
unsafe impl Send for Function {}
unsafe impl Sync for Function {}

/// One device's state: its primary context (retained for the life of the process), the
/// kernel module loaded into it, and the kernels looked up so far.
pub(crate) struct Device {
    pub(crate) ordinal: u32,
    ctx: sys::CUcontext,
    module: sys::CUmodule,
    functions: Mutex<HashMap<String, Function>>,
}
// SAFETY: the context and module handles are process-wide driver objects, usable from any
// thread once bound; the function cache is behind a mutex.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

impl Device {
    /// The device `ordinal`, set up on first use (primary context retained, module loaded).
    pub(crate) fn get(ordinal: u32) -> Result<&'static Device> {
        static DEVICES: OnceLock<Mutex<HashMap<u32, &'static Device>>> = OnceLock::new();
        let mut map = DEVICES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(d) = map.get(&ordinal) {
            return Ok(d);
        }
        let props = properties(ordinal)?;
        let dev = handle(ordinal)?;
        let (major, minor) = props.compute_capability;
        let (Some(image), _) = image_for(10 * major + minor) else {
            return Err(Error::NoDevice(format!(
                "CUDA device {ordinal} ({}) is sm_{major}{minor}; this library's kernels need \
                 sm_80 or newer",
                props.name
            )));
        };
        // SAFETY: `dev` is valid; the primary context is retained and never released (the
        // device state lives as long as the process). The image is a CUBIN or a
        // NUL-terminated PTX built for this library.
        let d = unsafe {
            let ctx = result::primary_ctx::retain(dev)
                .map_err(|e| cuda_error("cuDevicePrimaryCtxRetain", e))?;
            result::ctx::set_current(ctx).map_err(|e| cuda_error("cuCtxSetCurrent", e))?;
            let module = result::module::load_data(image.as_ptr().cast())
                .map_err(|e| cuda_error("cuModuleLoadData", e))?;
            Device {
                ordinal,
                ctx,
                module,
                functions: Mutex::new(HashMap::new()),
            }
        };
        let d: &'static Device = Box::leak(Box::new(d));
        map.insert(ordinal, d);
        Ok(d)
    }

    /// Makes the device's context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        // SAFETY: a context retained by `get` and never released.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(|e| cuda_error("cuCtxSetCurrent", e))
    }

    /// The kernel `name` of the module.
    pub(crate) fn function(&self, name: &str) -> Result<Function> {
        let mut f = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&h) = f.get(name) {
            return Ok(h);
        }
        let c = std::ffi::CString::new(name).map_err(|_| Error::Internal(name.into()))?;
        // SAFETY: the module is loaded for the life of the process.
        let h = unsafe { result::module::get_function(self.module, c) }
            .map_err(|e| cuda_error(&format!("cuModuleGetFunction({name})"), e))?;
        f.insert(name.into(), Function(h));
        Ok(Function(h))
    }
}
