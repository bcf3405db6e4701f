//! Sets the SONAME of the shared library: plain cargo sets none, and C users link against
//! `libninfer.so.0` so that an ABI-compatible update replaces the file in place.
//!
//! With the `cuda` feature it also compiles the CUDA kernels (src/linear/cuda/kernels/) with
//! NVRTC, ahead of time: one CUBIN per supported architecture and PTX for newer GPUs, which
//! the library embeds (users need only the NVIDIA driver). NVRTC is found through
//! `NINFER_NVRTC` (the path of libnvrtc.so), `CUDA_PATH` / `CUDA_HOME`, /usr/local/cuda, or
//! the PyPI wheel `nvidia-cuda-nvrtc-cu12` of `python3`.
fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libninfer.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "cuda")]
    cuda::build();
}

#[cfg(feature = "cuda")]
mod cuda {
    use std::ffi::{CString, c_char, c_int, c_void};
    use std::path::{Path, PathBuf};

    /// Architectures with a CUBIN; `PTX` is also embedded as PTX for newer ones.
    const CUBINS: [u32; 6] = [80, 86, 89, 90, 100, 120];
    const PTX: u32 = 120;

    type Prog = *mut c_void;
    struct Nvrtc {
        _lib: libloading::Library,
        create: unsafe extern "C" fn(
            *mut Prog,
            *const c_char,
            *const c_char,
            c_int,
            *const *const c_char,
            *const *const c_char,
        ) -> c_int,
        compile: unsafe extern "C" fn(Prog, c_int, *const *const c_char) -> c_int,
        log_size: unsafe extern "C" fn(Prog, *mut usize) -> c_int,
        log: unsafe extern "C" fn(Prog, *mut c_char) -> c_int,
        cubin_size: unsafe extern "C" fn(Prog, *mut usize) -> c_int,
        cubin: unsafe extern "C" fn(Prog, *mut c_char) -> c_int,
        ptx_size: unsafe extern "C" fn(Prog, *mut usize) -> c_int,
        ptx: unsafe extern "C" fn(Prog, *mut c_char) -> c_int,
        destroy: unsafe extern "C" fn(*mut Prog) -> c_int,
        version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
    }

    fn candidates() -> Vec<PathBuf> {
        let mut v = Vec::new();
        if let Some(p) = std::env::var_os("NINFER_NVRTC") {
            v.push(PathBuf::from(p));
        }
        for var in ["CUDA_PATH", "CUDA_HOME"] {
            if let Some(p) = std::env::var_os(var) {
                v.push(Path::new(&p).join("lib64/libnvrtc.so"));
            }
        }
        v.push("/usr/local/cuda/lib64/libnvrtc.so".into());
        let py = std::process::Command::new("python3")
            .args([
                "-c",
                "import nvidia.cuda_nvrtc as m; print(list(m.__path__)[0])",
            ])
            .output();
        if let Ok(out) = py {
            let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !dir.is_empty() {
                v.push(Path::new(&dir).join("lib/libnvrtc.so.12"));
            }
        }
        v
    }

    fn load() -> Nvrtc {
        let tried = candidates();
        for path in &tried {
            // SAFETY: loading NVRTC runs its initializers only; the symbols are declared
            // with NVRTC's documented C signatures.
            unsafe {
                let Ok(lib) = libloading::Library::new(path) else {
                    continue;
                };
                macro_rules! sym {
                    ($n:literal) => {
                        *lib.get($n)
                            .unwrap_or_else(|e| panic!("NVRTC {path:?}: {e}"))
                    };
                }
                return Nvrtc {
                    create: sym!(b"nvrtcCreateProgram\0"),
                    compile: sym!(b"nvrtcCompileProgram\0"),
                    log_size: sym!(b"nvrtcGetProgramLogSize\0"),
                    log: sym!(b"nvrtcGetProgramLog\0"),
                    cubin_size: sym!(b"nvrtcGetCUBINSize\0"),
                    cubin: sym!(b"nvrtcGetCUBIN\0"),
                    ptx_size: sym!(b"nvrtcGetPTXSize\0"),
                    ptx: sym!(b"nvrtcGetPTX\0"),
                    destroy: sym!(b"nvrtcDestroyProgram\0"),
                    version: sym!(b"nvrtcVersion\0"),
                    _lib: lib,
                };
            }
        }
        panic!(
            "the `cuda` feature compiles the kernels with NVRTC, which was not found (tried \
             {tried:?}). Install it (`pip install nvidia-cuda-nvrtc-cu12`, or a CUDA toolkit) \
             or set NINFER_NVRTC to the path of libnvrtc.so."
        );
    }

    /// Compiles `src` for `arch` ("sm_90" gives a CUBIN, "compute_120" PTX only); returns
    /// the image and the compile log.
    fn compile(n: &Nvrtc, src: &str, include: &Path, arch: &str) -> (Vec<u8>, String) {
        let src = CString::new(src).unwrap();
        let name = CString::new("nf_kernels.cu").unwrap();
        let opts: Vec<CString> = [
            format!("--gpu-architecture={arch}"),
            format!("--include-path={}", include.display()),
            "-std=c++17".into(),
            // Normative evaluation orders: no contraction, no flush-to-zero, IEEE division
            // and square root (the kernels also use the explicit _rn intrinsics).
            "--fmad=false".into(),
            "--ftz=false".into(),
            "--prec-div=true".into(),
            "--prec-sqrt=true".into(),
            "--ptxas-options=-v".into(),
        ]
        .into_iter()
        .map(|s| CString::new(s).unwrap())
        .collect();
        let ptrs: Vec<*const c_char> = opts.iter().map(|s| s.as_ptr()).collect();
        // SAFETY: NVRTC's C API with valid NUL-terminated strings and sized buffers.
        unsafe {
            let mut prog: Prog = std::ptr::null_mut();
            let rc = (n.create)(
                &mut prog,
                src.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            );
            assert_eq!(rc, 0, "nvrtcCreateProgram: {rc}");
            let rc = (n.compile)(prog, ptrs.len() as c_int, ptrs.as_ptr());
            let mut size = 0usize;
            (n.log_size)(prog, &mut size);
            let mut log = vec![0u8; size.max(1)];
            (n.log)(prog, log.as_mut_ptr().cast());
            let log = String::from_utf8_lossy(&log)
                .trim_end_matches('\0')
                .to_string();
            assert_eq!(rc, 0, "NVRTC failed for {arch}:\n{log}");
            let ptx = arch.starts_with("compute_");
            let mut size = 0usize;
            let image = if ptx {
                (n.ptx_size)(prog, &mut size);
                let mut b = vec![0u8; size];
                (n.ptx)(prog, b.as_mut_ptr().cast());
                b // NUL-terminated by NVRTC
            } else {
                (n.cubin_size)(prog, &mut size);
                let mut b = vec![0u8; size];
                (n.cubin)(prog, b.as_mut_ptr().cast());
                b
            };
            (n.destroy)(&mut prog);
            (image, log)
        }
    }

    pub fn build() {
        let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
        let kernels = root.join("src/linear/cuda/kernels");
        for e in std::fs::read_dir(&kernels).unwrap() {
            println!("cargo:rerun-if-changed={}", e.unwrap().path().display());
        }
        for var in ["NINFER_NVRTC", "CUDA_PATH", "CUDA_HOME"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        let src = std::fs::read_to_string(kernels.join("nf_kernels.cu")).unwrap();
        let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
        let n = load();
        let (mut major, mut minor) = (0, 0);
        // SAFETY: plain out-parameters.
        unsafe { (n.version)(&mut major, &mut minor) };
        let mut list = String::from("pub static IMAGES: &[(u32, bool, &[u8])] = &[\n");
        let mut logs = format!("NVRTC {major}.{minor}\n");
        let archs = CUBINS
            .iter()
            .map(|a| (format!("sm_{a}"), *a, false))
            .chain([(format!("compute_{PTX}"), PTX, true)])
            .collect::<Vec<_>>();
        // One NVRTC program per architecture, compiled in parallel (a failed compile's
        // panic, with NVRTC's log, is raised again here).
        let built: Vec<(Vec<u8>, String)> = std::thread::scope(|s| {
            let jobs: Vec<_> = archs
                .iter()
                .map(|(arch, _, _)| s.spawn(|| compile(&n, &src, &kernels, arch)))
                .collect();
            jobs.into_iter()
                .map(|j| j.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        for ((arch, a, ptx), (image, log)) in archs.into_iter().zip(built) {
            let file = out.join(format!("nf_{arch}.{}", if ptx { "ptx" } else { "cubin" }));
            std::fs::write(&file, &image).unwrap();
            list += &format!(
                "    ({a}, {ptx}, include_bytes!({:?})),\n",
                file.display().to_string()
            );
            logs += &format!("== {arch}\n{log}\n");
        }
        list += "];\n";
        std::fs::write(out.join("nf_ptxas.txt"), &logs).unwrap();
        list += &format!(
            "/// NVRTC's and ptxas's reports of the build (registers, spills).\n\
             pub static BUILD_LOG: &str = include_str!({:?});\n",
            out.join("nf_ptxas.txt").display().to_string()
        );
        std::fs::write(out.join("nf_images.rs"), list).unwrap();
    }
}
