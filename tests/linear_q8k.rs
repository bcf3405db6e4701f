//! The opt-in q8_K activation profile (`Activation::Q8K`, `NINFER_ACTIVATION_Q8_K`) through
//! the public Rust API and the C ABI: the product against an f64 oracle (weights decoded by
//! `decode_row`, x̂ = d·code of ggml's q8_K blocks re-read from `quantize_row_q8_k`'s
//! bytes), bit identity across instruction sets, threads and batch position, and the
//! refusals of every other (format, q8_K) pair.

mod common;
use common::random::{Rng, random_planes};
use common::*;

use ninfer::decode::decode_row;
use ninfer::linear::q8_k::{BLOCK_Q8_K_BYTES, QK_K, quantize_row_q8_k};
use ninfer::linear::{self, Activation, Device, PreparedWeight};
use ninfer::{Dtype, Error, Format, Layout, Status, WeightView};

/// Formats exercised end to end: every one with the profile (their binary16 scale fields
/// are where `random_planes` sets them, so the weights stay finite).
const FORMATS: [Format; 13] = Q8K;

/// Every format with a q8_K profile (docs/linear.md).
const Q8K: [Format; 13] = [
    Format::GgufQ2_K,
    Format::GgufQ3_K,
    Format::GgufQ4_K,
    Format::GgufQ5_K,
    Format::GgufQ6_K,
    Format::GgufIq4Xs,
    Format::GgufIq1S,
    Format::GgufIq1M,
    Format::GgufIq2Xxs,
    Format::GgufIq2Xs,
    Format::GgufIq2S,
    Format::GgufIq3Xxs,
    Format::GgufIq3S,
];

/// x̂ (f64, exact) of one activation row: d·code of each q8_K block.
fn xhat(x: &[f32]) -> Vec<f64> {
    let mut b = vec![0u8; x.len() / QK_K * BLOCK_Q8_K_BYTES];
    quantize_row_q8_k(x, &mut b).unwrap();
    b.chunks(BLOCK_Q8_K_BYTES)
        .flat_map(|blk| {
            let d = f32::from_le_bytes(blk[..4].try_into().unwrap()) as f64;
            blk[4..260].iter().map(move |&q| d * q as i8 as f64)
        })
        .collect()
}

/// The bytes per super-block and the offsets of `d` and `dmin` of the types with mins.
fn min_fields(format: Format) -> Option<(usize, usize, usize)> {
    match format {
        Format::GgufQ2_K => Some((84, 80, 82)),
        Format::GgufQ4_K => Some((144, 0, 2)),
        Format::GgufQ5_K => Some((176, 0, 2)),
        _ => None,
    }
}

/// The decoded weights; for the types with mins also split in their two terms (dmin
/// zeroed, d zeroed) for the criterion's sum of both magnitudes.
fn decoded(format: Format, n: usize, k: usize, w: &[u8]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let dec = |p: &[u8]| {
        let v = WeightView::single(format, n, k, p).unwrap();
        let mut o = vec![0f32; n * k];
        for r in 0..n {
            decode_row(&v, r as u64, &mut o[r * k..(r + 1) * k]).unwrap();
        }
        o
    };
    let all = dec(w);
    let Some((bytes, d, dmin)) = min_fields(format) else {
        return (all.clone(), all, vec![0.0; n * k]);
    };
    let zero = |at: usize| {
        let mut p = w.to_vec();
        for b in p.chunks_exact_mut(bytes) {
            b[at..at + 2].fill(0);
        }
        dec(&p)
    };
    (all, zero(dmin), zero(d))
}

#[test]
fn q8k_profile_meets_the_criterion_on_every_path() {
    let mut rng = Rng(0x5EED);
    let mut outputs = 0usize;
    for format in FORMATS {
        for k in [256usize, 1024] {
            let n = 37; // M = 1: row groups of 16, 16 and 5
            let planes = random_planes(format, n, k, &mut rng);
            let w = &planes[0];
            let (wd, wa, wb) = decoded(format, n, k, w);
            let view = WeightView::single(format, n, k, w).unwrap();
            for m in [1usize, 3, 70] {
                let x: Vec<f32> = (0..m * k)
                    .map(|i| rng.unit() * if i % 37 == 0 { 20.0 } else { 1.0 })
                    .collect();
                let mut first: Option<Vec<u32>> = None;
                for isa in isas() {
                    for threads in [1, 2] {
                        let mut p = PreparedWeight::new(view).unwrap();
                        assert_eq!(p.activation(), Activation::Q8_1);
                        p.set_activation(Activation::Q8K).unwrap();
                        assert_eq!(p.activation(), Activation::Q8K);
                        p.set_isa(isa).unwrap();
                        p.set_threads(threads).unwrap();
                        let mut y = vec![0f32; m * n];
                        p.forward_f32(&x, m, None, &mut y).unwrap();
                        let bits: Vec<u32> = y.iter().map(|v| v.to_bits()).collect();
                        match &first {
                            None => first = Some(bits),
                            Some(f) => assert_eq!(f, &bits, "{format} {isa:?} t{threads} m{m}"),
                        }
                        // Row alone = row in batch.
                        let mut y1 = vec![0f32; n];
                        p.forward_f32(&x[(m - 1) * k..], 1, None, &mut y1).unwrap();
                        for (j, v) in y1.iter().enumerate() {
                            assert_eq!(v.to_bits(), y[(m - 1) * n + j].to_bits());
                        }
                    }
                }
                let y: Vec<f32> = first.unwrap().into_iter().map(f32::from_bits).collect();
                for r in 0..m {
                    let xh = xhat(&x[r * k..(r + 1) * k]);
                    for j in 0..n {
                        let (mut yr, mut sa) = (0f64, 0f64);
                        for (c, &v) in xh.iter().enumerate() {
                            let at = j * k + c;
                            yr += wd[at] as f64 * v;
                            sa += (wa[at] as f64 * v).abs() + (wb[at] as f64 * v).abs();
                        }
                        let got = y[r * n + j] as f64;
                        let tol = linear::tolerance(k, sa, yr, Dtype::F32);
                        assert!(
                            (got - yr).abs() <= tol,
                            "{format} k{k} m{m} r{r} j{j}: {got} vs {yr} (tol {tol})"
                        );
                        outputs += 1;
                    }
                }
            }
        }
    }
    println!("{outputs} q8_K outputs within linear_f32acc_v1");
}

/// q8_K is refused (Unsupported, the setting unchanged) for every format but the GGUF
/// k-quants and 256-value i-quants, and on CUDA; activation number 3 names nothing.
#[test]
fn q8k_refusals() {
    for format in Format::all() {
        for layout in ninfer::registry::LAYOUTS.iter().map(|l| l.0) {
            if ninfer::registry::check_compatible(format, layout).is_err() {
                continue;
            }
            let want = Q8K.contains(&format);
            assert_eq!(
                linear::supported_activation(format, layout, Activation::Q8K, Device::Cpu),
                want,
                "{format} {layout}"
            );
            assert!(!linear::supported_activation(
                format,
                layout,
                Activation::Q8K,
                Device::Cuda
            ));
        }
    }
    assert_eq!(Activation::from_u32(2).unwrap(), Activation::Q8K);
    assert_eq!(Activation::Q8K.name(), "q8_K");
    assert!(matches!(
        Activation::from_u32(3),
        Err(Error::InvalidArgument(_))
    ));
    let mut rng = Rng(3);
    for format in [Format::GgufQ8_0, Format::GgufIq4Nl, Format::Bf16] {
        let k = 256;
        let planes = random_planes(format, 2, k, &mut rng);
        let view = WeightView::new(
            format,
            format.info().layout,
            2,
            k,
            [&planes[0], &planes[1], &planes[2]],
        )
        .unwrap();
        let mut p = PreparedWeight::new(view).unwrap();
        let before = p.activation();
        let e = p.set_activation(Activation::Q8K).unwrap_err();
        assert!(
            matches!(&e, Error::Unsupported(msg) if msg.contains("q8_K")),
            "{format}: {e}"
        );
        assert_eq!(p.activation(), before);
    }
}

#[repr(C)]
struct Handle {
    _private: [u8; 0],
}

unsafe extern "C" {
    fn ninfer_linear_prepare(view: *const View, device: u32, out: *mut *mut Handle) -> Status;
    fn ninfer_linear_set_activation(h: *mut Handle, activation: u32) -> Status;
    fn ninfer_linear_activation_supported(
        format: u32,
        layout: u32,
        activation: u32,
        device: u32,
    ) -> Status;
    #[allow(clippy::too_many_arguments)]
    fn ninfer_linear_forward(
        h: *const Handle,
        x: *const std::ffi::c_void,
        x_bytes: usize,
        x_dtype: u32,
        m: u64,
        k: u64,
        bias: *const f32,
        bias_len: usize,
        y: *mut std::ffi::c_void,
        y_bytes: usize,
        y_dtype: u32,
    ) -> Status;
    fn ninfer_linear_free(h: *mut Handle);
}

/// Through C: `NINFER_ACTIVATION_Q8_K` (2) on a Q4_K handle gives the Rust API's bits;
/// on Q8_0 it is UNSUPPORTED and leaves the handle usable; the support query agrees.
#[test]
fn c_q8k_profile() {
    let gl = Layout::GgufBlocksV1 as u32;
    let (q4k, q80) = (Format::GgufQ4_K as u32, Format::GgufQ8_0 as u32);
    unsafe {
        assert_eq!(
            ninfer_linear_activation_supported(q4k, gl, 2, 0),
            Status::Ok
        );
        assert_eq!(
            ninfer_linear_activation_supported(q80, gl, 2, 0),
            Status::Unsupported
        );
        assert_eq!(
            ninfer_linear_activation_supported(q4k, gl, 2, 1),
            Status::Unsupported
        );
        assert_eq!(
            ninfer_linear_activation_supported(q4k, gl, 3, 0),
            Status::InvalidArgument
        );
    }
    let mut rng = Rng(9);
    let (n, k, m) = (7usize, 512usize, 3usize);
    let w = random_planes(Format::GgufQ4_K, n, k, &mut rng).swap_remove(0);
    let x: Vec<f32> = (0..m * k).map(|_| rng.unit()).collect();
    let cv = |f: Format, w: &[u8]| View {
        format: f as u32,
        layout: gl,
        rows: n as u64,
        cols: k as u64,
        planes: [Bytes::of(w), Bytes::of(&[]), Bytes::of(&[])],
    };
    let mut y = vec![0f32; m * n];
    unsafe {
        let v = cv(Format::GgufQ4_K, &w);
        let mut h: *mut Handle = std::ptr::null_mut();
        assert_eq!(ninfer_linear_prepare(&v, 0, &mut h), Status::Ok);
        assert_eq!(ninfer_linear_set_activation(h, 2), Status::Ok);
        let st = ninfer_linear_forward(
            h,
            x.as_ptr().cast(),
            x.len() * 4,
            0,
            m as u64,
            k as u64,
            std::ptr::null(),
            0,
            y.as_mut_ptr().cast(),
            y.len() * 4,
            0,
        );
        assert_eq!(st, Status::Ok);
        ninfer_linear_free(h);
    }
    let mut p =
        PreparedWeight::new(WeightView::single(Format::GgufQ4_K, n, k, &w).unwrap()).unwrap();
    p.set_activation(Activation::Q8K).unwrap();
    let mut want = vec![0f32; m * n];
    p.forward_f32(&x, m, None, &mut want).unwrap();
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&y), bits(&want));
    // The q8_1 default gives other bits.
    p.set_activation(Activation::Q8_1).unwrap();
    p.forward_f32(&x, m, None, &mut want).unwrap();
    assert_ne!(bits(&y), bits(&want));

    let w8: Vec<u8> = (0..n * k / 32 * 34)
        .map(|i| {
            if i % 34 == 1 {
                0x20
            } else {
                (i * 37 % 251) as u8
            }
        })
        .collect();
    unsafe {
        let v = cv(Format::GgufQ8_0, &w8);
        let mut h: *mut Handle = std::ptr::null_mut();
        assert_eq!(ninfer_linear_prepare(&v, 0, &mut h), Status::Ok);
        assert_eq!(ninfer_linear_set_activation(h, 2), Status::Unsupported);
        assert_eq!(ninfer_linear_set_activation(h, 1), Status::Ok);
        ninfer_linear_free(h);
    }
}

#[path = "../cli/src/cmd/bench/ggml.rs"]
mod ggml;

/// Peer check (not in CI: needs ggml built by `scripts/build-ggml.sh`; run with
/// `NINFER_GGML_DIR=<dir> cargo test --release --test linear_q8k -- --ignored`): the q8_K
/// bytes of `quantize_row_q8_k` equal those of ggml's `quantize_row_q8_K_ref` and of its
/// CPU `quantize_row_q8_K` (the quantizer its k-quant vec_dots use) for finite rows:
/// random magnitudes over many binades, exact halves (ties), zero blocks, negative and
/// positive maxima and ties between ±max.
#[test]
#[ignore]
fn q8k_blocks_match_ggml() {
    let g = ggml::Ggml::load(&ggml::default_dir()).expect("ggml (NINFER_GGML_DIR)");
    const GGML_Q4_K: u32 = 12;
    const GGML_Q8_K: u32 = 15;
    let dot = g.dot(GGML_Q4_K).unwrap();
    assert_eq!(
        (dot.vec_dot_type, dot.act_block_bytes),
        (GGML_Q8_K, BLOCK_Q8_K_BYTES)
    );
    // The reference quantizer is not in q8_K's type traits: look it up by name (the
    // libraries were loaded RTLD_GLOBAL).
    // SAFETY: dlsym with a NUL-terminated name; a non-NULL result is ggml-quants.h's
    // `void quantize_row_q8_K_ref(const float *, block_q8_K *, int64_t)`.
    let reference: unsafe extern "C" fn(*const f32, *mut std::ffi::c_void, i64) = unsafe {
        let p = libc::dlsym(libc::RTLD_DEFAULT, c"quantize_row_q8_K_ref".as_ptr());
        assert!(!p.is_null(), "quantize_row_q8_K_ref not exported");
        std::mem::transmute(p)
    };
    let peers = [
        ("quantize_row_q8_K_ref", reference),
        ("quantize_row_q8_K (CPU)", dot.from_float),
    ];
    let mut rng = Rng(77);
    let mut blocks = 0usize;
    for case in 0..400 {
        let nb = 4;
        let scale = 2f32.powi((case % 41) as i32 * 3 - 60);
        let mut x: Vec<f32> = (0..nb * QK_K)
            .map(|i| match (case + i) % 5 {
                0 => (rng.unit() * 20.0).round() / 2.0 * scale,
                _ => rng.unit() * scale,
            })
            .collect();
        x[QK_K..2 * QK_K].fill(0.0);
        x[2 * QK_K + 7] = -3.0 * scale;
        x[2 * QK_K + 9] = 3.0 * scale;
        let mut ours = vec![0u8; nb * BLOCK_Q8_K_BYTES];
        quantize_row_q8_k(&x, &mut ours).unwrap();
        for (name, f) in peers {
            let mut theirs = vec![0u8; nb * BLOCK_Q8_K_BYTES];
            // SAFETY: x holds nb·256 floats, theirs nb block_q8_K.
            unsafe { f(x.as_ptr(), theirs.as_mut_ptr().cast(), x.len() as i64) };
            assert_eq!(ours, theirs, "{name}, case {case}");
        }
        blocks += nb;
    }
    println!("{blocks} q8_K blocks identical to ggml's two quantizers");
}
