//! NVIDIA GPUs through the CUDA driver API: which devices there are, their properties, and
//! (with the `cuda` feature) the per-device state the kernels need.
//!
//! **What a user needs.** Only the NVIDIA driver (`libcuda.so.1`), loaded at run time: the
//! library links and runs without a CUDA toolkit or driver, and every CUDA entry point then
//! returns [`Error::NoDevice`] with the reason (built without the `cuda` feature, driver not
//! found, no GPU at that ordinal). The kernels are compiled ahead of time into the library
//! (CUBINs for sm_80, sm_86, sm_89, sm_90, sm_100, sm_120 and PTX for newer GPUs), so
//! nothing is compiled on the user's machine.

use crate::error::{Error, Result};

#[cfg(feature = "cuda")]
pub(crate) mod driver;

/// Properties of one CUDA device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProperties {
    /// The device's name as the driver reports it (e.g. "NVIDIA H200").
    pub name: String,
    /// Compute capability, major and minor (9 and 0 for sm_90).
    pub compute_capability: (u32, u32),
    /// Global memory, bytes.
    pub total_memory: u64,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// L2 cache, bytes.
    pub l2_cache_bytes: u32,
    /// Whether this library holds a CUBIN for the device's exact architecture (otherwise
    /// the driver compiles the embedded PTX once, when the module is first loaded).
    pub native_cubin: bool,
}

/// Whether this build has CUDA support (the `cuda` cargo feature, CMake `-DNINFER_CUDA=ON`).
pub fn compiled() -> bool {
    cfg!(feature = "cuda")
}

/// The number of CUDA devices. Errors: [`Error::NoDevice`] when this build has no CUDA
/// support or the NVIDIA driver is not installed or fails to initialize (a machine with a
/// driver and no GPU has 0 devices), [`Error::Cuda`] for a failing driver call.
pub fn device_count() -> Result<u32> {
    #[cfg(feature = "cuda")]
    {
        driver::device_count()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(not_compiled())
    }
}

/// The properties of device `ordinal`. Errors as [`device_count`], and
/// [`Error::NoDevice`] for an ordinal at or beyond the device count.
pub fn device_properties(ordinal: u32) -> Result<DeviceProperties> {
    #[cfg(feature = "cuda")]
    {
        driver::properties(ordinal)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        Err(not_compiled())
    }
}

/// The error of every CUDA entry point in a build without CUDA support.
#[cfg_attr(feature = "cuda", allow(dead_code))]
pub(crate) fn not_compiled() -> Error {
    Error::NoDevice(
        "this build of libninfer has no CUDA support (build with the `cuda` cargo feature, \
         or CMake -DNINFER_CUDA=ON)"
            .into(),
    )
}
