//! Rust images of the C ABI's structs for the tests that call the `ninfer_*` symbols
//! directly (the library's own Rust types are not used, so a layout mismatch between the
//! header and the library would show up here), and the declarations several tests share.
#![allow(dead_code)]

use std::ffi::c_char;

// Links the library so its `ninfer_*` symbols resolve.
use ninfer as _;

/// `ninfer_bytes`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Bytes {
    pub ptr: *const u8,
    pub len: usize,
}

/// `ninfer_mut_bytes`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MutBytes {
    pub ptr: *mut u8,
    pub len: usize,
}

/// `ninfer_weight_view`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct View {
    pub format: u32,
    pub layout: u32,
    pub rows: u64,
    pub cols: u64,
    pub planes: [Bytes; 3],
}

impl Bytes {
    /// `{NULL, 0}`.
    pub const NONE: Bytes = Bytes {
        ptr: std::ptr::null(),
        len: 0,
    };

    /// The bytes of a slice.
    pub fn of(s: &[u8]) -> Bytes {
        Bytes {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }
}

impl MutBytes {
    /// `{NULL, 0}`.
    pub const NONE: MutBytes = MutBytes {
        ptr: std::ptr::null_mut(),
        len: 0,
    };

    /// The bytes of a mutable slice.
    pub fn of(s: &mut [u8]) -> MutBytes {
        MutBytes {
            ptr: s.as_mut_ptr(),
            len: s.len(),
        }
    }
}

unsafe extern "C" {
    pub fn ninfer_decode_row(view: *const View, row: u64, out: *mut f32, out_len: usize) -> u32;
    pub fn ninfer_validate(view: *const View, out_row: *mut u64, out_block: *mut u64) -> u32;
    pub fn ninfer_last_error_message(buf: *mut c_char, len: usize) -> usize;
}
