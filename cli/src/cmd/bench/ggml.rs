//! The benchmark peer: ggml's own dequantizers (`to_float`) and dot products (`vec_dot`),
//! loaded at run time from a build made by `scripts/build-ggml.sh` ([`default_dir`]:
//! `$NINFER_GGML_DIR`, else `.cache/ggml/lib` under the current directory). Benchmarks
//! only: nothing here is an oracle. Used by `ninfer bench linear` and, through `#[path]`,
//! by the library's decode and grouped benchmarks; never linked into libninfer.

#![allow(dead_code)]

use std::ffi::{CStr, CString, c_void};
use std::path::{Path, PathBuf};

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

/// The last `dlerror()` message, or `what` if there is none.
fn dl_error(what: &str) -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl call.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        what.to_owned()
    } else {
        // SAFETY: non-NULL, NUL-terminated (above).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

fn open(path: &Path) -> Result<*mut c_void, String> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{}: NUL in path", path.display()))?;
    // SAFETY: dlopen with a valid C string; RTLD_GLOBAL so ggml-cpu resolves ggml-base.
    // Loading runs the library's constructors; ggml's are benign.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if h.is_null() {
        Err(dl_error(&path.display().to_string()))
    } else {
        Ok(h)
    }
}

fn sym(h: *mut c_void, name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: h is a live handle from dlopen, name is NUL-terminated.
    let p = unsafe { libc::dlsym(h, name.as_ptr()) };
    if p.is_null() {
        Err(dl_error(&name.to_string_lossy()))
    } else {
        Ok(p)
    }
}

/// Where the peer is looked for by default: `$NINFER_GGML_DIR`, else `.cache/ggml/lib`
/// under the current directory (where `scripts/build-ggml.sh` puts it).
pub fn default_dir() -> PathBuf {
    std::env::var_os("NINFER_GGML_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".cache/ggml/lib"))
}

impl Ggml {
    /// Loads `libggml-base.so` and `libggml-cpu.so` from `dir`, or says why it cannot.
    pub fn load(dir: &Path) -> Result<Ggml, String> {
        let base = open(&dir.join("libggml-base.so"))?;
        let cpu = open(&dir.join("libggml-cpu.so"))?;
        let traits = sym(base, c"ggml_get_type_traits")?;
        let traits_cpu = sym(cpu, c"ggml_get_type_traits_cpu")?;
        let init = sym(cpu, c"ggml_cpu_init")?;
        // SAFETY: the symbol types are the declarations of ggml.h / ggml-cpu.h 0.25.3;
        // ggml_cpu_init takes no argument and may be called more than once.
        unsafe {
            let init: unsafe extern "C" fn() = std::mem::transmute(init);
            init();
            Ok(Ggml {
                traits: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(u32) -> *const TypeTraits,
                >(traits),
                traits_cpu: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(u32) -> *const TypeTraitsCpu,
                >(traits_cpu),
                dir: dir.to_path_buf(),
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
