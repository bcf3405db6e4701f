//! Versions: header macros, runtime functions and the Cargo version agree (tested).

use super::boundary;
use crate::error::Status;
use std::ffi::c_char;

/// Major version of the library this header belongs to.
pub const NINFER_VERSION_MAJOR: u32 = 0;
/// Minor version of the library this header belongs to.
pub const NINFER_VERSION_MINOR: u32 = 1;
/// Patch version of the library this header belongs to.
pub const NINFER_VERSION_PATCH: u32 = 0;
/// ABI version: the number in the SONAME (`libninfer.so.0`). Changes only when a
/// declaration of this header changes incompatibly.
pub const NINFER_ABI_VERSION: u32 = 0;

const VERSION_C: &std::ffi::CStr = c"0.1.0";

/// The library's version as a static NUL-terminated string, e.g. `"0.1.0"`.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_version() -> *const c_char {
    VERSION_C.as_ptr()
}

/// The library's major version (compare with `NINFER_VERSION_MAJOR` to detect a header /
/// library mismatch).
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_version_major() -> u32 {
    NINFER_VERSION_MAJOR
}

/// The library's minor version.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_version_minor() -> u32 {
    NINFER_VERSION_MINOR
}

/// The library's patch version.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_version_patch() -> u32 {
    NINFER_VERSION_PATCH
}

/// The library's ABI version (`NINFER_ABI_VERSION` of the header it was built with).
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_abi_version() -> u32 {
    NINFER_ABI_VERSION
}

/// The name of a status without its prefix (`"SIZE_MISMATCH"` for
/// `NINFER_STATUS_SIZE_MISMATCH`) as a static string; `"UNKNOWN_STATUS"` for a number
/// that is not a status.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_status_name(status: u32) -> *const c_char {
    match Status::from_u32(status) {
        Some(s) => s.cname().as_ptr(),
        None => c"UNKNOWN_STATUS".as_ptr(),
    }
}

/// Copies this thread's last error message into `buf` and returns its full length in
/// bytes (without the NUL), snprintf style: at most `len - 1` bytes and a terminating NUL
/// are written; `buf` may be NULL with `len` 0 to query the length. Every call of another
/// `ninfer_*` function that returns a status replaces the message (clears it on success).
/// The message is per OS thread: read it on the thread that made the failing call.
///
/// # Safety
/// `buf`, when non-NULL, must have `len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_last_error_message(buf: *mut c_char, len: usize) -> usize {
    boundary::last_error_message(buf, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_runtime_and_cargo_versions_agree() {
        let cargo = crate::VERSION;
        let macros =
            format!("{NINFER_VERSION_MAJOR}.{NINFER_VERSION_MINOR}.{NINFER_VERSION_PATCH}");
        assert_eq!(macros, cargo);
        assert_eq!(VERSION_C.to_str().unwrap(), cargo);
        assert_eq!(
            env!("CARGO_PKG_VERSION_MAJOR").parse::<u32>().unwrap(),
            ninfer_version_major()
        );
    }
}
