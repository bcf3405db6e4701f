//! The CUDA kernels' arithmetic run on the CPU: `harness.cpp` compiles the kernels'
//! `nf_*.cuh` headers as host C++ (`c++ -ffp-contract=off`) and composes them in the
//! kernels' order; these tests compare its outputs bit for bit with the library's CPU path
//! on every format and activation profile the kernels cover, and its word conversions with
//! the library's on every word. CI has no GPU: this is where the kernels' numerics are
//! proved; the device run (`scripts/device-check.sh`) then proves the indexing.

use super::abi::NfWeight;
use super::testdata::{Rng, payload, same, valid_payload};
use crate::layouts;
use crate::linear::{Activation, Isa, PreparedWeight, q8_1};
use crate::registry::{Category, Format, LAYOUTS, compatible};
use crate::view::WeightView;
use std::ffi::{CString, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The kernels' source folder.
fn kernels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/linear/cuda/kernels")
}

/// `nf_tables.cuh` as generated from the library's registry and tables (the kernels' one
/// source of format numbers and codebooks).
fn tables_source() -> String {
    let mut s = String::from(
        "// Generated from the library's registry and tables by src/linear/cuda/host/mod.rs\n\
         // (`NINFER_REGEN_CUDA_TABLES=1 cargo test --lib cuda_tables`): do not edit.\n\
         #pragma once\n#include \"nf_math.cuh\"\n\n",
    );
    for f in Format::all() {
        s += &format!(
            "#define NF_FMT_{} {}\n",
            f.name().to_ascii_uppercase(),
            f as u32
        );
    }
    for d in [crate::Dtype::F32, crate::Dtype::Bf16, crate::Dtype::F16] {
        s += &format!(
            "#define NF_DTYPE_{} {}\n",
            d.name().to_ascii_uppercase(),
            d as u32
        );
    }
    s += "\n// GGUF block layouts (the library's block descriptors): bytes per block and the byte\n\
          // offset of each field.\n";
    for b in &crate::formats::gguf::blocks::BLOCK_TYPES {
        s += &format!("#define NF_{}_BYTES {}\n", b.name, b.bytes);
        for f in b.fields {
            s += &format!(
                "#define NF_{}_{} {}\n",
                b.name,
                f.name.to_ascii_uppercase(),
                f.at
            );
        }
    }
    s += "\n#ifdef NF_DEVICE_CODE\n#define NF_TABLE __device__ const\n#else\n\
          #define NF_TABLE static const\n#endif\n\n";
    let kv: Vec<String> = crate::formats::gguf::grids::KVALUES_IQ4NL
        .iter()
        .map(|v| v.to_string())
        .collect();
    s += &format!(
        "// IQ4_NL / IQ4_XS codebook.\nNF_TABLE nf_i8 nf_kvalues_iq4nl[16] = {{{}}};\n",
        kv.join(", ")
    );
    // Signed-byte tables packed four entries per little-endian word (`nf_lookup16`), as
    // compile-time constants.
    let words = |t: &[i8]| -> String {
        t.chunks(4)
            .map(|c| {
                let w = c
                    .iter()
                    .enumerate()
                    .fold(0u32, |w, (i, &v)| w | ((v as u8 as u32) << (8 * i)));
                format!("0x{w:08x}u")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    s += &format!(
        "// The same codebook as four words of four signed bytes.\n#define NF_IQ4NL_WORDS {{{}}}\n",
        words(&crate::formats::gguf::grids::KVALUES_IQ4NL)
    );
    let twice: Vec<i8> = (0..16u32)
        .map(|c| {
            let m = (2.0 * crate::words::e2m1::MAGNITUDES[(c & 7) as usize]) as i8;
            if c & 8 != 0 { -m } else { m }
        })
        .collect();
    s += &format!(
        "// Twice the E2M1 value of each code word 0..15 (an integer), four signed bytes per \
         word.\n#define NF_TWICE_E2M1_WORDS {{{}}}\n",
        words(&twice)
    );
    let mags: Vec<String> = crate::words::e2m1::MAGNITUDES
        .iter()
        .map(|v| format!("{v:?}f"))
        .collect();
    s += &format!(
        "// E2M1 magnitudes of the code words 0..7.\nNF_TABLE float nf_e2m1_magnitudes[8] = {{{}}};\n",
        mags.join(", ")
    );
    use crate::formats::gguf::grids as g;
    let u64s = |name: &str, t: &[u64]| -> String {
        let body: Vec<String> = t.iter().map(|v| format!("0x{v:016x}ull")).collect();
        format!(
            "NF_TABLE nf_u64 {name}[{}] = {{\n    {}}};\n",
            t.len(),
            body.chunks(4)
                .map(|c| c.join(", "))
                .collect::<Vec<_>>()
                .join(",\n    ")
        )
    };
    let u32s = |name: &str, t: &[u32]| -> String {
        let body: Vec<String> = t.iter().map(|v| format!("0x{v:08x}u")).collect();
        format!(
            "NF_TABLE nf_u32 {name}[{}] = {{\n    {}}};\n",
            t.len(),
            body.chunks(6)
                .map(|c| c.join(", "))
                .collect::<Vec<_>>()
                .join(",\n    ")
        )
    };
    let u8s = |name: &str, t: &[u8]| -> String {
        let body: Vec<String> = t.iter().map(|v| v.to_string()).collect();
        format!(
            "NF_TABLE nf_u8 {name}[{}] = {{\n    {}}};\n",
            t.len(),
            body.chunks(16)
                .map(|c| c.join(", "))
                .collect::<Vec<_>>()
                .join(",\n    ")
        )
    };
    s += "// ggml's i-quant grids and sign tables.\n";
    s += &u64s("nf_iq2xxs_grid", &g::IQ2XXS_GRID);
    s += &u64s("nf_iq2xs_grid", &g::IQ2XS_GRID);
    s += &u64s("nf_iq2s_grid", &g::IQ2S_GRID);
    s += &u32s("nf_iq3xxs_grid", &g::IQ3XXS_GRID);
    s += &u32s("nf_iq3s_grid", &g::IQ3S_GRID);
    s += &u64s("nf_iq1s_grid", &g::IQ1S_GRID);
    s += &u8s("nf_ksigns_iq2xs", &g::KSIGNS_IQ2XS);
    s += &u8s("nf_kmask_iq2xs", &g::KMASK_IQ2XS);
    s
}

#[test]
fn cuda_tables_match_the_library() {
    let path = kernels().join("nf_tables.cuh");
    let want = tables_source();
    if std::env::var_os("NINFER_REGEN_CUDA_TABLES").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{path:?} is stale: run `NINFER_REGEN_CUDA_TABLES=1 cargo test --lib cuda_tables`"
    );
}

/// The compiled harness.
struct Harness {
    q8_1: unsafe extern "C" fn(*const f32, i32, i32, *mut i8, *mut f32, *mut i32),
    exact: unsafe extern "C" fn(i32, *const NfWeight, *const f32, i32, *mut f32) -> i32,
    q8: unsafe extern "C" fn(i32, *const NfWeight, *const f32, i32, *mut f32) -> i32,
    decode: unsafe extern "C" fn(i32, *const NfWeight, i32, i32, *mut f32) -> i32,
    swizzle: unsafe extern "C" fn(u64, u64, u64) -> u64,
    f16_to_f32: unsafe extern "C" fn(u32) -> f32,
    f32_to_f16: unsafe extern "C" fn(f32) -> u32,
    f32_to_bf16: unsafe extern "C" fn(f32) -> u32,
    e4m3fn_to_f32: unsafe extern "C" fn(u32) -> f32,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ninfer-cuda-host-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let so = dir.join("libnf_host.so");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/linear/cuda/host/harness.cpp");
        let out = std::process::Command::new("c++")
            .args(["-std=c++17", "-O2", "-ffp-contract=off", "-fno-fast-math"])
            .args(["-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(&src)
            .output()
            .expect("the CUDA host harness needs a C++17 compiler as `c++`");
        assert!(
            out.status.success(),
            "harness.cpp does not compile:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = CString::new(so.to_str().unwrap()).unwrap();
        // SAFETY: dlopen of a library this test just built; the symbols are looked up by
        // name and transmuted to the signatures harness.cpp declares for them.
        unsafe {
            let lib = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            assert!(!lib.is_null(), "dlopen {so:?}");
            fn sym<T: Copy>(lib: *mut c_void, name: &str) -> T {
                assert_eq!(size_of::<T>(), size_of::<*mut c_void>());
                let c = CString::new(name).unwrap();
                // SAFETY: see above; T is the function pointer type of `name`.
                unsafe {
                    let p = libc::dlsym(lib, c.as_ptr());
                    assert!(!p.is_null(), "{name} missing");
                    std::mem::transmute_copy::<*mut c_void, T>(&p)
                }
            }
            Harness {
                q8_1: sym(lib, "nfh_q8_1"),
                exact: sym(lib, "nfh_exact"),
                q8: sym(lib, "nfh_q8"),
                decode: sym(lib, "nfh_decode"),
                swizzle: sym(lib, "nfh_nvfp4_scale_offset"),
                f16_to_f32: sym(lib, "nfh_f16_to_f32"),
                f32_to_f16: sym(lib, "nfh_f32_to_f16"),
                f32_to_bf16: sym(lib, "nfh_f32_to_bf16"),
                e4m3fn_to_f32: sym(lib, "nfh_e4m3fn_to_f32"),
            }
        }
    })
}

#[test]
fn word_conversions_match_the_library_on_every_word() {
    let h = harness();
    for w in 0..=u16::MAX {
        // SAFETY: plain value functions of the harness.
        let got = unsafe { (h.f16_to_f32)(w as u32) };
        assert!(same(got, half::f16::from_bits(w).to_f32()), "f16 {w:#06x}");
    }
    for w in 0..=255u8 {
        let got = unsafe { (h.e4m3fn_to_f32)(w as u32) };
        assert!(
            same(got, crate::words::e4m3fn::decode(w)),
            "e4m3fn {w:#04x}"
        );
    }
    let mut rng = Rng(7);
    let mut values: Vec<f32> = (0..200_000)
        .map(|_| f32::from_bits(rng.next() as u32))
        .collect();
    // Every rounding boundary region of binary16 and bf16 (subnormals, ties, overflow).
    for e in 96..=160u32 {
        for m in [
            0u32, 1, 0xFFF, 0x1000, 0x1001, 0x2000, 0x3000, 0x7FFF, 0x8000, 0x7FFFFF,
        ] {
            for s in [0, 1u32 << 31] {
                values.push(f32::from_bits(s | e << 23 | m));
            }
        }
    }
    values.extend([
        65504.0,
        65519.99,
        65520.0,
        f32::INFINITY,
        f32::NAN,
        -0.0,
        0.0,
    ]);
    for v in values {
        let (a, b) = unsafe { ((h.f32_to_f16)(v), (h.f32_to_bf16)(v)) };
        let (wa, wb) = (half::f16::from_f32(v), half::bf16::from_f32(v));
        if v.is_nan() {
            assert!(
                half::f16::from_bits(a as u16).is_nan() && half::bf16::from_bits(b as u16).is_nan()
            );
        } else {
            assert_eq!(a as u16, wa.to_bits(), "f16 of {v:e} ({:#x})", v.to_bits());
            assert_eq!(b as u16, wb.to_bits(), "bf16 of {v:e}");
        }
    }
}

#[test]
fn nvfp4_swizzle_offsets_match_the_layout() {
    let h = harness();
    for nkb in [1usize, 3, 4, 5, 8, 13, 64] {
        for m in (0..400).step_by(7) {
            for kb in 0..nkb {
                let got = unsafe { (h.swizzle)(m as u64, kb as u64, nkb as u64) };
                assert_eq!(got as usize, layouts::block_scale::offset(m, kb, nkb));
            }
        }
    }
}

#[test]
fn q8_1_blocks_match_the_cpu_quantizer() {
    let h = harness();
    let mut rng = Rng(11);
    let k = 32 * 64;
    let mut x: Vec<f32> = (0..k)
        .map(|i| match i % 97 {
            0 => 1e-30,
            1 => 3e38,
            2 => -0.5 / 127.0,
            _ => rng.unit() * [1.0, 1e-3, 1e4, 8e6, 1e-38][i / 32 % 5],
        })
        .collect();
    x[32 * 7 + 3] = f32::NAN; // a non-finite block
    x[32 * 9] = f32::INFINITY;
    x[32 * 11..32 * 12].fill(0.0); // an all-zero block
    for v in &mut x[32 * 13..32 * 14] {
        *v = 1e-39 * rng.unit(); // 1/d overflows
    }
    let (mut q, mut d, mut s) = (vec![0i8; k], vec![0f32; k / 32], vec![0i32; k / 32]);
    unsafe {
        (h.q8_1)(
            x.as_ptr(),
            1,
            k as i32,
            q.as_mut_ptr(),
            d.as_mut_ptr(),
            s.as_mut_ptr(),
        )
    };
    let mut blocks = vec![0u8; k / 32 * q8_1::BLOCK_Q8_1_BYTES];
    q8_1::quantize_row_q8_1(&x, &mut blocks).unwrap();
    for (b, blk) in blocks.chunks_exact(q8_1::BLOCK_Q8_1_BYTES).enumerate() {
        let dw = half::f16::from_bits(u16::from_le_bytes([blk[0], blk[1]])).to_f32();
        assert!(same(d[b], dw), "block {b}: d {} vs {dw}", d[b]);
        let codes: Vec<i8> = blk[4..].iter().map(|&c| c as i8).collect();
        assert_eq!(&q[32 * b..32 * b + 32], &codes[..], "block {b}");
        assert_eq!(
            s[b],
            codes.iter().map(|&c| c as i32).sum::<i32>(),
            "block {b}"
        );
    }
}

/// The kernels' host build against the CPU path (scalar and the best instruction set),
/// bit for bit, for every format / layout / profile the kernels cover: K with partial
/// groups and tails, N not a multiple of anything, M = 1, 2, 7, activations with tiny,
/// large and (one row) non-finite values. Returns the outputs compared per profile.
fn compare_all(activation: Activation) -> usize {
    let h = harness();
    let mut rng = Rng(3);
    let mut compared = 0;
    for format in Format::all() {
        for layout in LAYOUTS.iter().map(|l| l.0) {
            if !compatible(format, layout) {
                continue;
            }
            let Ok(plan) = super::super::plan::Plan::with(format, layout, activation) else {
                continue;
            };
            // Shapes the format admits: K with partial groups and scalar tails in the
            // exact profile, multiples of 32 (and of the block) under q8_1.
            let ks: &[usize] = match activation {
                Activation::Q8_1 | Activation::Q8K => &[96, 256, 1280],
                Activation::Exact => &[16, 37, 48, 200, 1040],
            };
            let mut covered = false;
            for &k in ks {
                let n = 9;
                if layouts::plane_sizes(format, layout, n, k).is_err()
                    || (format.info().category == Category::GgufBlock
                        && k % format.info().block_values as usize != 0)
                {
                    continue;
                }
                let p = payload(format, layout, n, k, &mut rng);
                let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
                let desc = NfWeight::host(&view).unwrap();
                let m = 7;
                let mut x: Vec<f32> = (0..m * k)
                    .map(|i| rng.unit() * if i % 29 == 0 { 50.0 } else { 1.0 })
                    .collect();
                x[k + 5] = 1e-38; // row 1: tiny values (outside the scaled orders' range)
                x[3 * k + 1] = f32::INFINITY; // row 3: non-finite
                let mut yh = vec![0f32; m * n];
                let f = format as i32;
                let rc = unsafe {
                    match activation {
                        Activation::Exact => {
                            (h.exact)(f, &desc, x.as_ptr(), m as i32, yh.as_mut_ptr())
                        }
                        Activation::Q8_1 | Activation::Q8K => {
                            (h.q8)(f, &desc, x.as_ptr(), m as i32, yh.as_mut_ptr())
                        }
                    }
                };
                if rc != 0 {
                    break;
                }
                covered = true;
                let mut w = PreparedWeight::new(view).unwrap();
                w.set_activation(activation).unwrap();
                assert_eq!(w.plan, plan);
                for isa in Isa::tested() {
                    w.set_isa(isa).unwrap();
                    for mm in [1, 2, m] {
                        let mut y = vec![0f32; mm * n];
                        w.forward_f32(&x[..mm * k], mm, None, &mut y).unwrap();
                        for (i, (&a, &b)) in y.iter().zip(&yh).enumerate() {
                            assert!(
                                same(a, b),
                                "{format} {layout} {activation:?} K={k} {isa:?} M={mm}: \
                                 output {i} (row {}, col {}): CPU {a:e} ({:#x}), kernels {b:e} ({:#x})",
                                i / n,
                                i % n,
                                a.to_bits(),
                                b.to_bits()
                            );
                        }
                        compared += y.len();
                    }
                }
            }
            println!("{format} {layout} {activation:?}: kernels cover it: {covered}");
        }
    }
    compared
}

#[test]
fn kernels_match_the_cpu_in_the_exact_profile() {
    let n = compare_all(Activation::Exact);
    println!("{n} outputs bit-identical");
    assert!(n > 0);
}

#[test]
fn kernels_match_the_cpu_in_the_q8_1_profile() {
    let n = compare_all(Activation::Q8_1);
    println!("{n} outputs bit-identical");
    assert!(n > 0);
}

/// The device row decoder's arithmetic (`nf_decoded`, which `nf_decode<F>` stores) against
/// `decode::decode_row`, bit for bit, on every decodable format and layout: random
/// payloads, several rows (all of them, and a range not starting at row 0), every K of a
/// list the format admits.
#[test]
fn device_decoders_match_decode_row() {
    let h = harness();
    let mut rng = Rng(5);
    let mut formats = 0;
    for format in Format::all() {
        if !crate::decode::is_decodable_format(format) {
            continue;
        }
        let bv = format.info().block_values as usize;
        let mut compared = 0;
        for layout in LAYOUTS.iter().map(|l| l.0) {
            if !compatible(format, layout) {
                continue;
            }
            for k in [16usize, 32, 37, 48, 64, 96, 200, 256, 768, 1040] {
                let n = 9;
                if layouts::plane_sizes(format, layout, n, k).is_err()
                    || (format.info().category == Category::GgufBlock && k % bv != 0)
                {
                    continue;
                }
                let p = valid_payload(format, layout, n, k, &mut rng);
                let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
                let desc = NfWeight::host(&view).unwrap();
                let mut want = vec![0f32; n * k];
                let decoded = want
                    .chunks_exact_mut(k)
                    .enumerate()
                    .all(|(r, row)| crate::decode::decode_row(&view, r as u64, row).is_ok());
                if !decoded {
                    // Random codes in a grouped format's padding columns: not a valid row.
                    assert!(k % 128 != 0, "{format} K={k}: payload not decodable");
                    continue;
                }
                for (first, count) in [(0, n), (2, 6), (n - 1, 1)] {
                    let mut got = vec![0f32; count * k];
                    // SAFETY: a descriptor of `view`'s host planes; `got` holds count × K.
                    let rc = unsafe {
                        (h.decode)(
                            format as i32,
                            &desc,
                            first as i32,
                            count as i32,
                            got.as_mut_ptr(),
                        )
                    };
                    assert_eq!(rc, 0, "{format}: the kernels do not decode it");
                    for (i, (&g, &w)) in got.iter().zip(&want[first * k..]).enumerate() {
                        assert!(
                            same(g, w),
                            "{format} {layout} K={k}: row {}, element {}: CPU {w:e} ({:#x}), \
                             kernels {g:e} ({:#x})",
                            first + i / k,
                            i % k,
                            w.to_bits(),
                            g.to_bits()
                        );
                    }
                    compared += got.len();
                }
            }
        }
        assert!(compared > 0, "{format}: no shape compared");
        #[cfg(feature = "cuda")]
        assert!(
            super::weight::decodes(format),
            "{format}: decodes() says no"
        );
        println!("{format}: {compared} decoded values bit-identical");
        formats += 1;
    }
    assert_eq!(formats, 29);
}
