//! Rust images of the C ABI's structs for the tests that call the `ninfer_*` symbols
//! directly (the library's own Rust types are not used, so a layout mismatch between the
//! header and the library would show up here), and the declarations several tests share.
#![allow(dead_code)]

use std::ffi::c_char;

// Links the library so its `ninfer_*` symbols resolve.
use ninfer as _;

/// Every CPU tier of `linear::Isa::ALL` this machine runs; each one it lacks is named on
/// stderr (skipped, never silently).
pub fn isas() -> Vec<ninfer::linear::Isa> {
    ninfer::linear::Isa::ALL
        .into_iter()
        .filter(|i| {
            let ok = i.available();
            if !ok {
                eprintln!(
                    "note: no {} on this machine, its tier is not tested",
                    i.name()
                );
            }
            ok
        })
        .collect()
}

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

// Plain IEEE rounding oracles (from the definitions, independent of the `half` crate the
// library uses).

/// The binade exponent of a positive finite f64 (floor(log2 a)), from its bits.
pub fn binade(a: f64) -> i32 {
    let bits = a.to_bits();
    let e = ((bits >> 52) & 0x7FF) as i32;
    assert!(e != 0, "f64 subnormal not expected here");
    e - 1023
}

/// f32 → bfloat16, round to nearest, ties to even (finite inputs).
pub fn bf16_rne(x: f32) -> u16 {
    let sign = ((x.to_bits() >> 16) & 0x8000) as u16;
    let a = x.abs() as f64;
    if a == 0.0 {
        return sign;
    }
    // bf16 has 8 significant bits and binary32's exponent range (subnormal quantum 2^-133).
    let q = if a < 2f64.powi(-126) {
        -133
    } else {
        binade(a) - 7
    };
    let r = (a / 2f64.powi(q)).round_ties_even() * 2f64.powi(q);
    if r >= 2f64.powi(128) {
        return sign | 0x7F80;
    }
    sign | (((r as f32).to_bits() >> 16) as u16)
}

/// f32 → binary16, round to nearest, ties to even (finite inputs; overflow → ±Inf).
pub fn f16_rne(x: f32) -> u16 {
    let sign = ((x.to_bits() >> 16) & 0x8000) as u16;
    let a = x.abs() as f64;
    if a == 0.0 {
        return sign;
    }
    let q = if a < 2f64.powi(-14) {
        -24
    } else {
        binade(a) - 10
    };
    let m = (a / 2f64.powi(q)).round_ties_even();
    let r = m * 2f64.powi(q);
    if r >= 65536.0 {
        return sign | 0x7C00;
    }
    if r < 2f64.powi(-14) {
        return sign | m as u16; // subnormal: the count of 2^-24 quanta
    }
    let e = binade(r);
    let mant = (r / 2f64.powi(e - 10)) as u16 - 1024;
    sign | (((e + 15) as u16) << 10) | mant
}
pub mod random;
