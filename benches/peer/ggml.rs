//! The benchmark peer: ggml's own dequantizers (`to_float`) and dot products (`vec_dot`),
//! loaded at run time from a build made by `scripts/build-ggml.sh` (default
//! `.cache/ggml/lib`, or `$NINFER_GGML_DIR`). Benchmarks only: nothing here is an oracle.

#![allow(dead_code)]

use std::ffi::{CStr, CString, c_void};
use std::path::PathBuf;

type ToFloat = unsafe extern "C" fn(x: *const c_void, y: *mut f32, k: i64);
type FromFloat = unsafe extern "C" fn(x: *const f32, y: *mut c_void, k: i64);
type VecDot = unsafe extern "C" fn(
    n: i32,
    s: *mut f32,
    bs: usize,
    x: *const c_void,
    bx: usize,
    y: *const c_void,
    by: usize,
    nrc: i32,
);

/// `struct ggml_type_traits` of ggml.h (0.25.3).
#[repr(C)]
struct TypeTraits {
    type_name: *const std::ffi::c_char,
    blck_size: i64,
    blck_size_interleave: i64,
    type_size: usize,
    is_quantized: bool,
    to_float: Option<ToFloat>,
    from_float_ref: Option<FromFloat>,
}

/// `struct ggml_type_traits_cpu` of ggml-cpu.h (0.25.3).
#[repr(C)]
struct TypeTraitsCpu {
    from_float: Option<FromFloat>,
    vec_dot: Option<VecDot>,
    vec_dot_type: u32,
    nrows: i64,
}

/// A loaded ggml.
pub struct Ggml {
    traits: unsafe extern "C" fn(u32) -> *const TypeTraits,
    traits_cpu: unsafe extern "C" fn(u32) -> *const TypeTraitsCpu,
    /// Where it was loaded from.
    pub dir: PathBuf,
}

/// One type's dot-product kernel: the activation is first quantized to `vec_dot_type`.
pub struct Dot {
    pub vec_dot: VecDot,
    pub vec_dot_type: u32,
    pub from_float: FromFloat,
    pub act_block_values: usize,
    pub act_block_bytes: usize,
}

unsafe fn open(path: &std::path::Path) -> Option<*mut c_void> {
    let c = CString::new(path.to_str()?).ok()?;
    // SAFETY: dlopen with a valid C string; RTLD_GLOBAL so ggml-cpu resolves ggml-base.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    (!h.is_null()).then_some(h)
}

unsafe fn sym(h: *mut c_void, name: &CStr) -> Option<*mut c_void> {
    // SAFETY: h is a live handle from dlopen, name is NUL-terminated.
    let p = unsafe { libc::dlsym(h, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

impl Ggml {
    /// Loads ggml if a build is present, else `None` (benchmarks then print ninfer alone).
    pub fn load() -> Option<Ggml> {
        let dir = std::env::var_os("NINFER_GGML_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache/ggml/lib"));
        // SAFETY: loading a shared library runs its constructors; ggml's are benign. The
        // symbol types are the declarations of ggml.h / ggml-cpu.h 0.25.3.
        unsafe {
            let base = open(&dir.join("libggml-base.so"))?;
            let cpu = open(&dir.join("libggml-cpu.so"))?;
            let traits = sym(base, c"ggml_get_type_traits")?;
            let traits_cpu = sym(cpu, c"ggml_get_type_traits_cpu")?;
            let init: unsafe extern "C" fn() = std::mem::transmute(sym(cpu, c"ggml_cpu_init")?);
            init();
            Some(Ggml {
                traits: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(u32) -> *const TypeTraits,
                >(traits),
                traits_cpu: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(u32) -> *const TypeTraitsCpu,
                >(traits_cpu),
                dir,
            })
        }
    }

    /// ggml's `to_float` for a ggml type id.
    pub fn to_float(&self, ty: u32) -> Option<ToFloat> {
        // SAFETY: ggml returns a pointer into its static traits table for valid ids.
        unsafe { (self.traits)(ty).as_ref()?.to_float }
    }

    /// ggml's scalar reference quantizer (`quantize_row_*_ref`) for a ggml type id.
    pub fn quantize_ref(&self, ty: u32) -> Option<FromFloat> {
        // SAFETY: as for `to_float`.
        unsafe { (self.traits)(ty).as_ref()?.from_float_ref }
    }

    /// ggml's CPU `vec_dot` for a ggml type id, with the activation type it needs.
    pub fn dot(&self, ty: u32) -> Option<Dot> {
        // SAFETY: as above.
        unsafe {
            let t = (self.traits_cpu)(ty).as_ref()?;
            let vt = t.vec_dot_type;
            let a = (self.traits)(vt).as_ref()?;
            let from_float = (self.traits_cpu)(vt).as_ref()?.from_float?;
            Some(Dot {
                vec_dot: t.vec_dot?,
                vec_dot_type: vt,
                from_float,
                act_block_values: a.blck_size as usize,
                act_block_bytes: a.type_size,
            })
        }
    }
}
