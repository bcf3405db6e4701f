//! `linear` against independent oracles, with the named criterion `linear_f32acc_v1`
//! (docs/linear.md) asserted per output element:
//!
//!   |y − y_ref| ≤ (K + 8)·2⁻²³·(Σ_k |w_k·x_k| + |b|) + (K + 8)·2⁻¹⁴⁹
//!   (bf16 outputs: + 2⁻⁸·(|y_ref| + that bound))
//!
//! where y_ref is the f64 product of the exactly decoded weights with the activations (for
//! GGUF formats, with the q8_1 values x̂ of the activations). For the min types (Q2_K,
//! Q4_K, Q5_K) the criterion's Σ is that of the two decoding terms; the other tests use the
//! smaller Σ|w·x| (stricter) and pass with it.
//!
//! - Real weights: rows of all-MiniLM-L6-v2 quantized by libgguf (GGUF) or cast by ml_dtypes
//!   (bf16), with y_ref and Σ|w·x| computed in numpy from gguf-py's dequantizer and a numpy
//!   re-derivation of q8_1 (scripts/fixtures/linear_fixtures.py, tests/data/linear/).
//! - q8_1 bytes compared bit for bit with that numpy re-derivation.
//! - Random weights: y_ref in f64 here, W through the library's decode_row (itself tested
//!   against gguf-py) and x̂ from the q8_1 arithmetic written plainly below.
//! - Bit identity: AVX2 = scalar, threads 1 = 2, row m of a batch = the same row alone.

mod common;
use common::isas;
use common::random::{Rng, random_planes, random_weight};
use ninfer::linear::{self, Device, Isa, PreparedWeight, q8_1};
use ninfer::{Dtype, Error, Format, Layout, WeightView, decode};
use std::path::PathBuf;

fn data(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/linear")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!("fixture {p:?} missing ({e}): run python3 scripts/fixtures/linear_fixtures.py")
    })
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|w| f32::from_le_bytes(w.try_into().unwrap()))
        .collect()
}

fn f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|w| f64::from_le_bytes(w.try_into().unwrap()))
        .collect()
}

/// The criterion, written here independently of `linear::tolerance`.
fn bound(k: usize, sum_abs: f64, y_ref: f64, bf16: bool) -> f64 {
    let n = k as f64 + 8.0;
    let t = n * 2f64.powi(-23) * sum_abs + n * 2f64.powi(-149);
    if bf16 {
        t + 2f64.powi(-8) * (y_ref.abs() + t)
    } else {
        t
    }
}

/// Plain q8_1 (ggml quantize_row_q8_1 arithmetic + the documented non-finite rule):
/// returns x̂ = f16(d)·q for one row.
fn q8_1_xhat(x: &[f32]) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for blk in x.chunks(32) {
        if blk.iter().any(|v| !v.is_finite()) {
            out.extend(std::iter::repeat_n(f64::NAN, 32));
            continue;
        }
        let mut amax = 0f32;
        for v in blk {
            if v.abs() > amax {
                amax = v.abs();
            }
        }
        let d: f32 = amax / 127.0;
        let id: f32 = if d == 0.0 { 0.0 } else { 1.0 / d };
        let d16 = half::f16::from_f32(d).to_f32() as f64;
        for v in blk {
            let p = (v * id) as f64;
            let q = if id.is_finite() {
                p.signum() * (p.abs() + 0.5).floor()
            } else {
                0.0
            };
            out.push(if q == 0.0 { 0.0 } else { d16 * q });
        }
    }
    out
}

/// The f64 oracle: y_ref[m, r] = Σ_j w[r, j]·v[m, j] and Σ_j |w[r, j]·v[m, j]| for m rows of
/// v (M × K) against n rows of w (N × K), both M × N.
fn reference(w: &[f32], v: &[f64], n: usize, k: usize, m: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut yref, mut sabs) = (vec![0f64; m * n], vec![0f64; m * n]);
    for mi in 0..m {
        for r in 0..n {
            for j in 0..k {
                let p = w[r * k + j] as f64 * v[mi * k + j];
                yref[mi * n + r] += p;
                sabs[mi * n + r] += p.abs();
            }
        }
    }
    (yref, sabs)
}

struct Checked {
    count: usize,
    worst: f64,
}

/// Asserts the criterion for y [m, n] against the f64 reference and Σ|w·x| (+ bias).
#[allow(clippy::too_many_arguments)]
fn check(
    what: &str,
    y: &[f32],
    yref: &[f64],
    sabs: &[f64],
    bias: Option<&[f32]>,
    n: usize,
    k: usize,
    bf16: bool,
    c: &mut Checked,
) {
    for (i, (&got, (&r, &s))) in y.iter().zip(yref.iter().zip(sabs)).enumerate() {
        let b = bias.map_or(0.0, |b| b[i % n] as f64);
        let (r, s) = (r + b, s + b.abs());
        if r.is_nan() {
            assert!(got.is_nan(), "{what}: y[{i}] = {got}, expected NaN");
            continue;
        }
        let tol = bound(k, s, r, bf16);
        let err = (got as f64 - r).abs();
        assert!(
            err <= tol,
            "{what}: y[{}, {}] = {got}, y_ref = {r}, |err| = {err:e} > {tol:e}",
            i / n,
            i % n
        );
        if tol > 0.0 {
            c.worst = c.worst.max(err / tol);
        }
        c.count += 1;
    }
}

fn forward(w: &PreparedWeight<'_>, x: &[f32], m: usize, bias: Option<&[f32]>) -> Vec<f32> {
    let mut y = vec![0f32; m * w.rows()];
    w.forward_f32(x, m, bias, &mut y).unwrap();
    y
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// Every path of `view` (each ISA × threads 1, 2; `setup` runs on each new prepared
/// weight) at M ∈ {1, 2, 7, 64} on the first rows of `x`: every output within the criterion
/// of `yref`/`sabs` (the f64 reference of 64 activation rows), the M = 64 bits identical on
/// every path, and rows 0, 5, M − 1 alone (the in-place path) equal to themselves inside
/// the batch of 2, 7 or 64 (in place or materialized, by format and tier).
fn check_all_paths(
    view: WeightView<'_>,
    setup: impl Fn(&mut PreparedWeight<'_>),
    x: &[f32],
    yref: &[f64],
    sabs: &[f64],
    label: &str,
    c: &mut Checked,
) {
    let (n, k) = (view.rows(), view.cols());
    let mut first: Option<Vec<u32>> = None;
    for isa in isas() {
        for threads in [1, 2] {
            let mut w = PreparedWeight::new(view).unwrap();
            setup(&mut w);
            w.set_isa(isa).unwrap();
            w.set_threads(threads).unwrap();
            for m in [1, 2, 7, 64] {
                let y = forward(&w, &x[..m * k], m, None);
                let what = format!("{label} {isa:?} t{threads} m{m}");
                check(
                    &what,
                    &y,
                    &yref[..m * n],
                    &sabs[..m * n],
                    None,
                    n,
                    k,
                    false,
                    c,
                );
                if m == 64 {
                    match &first {
                        None => first = Some(bits(&y)),
                        Some(f) => assert_eq!(f, &bits(&y), "{what}: bits differ"),
                    }
                }
                if m >= 2 {
                    for r in [0, 5.min(m - 1), m - 1] {
                        let y1 = forward(&w, &x[r * k..(r + 1) * k], 1, None);
                        assert_eq!(bits(&y1), bits(&y[r * n..(r + 1) * n]), "{what} row {r}");
                    }
                }
            }
        }
    }
}

/// The `setup` of [`check_all_paths`] for the opt-in q8_1 profile: the default is exact,
/// and the setting takes.
fn to_q8_1(w: &mut PreparedWeight<'_>) {
    use linear::Activation;
    assert_eq!(w.activation(), Activation::Exact);
    w.set_activation(Activation::Q8_1).unwrap();
    assert_eq!(w.activation(), Activation::Q8_1);
}

#[test]
fn q8_1_bytes_match_the_numpy_rederivation() {
    let x = f32s(&data("q8_1.f32"));
    let want = data("q8_1.blocks");
    let mut got = vec![0u8; x.len() / 32 * 36];
    q8_1::quantize_row_q8_1(&x, &mut got).unwrap();
    let mut bad = 0;
    for (b, (g, w)) in got.chunks(36).zip(want.chunks(36)).enumerate() {
        if g != w {
            bad += 1;
            eprintln!("block {b}: got {g:02x?}\nwant {w:02x?}");
        }
    }
    assert_eq!(bad, 0);
    assert_eq!(got.len(), want.len());
    println!(
        "q8_1: {} blocks bit-identical to the numpy re-derivation",
        want.len() / 36
    );
}

#[test]
fn real_minilm_rows_meet_the_criterion() {
    let manifest = String::from_utf8(data("manifest.txt")).unwrap();
    let xall = f32s(&data("real_x.f32"));
    let mut formats = 0;
    for line in manifest.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (name, n, k, mmax) = (
            f[0],
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
            f[3].parse::<usize>().unwrap(),
        );
        let format = Format::from_name(name).unwrap();
        let wb = data(&format!("real_{name}.w"));
        let yref = f64s(&data(&format!("real_{name}.y")));
        let sabs = f64s(&data(&format!("real_{name}.s")));
        let view = WeightView::single(format, n, k, &wb).unwrap();
        let bias: Vec<f32> = (0..n).map(|i| (i as f32 - 8.0) * 0.03125).collect();
        let mut c = Checked {
            count: 0,
            worst: 0.0,
        };
        let mut cb = Checked {
            count: 0,
            worst: 0.0,
        };
        let mut reference: Option<Vec<u32>> = None;
        for isa in isas() {
            for threads in [1, 2] {
                let mut w = PreparedWeight::new(view).unwrap();
                w.set_isa(isa).unwrap();
                w.set_threads(threads).unwrap();
                for m in [1, 2, 7] {
                    assert!(m <= mmax);
                    let x = &xall[..m * k];
                    let y = forward(&w, x, m, None);
                    let what = format!("{name} {isa:?} t{threads} m{m}");
                    check(
                        &what,
                        &y,
                        &yref[..m * n],
                        &sabs[..m * n],
                        None,
                        n,
                        k,
                        false,
                        &mut c,
                    );
                    let yb = forward(&w, x, m, Some(&bias));
                    check(
                        &what,
                        &yb,
                        &yref[..m * n],
                        &sabs[..m * n],
                        Some(&bias),
                        n,
                        k,
                        false,
                        &mut c,
                    );
                    // bf16 outputs
                    let xb: Vec<u8> = x.iter().flat_map(|v| v.to_ne_bytes()).collect();
                    let mut ybf = vec![0u8; m * n * 2];
                    w.forward(&xb, Dtype::F32, m, k, None, &mut ybf, Dtype::Bf16)
                        .unwrap();
                    let ybf: Vec<f32> = ybf
                        .chunks(2)
                        .map(|h| f32::from_bits((u16::from_ne_bytes([h[0], h[1]]) as u32) << 16))
                        .collect();
                    check(
                        &what,
                        &ybf,
                        &yref[..m * n],
                        &sabs[..m * n],
                        None,
                        n,
                        k,
                        true,
                        &mut cb,
                    );
                    if m == 7 {
                        match &reference {
                            None => reference = Some(bits(&y)),
                            Some(r) => {
                                assert_eq!(r, &bits(&y), "{what}: bits differ from the first path")
                            }
                        }
                    }
                }
            }
        }
        println!(
            "{name}: N={n} K={k}: {} f32 and {} bf16 outputs within linear_f32acc_v1 \
             (worst |err|/tol: f32 {:.2e}, bf16 {:.2e})",
            c.count, cb.count, c.worst, cb.worst
        );
        formats += 1;
    }
    assert_eq!(formats, 19);
}

#[test]
fn random_weights_meet_the_criterion_and_paths_agree_bitwise() {
    let mut rng = Rng(42);
    let cases: &[(Format, &[usize])] = &[
        (Format::Fp32, &[1, 7, 33, 100, 300]),
        (Format::Bf16, &[1, 7, 33, 100, 300]),
        (Format::GgufQ8_0, &[32, 96, 416, 1024]),
        (Format::GgufQ4_0, &[32, 96, 416, 1024]),
        (Format::GgufQ5_0, &[32, 96, 416, 1024]),
        (Format::GgufQ2_0, &[64, 192, 576, 1024]),
        (Format::GgufIq4Nl, &[32, 96, 416, 1024]),
        (Format::GgufIq4Xs, &[256, 768, 2048]),
        (Format::GgufQ2_K, &[256, 768, 1280]),
        (Format::GgufQ3_K, &[256, 768, 1280]),
        (Format::GgufQ4_K, &[256, 768, 1280]),
        (Format::GgufQ5_K, &[256, 768, 1280]),
        (Format::GgufQ6_K, &[256, 768, 1280]),
    ];
    let n = 13;
    for &(format, ks) in cases {
        let gguf =
            format.info().ggml_type.is_some() && !matches!(format, Format::Fp32 | Format::Bf16);
        let mut c = Checked {
            count: 0,
            worst: 0.0,
        };
        for &k in ks {
            let wb = random_weight(format, n, k, &mut rng);
            let view = WeightView::single(format, n, k, &wb).unwrap();
            let mut wdec = vec![0f32; n * k];
            for r in 0..n {
                decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
            }
            let mmax = 64;
            let x: Vec<f32> = (0..mmax * k)
                .map(|i| rng.unit() * if i % 17 == 0 { 8.0 } else { 1.0 })
                .collect();
            let xv: Vec<f64> = if gguf {
                x.chunks(k).flat_map(q8_1_xhat).collect()
            } else {
                x.iter().map(|&v| v as f64).collect()
            };
            let (yref, sabs) = reference(&wdec, &xv, n, k, mmax);
            let mut first: Option<Vec<u32>> = None;
            for isa in isas() {
                for threads in [1, 2] {
                    let mut w = PreparedWeight::new(view).unwrap();
                    w.set_isa(isa).unwrap();
                    w.set_threads(threads).unwrap();
                    let full = forward(&w, &x, mmax, None);
                    for m in [1, 2, 7, 64] {
                        let y = forward(&w, &x[..m * k], m, None);
                        let what = format!("{format} K={k} {isa:?} t{threads} m{m}");
                        check(
                            &what,
                            &y,
                            &yref[..m * n],
                            &sabs[..m * n],
                            None,
                            n,
                            k,
                            false,
                            &mut c,
                        );
                        assert_eq!(bits(&y), bits(&full[..m * n]), "{what}: batch rows differ");
                    }
                    // Each row alone gives the bits it has inside the batch.
                    for m in [3, 10, 63] {
                        let y = forward(&w, &x[m * k..(m + 1) * k], 1, None);
                        assert_eq!(bits(&y), bits(&full[m * n..(m + 1) * n]));
                    }
                    match &first {
                        None => first = Some(bits(&full)),
                        Some(f) => assert_eq!(
                            f,
                            &bits(&full),
                            "{format} K={k} {isa:?} t{threads}: differs from scalar t1"
                        ),
                    }
                }
            }
        }
        println!(
            "{format}: {} outputs within linear_f32acc_v1 (worst |err|/tol = {:.2e}); AVX2 = scalar, t1 = t2, batch = single",
            c.count, c.worst
        );
    }
}

#[test]
fn activation_dtypes_give_the_bits_of_their_f32_values() {
    let mut rng = Rng(7);
    for format in [Format::Bf16, Format::GgufQ4_K] {
        let (n, k) = (5, 256);
        let wb = random_weight(format, n, k, &mut rng);
        let view = WeightView::single(format, n, k, &wb).unwrap();
        let w = PreparedWeight::new(view).unwrap();
        let m = 3;
        // values exact in both bf16 and f16
        let x: Vec<f32> = (0..m * k)
            .map(|_| (rng.unit() * 64.0).round() / 32.0)
            .collect();
        let y = forward(&w, &x, m, None);
        for dt in [Dtype::Bf16, Dtype::F16] {
            let xb: Vec<u8> = x
                .iter()
                .flat_map(|&v| match dt {
                    Dtype::Bf16 => half::bf16::from_f32(v).to_bits().to_ne_bytes(),
                    _ => half::f16::from_f32(v).to_bits().to_ne_bytes(),
                })
                .collect();
            let mut yb = vec![0u8; m * n * 4];
            w.forward(&xb, dt, m, k, None, &mut yb, Dtype::F32).unwrap();
            assert_eq!(bits(&y), bits(&f32s(&yb)), "{format} x {dt:?}");
        }
    }
}

#[test]
fn non_finite_activations_give_nan_in_gguf_products() {
    let mut rng = Rng(9);
    let (n, k) = (3, 64);
    let wb = random_weight(Format::GgufQ8_0, n, k, &mut rng);
    let w = PreparedWeight::new(WeightView::single(Format::GgufQ8_0, n, k, &wb).unwrap()).unwrap();
    let mut x = vec![0.5f32; k];
    x[40] = f32::INFINITY;
    let y = forward(&w, &x, 1, None);
    assert!(y.iter().all(|v| v.is_nan()), "{y:?}");
}

/// An activation block whose amax exceeds 65504·127 has an infinite stored q8_1 scale
/// (docs/linear.md "q8_1 activations"): every output that meets it is ±Inf or NaN (not
/// specified which), the same class on every ISA, thread count and batch position; the
/// outputs of the other activation rows stay finite. Every format with a q8_1 profile.
#[test]
fn q8_1_blocks_beyond_binary16_range_give_non_finite_outputs() {
    use linear::Activation;
    let mut rng = Rng(65504);
    let (n, m) = (6, 3);
    let class = |v: f32| match v {
        v if v.is_nan() => 'n',
        v if v == f32::INFINITY => '+',
        v if v == f32::NEG_INFINITY => '-',
        _ => 'f',
    };
    let mut formats = 0;
    for i in 0..Format::COUNT as u32 {
        let format = Format::from_u32(i).unwrap();
        let layout = format.info().layout;
        if !linear::supported_activation(format, layout, Activation::Q8_1, Device::Cpu) {
            continue;
        }
        let k = 512;
        let planes = random_planes(format, n, k, &mut rng);
        let view =
            WeightView::new(format, layout, n, k, [&planes[0], &planes[1], &planes[2]]).unwrap();
        // Row 1 holds one value of 10⁷ (stored d = binary16(10⁷/127) = Inf); rows 0, 2
        // are ordinary.
        let mut x: Vec<f32> = (0..m * k).map(|_| rng.unit()).collect();
        x[k + 70] = 1e7;
        let mut first: Option<String> = None;
        for isa in isas() {
            for threads in [1, 2] {
                let mut w = PreparedWeight::new(view).unwrap();
                w.set_activation(Activation::Q8_1).unwrap();
                w.set_isa(isa).unwrap();
                w.set_threads(threads).unwrap();
                let batch = forward(&w, &x, m, None);
                let alone = forward(&w, &x[k..2 * k], 1, None);
                let classes: String = batch.iter().map(|&v| class(v)).collect();
                for r in 0..n {
                    for mi in 0..m {
                        let c = class(batch[mi * n + r]);
                        if mi == 1 {
                            assert!(c != 'f', "{format} row {r}: {}", batch[mi * n + r]);
                        } else {
                            assert_eq!(c, 'f', "{format} row {r}, activation row {mi}");
                        }
                    }
                    assert_eq!(class(alone[r]), class(batch[n + r]), "{format} row {r}");
                }
                match &first {
                    None => first = Some(classes),
                    Some(f) => assert_eq!(f, &classes, "{format} {isa:?} {threads} threads"),
                }
            }
        }
        formats += 1;
    }
    assert_eq!(formats, 18 + 6 + 1, "GGUF types, grouped formats and nvfp4");
    println!("q8_1 beyond binary16: {formats} formats give ±Inf/NaN where documented");
}

#[test]
fn bad_input_is_refused_without_writing() {
    let (n, k) = (4, 64);
    let wb = vec![0u8; n * k / 32 * 34];
    let view = WeightView::single(Format::GgufQ8_0, n, k, &wb).unwrap();
    let w = PreparedWeight::new(view).unwrap();
    let x = vec![0u8; 2 * k * 4];
    let mut y = vec![0xAAu8; 2 * n * 4];
    let err = |r: Result<(), Error>| r.unwrap_err().status();
    use ninfer::Status;
    assert_eq!(
        err(w.forward(&x, Dtype::F32, 2, k + 32, None, &mut y, Dtype::F32)),
        Status::BadShape
    );
    assert_eq!(
        err(w.forward(&x[..100], Dtype::F32, 2, k, None, &mut y, Dtype::F32)),
        Status::BufferTooSmall
    );
    assert_eq!(
        err(w.forward(&x, Dtype::F32, 2, k, None, &mut y[..10], Dtype::F32)),
        Status::BufferTooSmall
    );
    assert_eq!(
        err(w.forward(&x, Dtype::F32, 2, k, Some(&[0.0; 3]), &mut y, Dtype::F32)),
        Status::BufferTooSmall
    );
    assert_eq!(
        err(w.forward(&x, Dtype::F32, 2, k, None, &mut y, Dtype::F16)),
        Status::Unsupported
    );
    assert_eq!(
        err(w.forward(&x, Dtype::F32, usize::MAX / 2, k, None, &mut y, Dtype::F32)),
        Status::Overflow
    );
    assert!(y.iter().all(|&b| b == 0xAA), "output written on error");
    let mut yf = vec![0f32; 2 * n];
    assert_eq!(
        w.forward_f32(&[0.0; 10], 2, None, &mut yf)
            .unwrap_err()
            .status(),
        Status::BufferTooSmall
    );
    // m = 0 is a no-op
    w.forward(&[], Dtype::F32, 0, k, None, &mut [], Dtype::F32)
        .unwrap();

    // int32 has no linear kernel: refused at prepare, and by the support query.
    let words = vec![0u8; 4 * 8];
    let iv = WeightView::single(Format::Int32, 2, 4, &words).unwrap();
    assert_eq!(
        PreparedWeight::new(iv).unwrap_err().status(),
        Status::Unsupported
    );
    // CUDA: no device here (CI), or no CUDA support in this build (tests/cuda_c.rs covers
    // the CUDA exports).
    if ninfer::cuda::device_count().map_or(true, |n| n == 0) {
        assert_eq!(
            PreparedWeight::on(view, Device::Cuda).unwrap_err().status(),
            Status::NoDevice
        );
    }
}

#[test]
fn support_query_matches_prepare() {
    let mut yes = Vec::new();
    for i in 0..Format::COUNT as u32 {
        let f = Format::from_u32(i).unwrap();
        let l = f.info().layout;
        let s = linear::supported(f, l, Dtype::F32, Dtype::F32, Device::Cpu);
        if s {
            yes.push(f.name());
        }
        assert!(!linear::supported(
            f,
            l,
            Dtype::F32,
            Dtype::F16,
            Device::Cpu
        ));
        // CUDA answers per format when compiled in (tests/cuda_c.rs), never without.
        if !ninfer::cuda::compiled() {
            assert!(!linear::supported(
                f,
                l,
                Dtype::F32,
                Dtype::F32,
                Device::Cuda
            ));
        }
        // Prepare agrees wherever a view of the format can be built here.
        if let Ok(sizes) = ninfer::layouts::plane_sizes(f, l, 2, 256) {
            let bufs: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
            let v = WeightView::new(f, l, 2, 256, [&bufs[0], &bufs[1], &bufs[2]]).unwrap();
            assert_eq!(PreparedWeight::new(v).is_ok(), s, "{f}");
        }
    }
    assert!(!linear::supported(
        Format::Bf16,
        Layout::GgufBlocksV1,
        Dtype::F32,
        Dtype::F32,
        Device::Cpu
    ));
    for must in [
        "bf16",
        "fp32",
        "gguf_q8_0",
        "gguf_q4_0",
        "gguf_q5_0",
        "gguf_q4_k",
        "gguf_q6_k",
    ] {
        assert!(yes.contains(&must), "{must} not supported: {yes:?}");
    }
    println!("linear supported on the CPU for: {}", yes.join(", "));
}

#[test]
fn every_supported_format_meets_the_criterion() {
    let mut rng = Rng(2026);
    let n = 13;
    let mut covered = Vec::new();
    for i in 0..Format::COUNT as u32 {
        let format = Format::from_u32(i).unwrap();
        let info = format.info();
        let layout = info.layout;
        if !linear::supported(format, layout, Dtype::F32, Dtype::F32, Device::Cpu) {
            println!("{format}: not supported by linear in this build (refused at prepare)");
            continue;
        }
        let gguf = layout == Layout::GgufBlocksV1;
        // K: not a multiple of 128 wherever the format allows it.
        let k = match layout {
            Layout::GgufBlocksV1 => 3 * info.block_values as usize,
            Layout::ContiguousLeV1 => 77,
            Layout::RowSplitK128_V1 => 200,
            Layout::BlockScaleK16_M128x4_V1 => 80,
            _ => 77,
        };
        let planes = random_planes(format, n, k, &mut rng);
        let view =
            WeightView::new(format, layout, n, k, [&planes[0], &planes[1], &planes[2]]).unwrap();
        let mut wdec = vec![0f32; n * k];
        for r in 0..n {
            decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
        }
        assert!(
            wdec.iter().all(|v| v.is_finite()),
            "{format}: test weights not finite"
        );
        let mmax = 64;
        let x: Vec<f32> = (0..mmax * k).map(|_| rng.unit()).collect();
        let xv: Vec<f64> = if gguf {
            x.chunks(k).flat_map(q8_1_xhat).collect()
        } else {
            x.iter().map(|&v| v as f64).collect()
        };
        let (yref, sabs) = reference(&wdec, &xv, n, k, mmax);
        let mut c = Checked {
            count: 0,
            worst: 0.0,
        };
        check_all_paths(
            view,
            |_| {},
            &x,
            &yref,
            &sabs,
            &format!("{format} K={k}"),
            &mut c,
        );
        println!(
            "{format} ({}): N={n} K={k}: {} outputs within linear_f32acc_v1 (worst |err|/tol = {:.2e})",
            layout.name(),
            c.count,
            c.worst
        );
        covered.push(format.name());
    }
    println!("covered: {}", covered.join(", "));
    assert!(covered.len() >= 7);
}

/// Writes `bits` (width `w`) at bit offset `at` of the little-endian byte string `b`.
fn put_bits(b: &mut [u8], at: usize, w: usize, bits: u32) {
    for i in 0..w {
        let (byte, bit) = ((at + i) / 8, (at + i) % 8);
        b[byte] = (b[byte] & !(1 << bit)) | ((((bits >> i) & 1) as u8) << bit);
    }
}

/// A weight of a grid i-quant whose runs sweep every grid index and every sign pattern
/// (the field positions of the block layouts, docs/gguf-blocks), other bits random;
/// rows 0..n/2 have random scales, the rest the largest scale codes (the extreme integer
/// sums of the kernels).
fn iquant_sweep(format: Format, n: usize, k: usize, rng: &mut Rng) -> Vec<u8> {
    let bb = format.info().block_bytes as usize;
    let nsb = n * k / 256;
    let mut w: Vec<u8> = (0..nsb * bb).map(|_| rng.next() as u8).collect();
    let mut run = 0u32; // grid points written so far
    let mut sig = 0u32; // sign fields written so far
    for (i, b) in w.chunks_exact_mut(bb).enumerate() {
        let big = i >= nsb / 2;
        if format == Format::GgufIq1M {
            b[55] = (b[55] & 0x0F) | 0x30;
        } else {
            b[0..2].copy_from_slice(&rng.f16_scale());
        }
        for g in 0..8 {
            match format {
                Format::GgufIq2Xxs => {
                    for l in 0..4 {
                        b[2 + 8 * g + l] = (run % 256) as u8;
                        run += 1;
                        put_bits(b, 8 * (6 + 8 * g) + 7 * l, 7, sig % 128);
                        sig += 1;
                    }
                    if big {
                        put_bits(b, 8 * (6 + 8 * g) + 28, 4, 15);
                    }
                }
                Format::GgufIq2Xs => {
                    for l in 0..4 {
                        let v = (run % 512) | ((sig % 128) << 9);
                        b[2 + 8 * g + 2 * l..4 + 8 * g + 2 * l]
                            .copy_from_slice(&(v as u16).to_le_bytes());
                        run += 1;
                        sig += 1;
                    }
                    if big {
                        b[66 + g] = 0xFF;
                    }
                }
                Format::GgufIq2S => {
                    for l in 0..4 {
                        let idx = run % 1024;
                        b[2 + 4 * g + l] = idx as u8;
                        put_bits(b, 8 * (66 + g) + 2 * l, 2, idx >> 8);
                        b[34 + 4 * g + l] = (sig % 256) as u8;
                        run += 1;
                        sig += 1;
                    }
                    if big {
                        b[74 + g] = 0xFF;
                    }
                }
                Format::GgufIq3Xxs => {
                    for j in 0..8 {
                        b[2 + 8 * g + j] = (run % 256) as u8;
                        run += 1;
                    }
                    for l in 0..4 {
                        put_bits(b, 8 * (66 + 4 * g) + 7 * l, 7, sig % 128);
                        sig += 1;
                    }
                    if big {
                        put_bits(b, 8 * (66 + 4 * g) + 28, 4, 15);
                    }
                }
                Format::GgufIq3S => {
                    for j in 0..8 {
                        let idx = run % 512;
                        b[2 + 8 * g + j] = idx as u8;
                        put_bits(b, 8 * (66 + g) + j, 1, idx >> 8);
                        run += 1;
                    }
                    for l in 0..4 {
                        b[74 + 4 * g + l] = (sig % 256) as u8;
                        sig += 1;
                    }
                    if big {
                        put_bits(b, 8 * 106 + 4 * g, 4, 15);
                    }
                }
                Format::GgufIq1S => {
                    for l in 0..4 {
                        let idx = run % 2048;
                        b[2 + 4 * g + l] = idx as u8;
                        put_bits(b, 8 * (34 + 2 * g) + 3 * l, 3, idx >> 8);
                        run += 1;
                    }
                    put_bits(b, 8 * (34 + 2 * g) + 15, 1, sig % 2);
                    sig += 1;
                    if big {
                        put_bits(b, 8 * (34 + 2 * g) + 12, 3, 7);
                    }
                }
                Format::GgufIq1M => {
                    for l in 0..4 {
                        let idx = run % 2048;
                        b[4 * g + l] = idx as u8;
                        put_bits(b, 8 * (32 + 2 * g) + 4 * l, 3, idx >> 8);
                        put_bits(b, 8 * (32 + 2 * g) + 4 * l + 3, 1, sig % 2);
                        run += 1;
                        sig += 1;
                    }
                    if big {
                        put_bits(b, 8 * 48 + 16 * (g / 2) + 6 * (g % 2), 6, 63);
                    }
                }
                _ => unreachable!(),
            }
        }
    }
    w
}

/// The grid i-quants with every grid index and sign pattern (sweep above, counts printed),
/// several super-blocks per row (K = 2048), 1..4-row weight groups (N = 13), extreme
/// scale codes against activations at ±127 codes: the criterion against the decoded
/// weights × x̂, AVX2 = scalar bit for bit, a row alone = the same row in a batch.
#[test]
fn iquant_kernels_cover_every_grid_point_and_sign() {
    let mut rng = Rng(77);
    for (format, grid, signs) in [
        (Format::GgufIq2Xxs, 256, 128),
        (Format::GgufIq3Xxs, 256, 128),
        (Format::GgufIq2Xs, 512, 128),
        (Format::GgufIq3S, 512, 256),
        (Format::GgufIq2S, 1024, 256),
        (Format::GgufIq1S, 2048, 2),
        (Format::GgufIq1M, 2048, 2),
    ] {
        // Enough super-blocks that every grid index appears (runs of 8 values; IQ3 grids
        // code 4 values per index).
        let per_index: usize = if matches!(format, Format::GgufIq3Xxs | Format::GgufIq3S) {
            4
        } else {
            8
        };
        let (n, k) = (13, 2048);
        let reps = (grid * per_index).div_ceil(n * k) + 1;
        let n = n * reps;
        assert!(n * k / per_index >= grid && n * k / per_index / 8 >= signs);
        let wb = iquant_sweep(format, n, k, &mut rng);
        let view = WeightView::single(format, n, k, &wb).unwrap();
        let mut wdec = vec![0f32; n * k];
        for r in 0..n {
            decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
        }
        let m = 5;
        // Row 0: every value at ±amax (codes ±127); the others random.
        let x: Vec<f32> = (0..m * k)
            .map(|i| {
                if i < k {
                    if rng.next().is_multiple_of(2) {
                        1.0
                    } else {
                        -1.0
                    }
                } else {
                    rng.unit()
                }
            })
            .collect();
        let xv: Vec<f64> = x.chunks(k).flat_map(q8_1_xhat).collect();
        let (yref, sabs) = reference(&wdec, &xv, n, k, m);
        let mut c = Checked {
            count: 0,
            worst: 0.0,
        };
        let mut first: Option<Vec<u32>> = None;
        for isa in isas() {
            let mut w = PreparedWeight::new(view).unwrap();
            w.set_isa(isa).unwrap();
            w.set_threads(1).unwrap();
            let y = forward(&w, &x, m, None);
            check(
                &format!("{format} {isa:?}"),
                &y,
                &yref,
                &sabs,
                None,
                n,
                k,
                false,
                &mut c,
            );
            for r in 0..m {
                let y1 = forward(&w, &x[r * k..(r + 1) * k], 1, None);
                assert_eq!(
                    bits(&y1),
                    bits(&y[r * n..(r + 1) * n]),
                    "{format} {isa:?} row {r}"
                );
            }
            match &first {
                None => first = Some(bits(&y)),
                Some(f) => assert_eq!(f, &bits(&y), "{format}: {isa:?} differs from scalar"),
            }
        }
        println!(
            "{format}: N={n} K={k}: all {grid} grid points and {signs} sign patterns, {} outputs within linear_f32acc_v1 (worst |err|/tol = {:.2e}); AVX2 = scalar",
            c.count, c.worst
        );
    }
}

/// The types whose decoding subtracts a separately scaled min, `w = d·sc·q − dmin·m`
/// (Q2_K, Q4_K, Q5_K): a product computes the two terms apart (as ggml does), so its
/// rounding error follows `Σ(|d·sc·q·x̂| + |dmin·m·x̂|)`, not `Σ|w·x̂|`, and the criterion
/// names that Σ for them (docs/linear.md). Rows where the terms cancel except in one value
/// show why; the test asserts the criterion with the two-term Σ, each term taken from the
/// decoder (the min term is the decoded row with every code byte zeroed).
#[test]
fn min_types_meet_the_criterion_with_their_two_terms() {
    // (format, code bytes, offset of d and dmin, dmin, a low-code byte): every byte 0xFF but
    // d = 1.0 and dmin, so that d·sc·q = dmin·m everywhere; the low-code byte = 0xFE (one
    // code one lower) breaks the cancellation once. Q2_K: sc = m = 15, codes 3, dmin = 3 (45 − 45); Q4_K: 63, 15,
    // dmin = 15 (945 − 945); Q5_K: 63, 31, dmin = 31 (1953 − 1953).
    let cases = [
        (Format::GgufQ2_K, 16..80, 80, 0x4200u16, 16),
        (Format::GgufQ4_K, 16..144, 0, 0x4B80, 16),
        (Format::GgufQ5_K, 16..176, 0, 0x4FC0, 48),
    ];
    let (n, k, m) = (4, 4096, 2);
    let mut rng = Rng(0x5EED_CA9C);
    let x: Vec<f32> = (0..m * k).map(|_| 0.5 + 0.5 * rng.unit().abs()).collect();
    let xv: Vec<f64> = x.chunks(k).flat_map(q8_1_xhat).collect();
    for (format, codes, head, dmin, low) in cases {
        let bb = format.info().block_bytes as usize;
        let nblk = k / 256;
        let mut wb = vec![0xFFu8; n * nblk * bb];
        for blk in wb.chunks_exact_mut(bb) {
            blk[head..head + 2].copy_from_slice(&0x3C00u16.to_le_bytes());
            blk[head + 2..head + 4].copy_from_slice(&dmin.to_le_bytes());
        }
        // Row r breaks the cancellation once, in super-block r.
        for r in 0..n {
            wb[(r * nblk + r) * bb + low] = 0xFE;
        }
        let mut zeroed = wb.clone();
        for blk in zeroed.chunks_exact_mut(bb) {
            blk[codes.clone()].fill(0);
        }
        let view = WeightView::single(format, n, k, &wb).unwrap();
        let zview = WeightView::single(format, n, k, &zeroed).unwrap();
        let (mut w, mut w0) = (vec![0f32; n * k], vec![0f32; n * k]);
        for r in 0..n {
            decode::decode_row(&view, r as u64, &mut w[r * k..(r + 1) * k]).unwrap();
            decode::decode_row(&zview, r as u64, &mut w0[r * k..(r + 1) * k]).unwrap();
        }
        let (mut yref, mut plain, mut split) =
            (vec![0f64; m * n], vec![0f64; m * n], vec![0f64; m * n]);
        for mi in 0..m {
            for r in 0..n {
                for j in 0..k {
                    let (wv, mv, v) = (w[r * k + j] as f64, w0[r * k + j] as f64, xv[mi * k + j]);
                    yref[mi * n + r] += wv * v;
                    plain[mi * n + r] += (wv * v).abs();
                    split[mi * n + r] += ((wv - mv) * v).abs() + (mv * v).abs();
                }
            }
        }
        let mut c = Checked {
            count: 0,
            worst: 0.0,
        };
        let mut over_plain = 0;
        for isa in isas() {
            let mut p = PreparedWeight::new(view).unwrap();
            p.set_isa(isa).unwrap();
            let y = forward(&p, &x, m, None);
            check(
                &format!("{format} {isa:?}"),
                &y,
                &yref,
                &split,
                None,
                n,
                k,
                false,
                &mut c,
            );
            for (i, &got) in y.iter().enumerate() {
                if (got as f64 - yref[i]).abs() > bound(k, plain[i], yref[i], false) {
                    over_plain += 1;
                }
            }
        }
        println!(
            "{format}: {} outputs within the two-term criterion (worst {:.3} of the bound); \
             {over_plain} would exceed a bound on Σ|w·x̂| alone",
            c.count, c.worst
        );
    }
}

/// Extreme weight blocks (every code of a block at one end of its range) for the legacy
/// family: d = 1, so that with activations whose q8_1 scale is exactly 1 every partial sum is
/// an integer and the product is EXACT whenever Σ|w·x| < 2²⁴.
fn extreme_legacy_weight(format: Format, n: usize, k: usize, rng: &mut Rng) -> Vec<u8> {
    let info = format.info();
    let (bb, bv) = (info.block_bytes as usize, info.block_values as usize);
    let mut w = vec![0u8; n * k / bv * bb];
    let one = half::f16::from_f32(1.0).to_bits().to_le_bytes();
    let per_row = k / bv;
    for (bi, blk) in w.chunks_exact_mut(bb).enumerate() {
        let low = rng.next().is_multiple_of(2);
        // IQ4_XS: odd rows keep factors in {−1, 0, 1} (products small enough to be exact).
        let row_extreme = (bi / per_row).is_multiple_of(2);
        blk[0..2].copy_from_slice(&one);
        match format {
            // −128 (never made by ggml's quantizer, valid bytes) or 127.
            Format::GgufQ8_0 => blk[2..].fill(if low { 0x80 } else { 0x7F }),
            // Codes 0 / 15 (values −8 / 7), 0 / 31 (−16 / 15), 0 / 3 (−1 / 2),
            // kvalues −127 / 113.
            Format::GgufQ4_0 | Format::GgufIq4Nl | Format::GgufQ2_0 => {
                blk[2..].fill(if low { 0x00 } else { 0xFF })
            }
            Format::GgufQ5_0 => blk[2..].fill(if low { 0x00 } else { 0xFF }),
            Format::GgufIq4Xs => {
                // ls per sub-block from {0, 31, 32, 33, 63} (factors −32, −1, 0, 1, 31).
                let mut sh = 0u16;
                let mut sl = 0u32;
                for j in 0..8 {
                    let ls = if row_extreme {
                        [0u32, 31, 32, 33, 63][(rng.next() % 5) as usize]
                    } else {
                        [31u32, 32, 33][(rng.next() % 3) as usize]
                    };
                    sl |= (ls & 0x0F) << (4 * j);
                    sh |= ((ls >> 4) as u16) << (2 * j);
                }
                blk[2..4].copy_from_slice(&sh.to_le_bytes());
                blk[4..8].copy_from_slice(&sl.to_le_bytes());
                for qs in blk[8..].chunks_exact_mut(16) {
                    qs.fill(if rng.next().is_multiple_of(2) {
                        0x00
                    } else {
                        0xFF
                    });
                }
            }
            _ => unreachable!(),
        }
    }
    w
}

#[test]
fn legacy_kernels_extreme_blocks_and_row_groups() {
    let mut rng = Rng(7);
    // K: two whole 8-block chunks plus a tail (IQ4_XS: three super-blocks, no tail).
    let cases = [
        (Format::GgufQ8_0, 608),
        (Format::GgufQ4_0, 608),
        (Format::GgufQ5_0, 608),
        (Format::GgufQ2_0, 640),
        (Format::GgufIq4Nl, 608),
        (Format::GgufIq4Xs, 768),
    ];
    for (format, k) in cases {
        let (mut c, mut exact) = (
            Checked {
                count: 0,
                worst: 0.0,
            },
            0,
        );
        for n in [1, 2, 3, 5, 6, 7] {
            let wb = extreme_legacy_weight(format, n, k, &mut rng);
            let view = WeightView::single(format, n, k, &wb).unwrap();
            let mut wdec = vec![0f32; n * k];
            for r in 0..n {
                decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
            }
            // Activations: per block all +127, all −127 or random integers with one ±127,
            // so the q8_1 scale is exactly 1 and the codes are the values.
            let mmax = 5;
            let mut x = vec![0f32; mmax * k];
            for blk in x.chunks_exact_mut(32) {
                match rng.next() % 3 {
                    0 => blk.fill(127.0),
                    1 => blk.fill(-127.0),
                    _ => {
                        for v in blk.iter_mut() {
                            *v = (rng.next() % 255) as f32 - 127.0;
                        }
                        blk[(rng.next() % 32) as usize] = 127.0;
                    }
                }
            }
            let (yref, sabs) = reference(
                &wdec,
                &x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                n,
                k,
                mmax,
            );
            let mut first: Option<Vec<u32>> = None;
            for isa in isas() {
                let mut w = PreparedWeight::new(view).unwrap();
                w.set_isa(isa).unwrap();
                w.set_threads(1).unwrap();
                let full = forward(&w, &x, mmax, None);
                for m in [1, 2, mmax] {
                    let y = forward(&w, &x[..m * k], m, None);
                    let what = format!("{format} N={n} K={k} {isa:?} m{m}");
                    check(
                        &what,
                        &y,
                        &yref[..m * n],
                        &sabs[..m * n],
                        None,
                        n,
                        k,
                        false,
                        &mut c,
                    );
                    for (i, &got) in y.iter().enumerate() {
                        if sabs[i] < (1u64 << 24) as f64 {
                            assert_eq!(got as f64, yref[i], "{what}: output {i} not exact");
                            exact += 1;
                        }
                    }
                    assert_eq!(bits(&y), bits(&full[..m * n]), "{what}: batch rows differ");
                }
                match &first {
                    None => first = Some(bits(&full)),
                    Some(f) => assert_eq!(f, &bits(&full), "{format} N={n}: AVX2 ≠ scalar"),
                }
            }
        }
        assert!(exact > 0, "{format}: no exact case");
        println!(
            "{format}: extreme blocks, N = 1..7: {} outputs within linear_f32acc_v1 \
             (worst |err|/tol = {:.2e}), {exact} exact; AVX2 = scalar, batch = single",
            c.count, c.worst
        );
    }
}

/// Extreme k-quant super-blocks: every 32-byte run of code bytes all 0x00 or all 0xFF
/// (codes at either end of their range: Q2_K 0/3, Q3_K −4/3, Q4_K 0/15, Q5_K 0/31, Q6_K
/// −32/31), the largest scale magnitudes (Q2_K 15, Q3_K −32/31, Q4_K/Q5_K 63, Q6_K
/// −128/127), d = 1 and a small dmin (2⁻¹⁰; min terms far below the main ones, so Σ|w·x̂|
/// is the right criterion Σ here). Against activations at ±127 these are the largest
/// intermediate sums the AVX2 kernels form (`vpmaddubsw` pairs, i16 sums of 8 products).
fn extreme_kquant_weight(format: Format, n: usize, k: usize, rng: &mut Rng) -> Vec<u8> {
    let bb = format.info().block_bytes as usize;
    let mut w = vec![0u8; n * k / 256 * bb];
    let one = half::f16::from_f32(1.0).to_bits().to_le_bytes();
    let small = half::f16::from_f32(1.0 / 1024.0).to_bits().to_le_bytes();
    // (scale bytes, d offset, dmin offset) per type.
    let (scales, d_at, dmin_at): (std::ops::Range<usize>, usize, Option<usize>) = match format {
        Format::GgufQ2_K => (0..16, 80, Some(82)),
        Format::GgufQ3_K => (96..108, 108, None),
        Format::GgufQ4_K | Format::GgufQ5_K => (4..16, 0, Some(2)),
        Format::GgufQ6_K => (192..208, 208, None),
        _ => unreachable!(),
    };
    for blk in w.chunks_exact_mut(bb) {
        for run in blk.chunks_mut(32) {
            run.fill(if rng.next().is_multiple_of(2) {
                0x00
            } else {
                0xFF
            });
        }
        for s in &mut blk[scales.clone()] {
            *s = match format {
                Format::GgufQ2_K | Format::GgufQ4_K | Format::GgufQ5_K => 0xFF,
                Format::GgufQ3_K => [0x00, 0xFF][(rng.next() % 2) as usize],
                _ => [0x80, 0x7F][(rng.next() % 2) as usize],
            };
        }
        blk[d_at..d_at + 2].copy_from_slice(&one);
        if let Some(at) = dmin_at {
            blk[at..at + 2].copy_from_slice(&small);
        }
    }
    w
}

/// The k-quant kernels against extreme super-blocks (above) and ±127 activations: several
/// super-blocks per row, 1..7 weight rows (row groups of 1..4), M = 1, 2, 5: the criterion
/// against the decoded weights × x̂, AVX2 = scalar bit for bit, batch rows = single rows.
#[test]
fn kquant_kernels_extreme_blocks_and_row_groups() {
    let mut rng = Rng(11);
    let k = 768;
    for format in [
        Format::GgufQ2_K,
        Format::GgufQ3_K,
        Format::GgufQ4_K,
        Format::GgufQ5_K,
        Format::GgufQ6_K,
    ] {
        let mut c = Checked {
            count: 0,
            worst: 0.0,
        };
        for n in [1, 2, 3, 5, 6, 7] {
            let wb = extreme_kquant_weight(format, n, k, &mut rng);
            let view = WeightView::single(format, n, k, &wb).unwrap();
            let mut wdec = vec![0f32; n * k];
            for r in 0..n {
                decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
            }
            // Per block all +127 or all −127 (q8_1 scale exactly 1, codes = values).
            let mmax = 5;
            let mut x = vec![0f32; mmax * k];
            for blk in x.chunks_exact_mut(32) {
                blk.fill(if rng.next().is_multiple_of(2) {
                    127.0
                } else {
                    -127.0
                });
            }
            let (yref, sabs) = reference(
                &wdec,
                &x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                n,
                k,
                mmax,
            );
            let mut first: Option<Vec<u32>> = None;
            for isa in isas() {
                let mut w = PreparedWeight::new(view).unwrap();
                w.set_isa(isa).unwrap();
                w.set_threads(1).unwrap();
                let full = forward(&w, &x, mmax, None);
                for m in [1, 2, mmax] {
                    let y = forward(&w, &x[..m * k], m, None);
                    let what = format!("{format} N={n} K={k} {isa:?} m{m}");
                    check(
                        &what,
                        &y,
                        &yref[..m * n],
                        &sabs[..m * n],
                        None,
                        n,
                        k,
                        false,
                        &mut c,
                    );
                    assert_eq!(bits(&y), bits(&full[..m * n]), "{what}: batch rows differ");
                }
                match &first {
                    None => first = Some(bits(&full)),
                    Some(f) => assert_eq!(f, &bits(&full), "{format} N={n}: AVX2 ≠ scalar"),
                }
            }
        }
        println!(
            "{format}: extreme super-blocks, N = 1..7, K = {k}: {} outputs within \
             linear_f32acc_v1 (worst |err|/tol = {:.2e}); AVX2 = scalar, batch = single",
            c.count, c.worst
        );
    }
}

/// The opt-in q8_1 activation profile of the grouped formats (`Activation::Q8_1`):
/// criterion `linear_f32acc_v1` against the f64 product of the decoded weights with the
/// q8_1 values x̂ re-derived here ([`q8_1_xhat`]); random and extreme payloads (codes at
/// both ends of the range in every pattern, scales ±65504 and subnormal, activations whose
/// codes reach ±127), K = 32·odd, 128 and 4096, N odd (rows groups of 1..4 plus a tail);
/// scalar = AVX2, 1 = 2 threads, a row alone = the same row in a batch, bit for bit.
#[test]
fn q8_1_activation_profile_meets_the_criterion_on_grouped_formats() {
    use linear::Activation;
    let mut rng = Rng(77);
    let grouped = [
        Format::Q2_G64Fp16,
        Format::T2_G128Fp16,
        Format::Q4_G64Fp16,
        Format::Q5_G64Fp16,
        Format::Q6_G64Fp16,
        Format::Q8_G32Fp16,
    ];
    let layout = Layout::RowSplitK128_V1;
    for format in grouped {
        assert!(linear::supported_activation(
            format,
            layout,
            Activation::Q8_1,
            Device::Cpu
        ));
        let info = format.info();
        let mut c = Checked {
            count: 0,
            worst: 0.0,
        };
        for (k, n) in [(96, 13), (160, 7), (128, 9), (4096, 5), (32 * 37, 3)] {
            for extreme in [false, true] {
                let planes = if extreme {
                    // Codes: per 32-block a pattern of the range ends (all max, all min,
                    // alternating, max/min halves); scales at the binary16 extremes.
                    let (lo, hi) = (info.code_min as i8, info.code_max as i8);
                    let codes: Vec<i8> = (0..n * k)
                        .map(|i| match (i / 32 + i / k) % 4 {
                            0 => hi,
                            1 => lo,
                            2 => [lo, hi][i % 2],
                            _ => [hi, lo][(i % 32) / 16],
                        })
                        .collect();
                    let g = info.block_values as usize;
                    let scales: Vec<u16> = (0..n * k.div_ceil(g))
                        .map(|i| [0x7BFF, 0xFBFF, 0x0001, 0x8400, 0x3C00][i % 5])
                        .collect();
                    let sizes = ninfer::layouts::plane_sizes(format, layout, n, k).unwrap();
                    let mut p: Vec<Vec<u8>> = sizes.iter().map(|&l| vec![0u8; l]).collect();
                    let [a, b, cc] = &mut p[..] else {
                        unreachable!()
                    };
                    ninfer::layouts::row_split::pack(format, n, k, &codes, &scales, [a, b, cc])
                        .unwrap();
                    p
                } else {
                    random_planes(format, n, k, &mut rng)
                };
                let view =
                    WeightView::new(format, layout, n, k, [&planes[0], &planes[1], &planes[2]])
                        .unwrap();
                let mut wdec = vec![0f32; n * k];
                for r in 0..n {
                    decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
                }
                let mmax = 64;
                let x: Vec<f32> = (0..mmax * k)
                    .map(|i| {
                        if extreme && (i / 32) % 3 == 0 {
                            // Every code ±127 (one sign per block, or alternating).
                            if (i / 64) % 2 == 0 {
                                1.0
                            } else {
                                [-1.0, 1.0][i % 2]
                            }
                        } else {
                            rng.unit() * if i % 7 == 0 { 100.0 } else { 1.0 }
                        }
                    })
                    .collect();
                let xv: Vec<f64> = x.chunks(k).flat_map(q8_1_xhat).collect();
                let (yref, sabs) = reference(&wdec, &xv, n, k, mmax);
                let what = format!("{format}+q8_1 K={k} ext={extreme}");
                check_all_paths(view, to_q8_1, &x, &yref, &sabs, &what, &mut c);
            }
        }
        println!(
            "{format}+q8_1: {} outputs within linear_f32acc_v1 (worst |err|/tol = {:.2e})",
            c.count, c.worst
        );
    }
}

/// At M = 1 the q8_1 block kernels take the weight rows 16 per call, a few per pass: with
/// N = 37 (groups of 16, 16 and 5; passes of four ending in one row) every output meets the
/// criterion, every tier and thread count gives the same bits, and each M = 1 product
/// equals its row of the M = 64 product (other kernels, four rows per call).
#[test]
fn gemv_row_groups_and_their_partial_passes() {
    let mut rng = Rng(1637);
    let n = 37;
    let cases: &[(Format, usize)] = &[
        (Format::GgufQ8_0, 320),
        (Format::GgufQ4_0, 320),
        (Format::GgufIq4Nl, 320),
        (Format::GgufQ2_K, 512),
        (Format::GgufQ4_K, 512),
        (Format::GgufQ6_K, 512),
        (Format::GgufIq2Xxs, 512),
        (Format::GgufIq4Xs, 512),
        (Format::Q4_G64Fp16, 384),
        (Format::Q8_G32Fp16, 384),
    ];
    for &(format, k) in cases {
        let info = format.info();
        let gguf = info.layout == Layout::GgufBlocksV1;
        let planes = random_planes(format, n, k, &mut rng);
        let view = WeightView::new(
            format,
            info.layout,
            n,
            k,
            [&planes[0], &planes[1], &planes[2]],
        )
        .unwrap();
        let mut wdec = vec![0f32; n * k];
        for r in 0..n {
            decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
        }
        let mmax = 64;
        let x: Vec<f32> = (0..mmax * k).map(|_| rng.unit()).collect();
        let xv: Vec<f64> = x.chunks(k).flat_map(q8_1_xhat).collect();
        let (yref, sabs) = reference(&wdec, &xv, n, k, mmax);
        let mut c = Checked {
            count: 0,
            worst: 0.0,
        };
        let what = format!("{format} N={n} K={k}");
        if gguf {
            check_all_paths(view, |_| {}, &x, &yref, &sabs, &what, &mut c);
        } else {
            check_all_paths(view, to_q8_1, &x, &yref, &sabs, &what, &mut c);
        }
        println!("{what}: {} outputs within linear_f32acc_v1", c.count);
    }
}

/// The activation profile's refusals: Exact on GGUF, Q8_1 on formats without it, K not a
/// multiple of 32; the support query agrees with `set_activation`; defaults.
#[test]
fn activation_profile_refusals_and_defaults() {
    use linear::Activation;
    let mut rng = Rng(5);
    for i in 0..Format::COUNT as u32 {
        let format = Format::from_u32(i).unwrap();
        let layout = format.info().layout;
        if !linear::supported(format, layout, Dtype::F32, Dtype::F32, Device::Cpu) {
            for a in [Activation::Exact, Activation::Q8_1] {
                assert!(!linear::supported_activation(
                    format,
                    layout,
                    a,
                    Device::Cpu
                ));
            }
            continue;
        }
        let k = 256;
        let planes = random_planes(format, 3, k, &mut rng);
        let view =
            WeightView::new(format, layout, 3, k, [&planes[0], &planes[1], &planes[2]]).unwrap();
        let mut w = PreparedWeight::new(view).unwrap();
        let gguf = layout == Layout::GgufBlocksV1;
        assert_eq!(
            w.activation(),
            if gguf {
                Activation::Q8_1
            } else {
                Activation::Exact
            },
            "{format} default"
        );
        for a in [Activation::Exact, Activation::Q8_1] {
            let want = linear::supported_activation(format, layout, a, Device::Cpu);
            let before = w.activation();
            match w.set_activation(a) {
                Ok(()) => assert!(want, "{format} {a:?}"),
                Err(Error::Unsupported(msg)) => {
                    assert!(!want, "{format} {a:?}");
                    assert_eq!(w.activation(), before);
                    if gguf {
                        assert!(msg.contains("q8_1"), "{msg}");
                    }
                }
                Err(e) => panic!("{format} {a:?}: {e}"),
            }
        }
        if !ninfer::cuda::compiled() {
            assert!(!linear::supported_activation(
                format,
                layout,
                Activation::Q8_1,
                Device::Cuda
            ));
        }
    }
    for f in [Format::Bf16, Format::Fp8E4m3fnRowBf16] {
        assert!(!linear::supported_activation(
            f,
            f.info().layout,
            Activation::Q8_1,
            Device::Cpu
        ));
    }
    // K = 200: q4 supports q8_1 but not this K.
    let (n, k) = (2, 200);
    let planes = random_planes(Format::Q4_G64Fp16, n, k, &mut rng);
    let view = WeightView::new(
        Format::Q4_G64Fp16,
        Layout::RowSplitK128_V1,
        n,
        k,
        [&planes[0], &planes[1], &planes[2]],
    )
    .unwrap();
    let mut w = PreparedWeight::new(view).unwrap();
    assert!(matches!(
        w.set_activation(Activation::Q8_1),
        Err(Error::BadShape(_))
    ));
    assert_eq!(w.activation(), Activation::Exact);
    // nvfp4: K = 80 is legal (whole 16-value blocks) but not a multiple of 32.
    let planes = random_planes(Format::Nvfp4, n, 80, &mut rng);
    let view = WeightView::new(
        Format::Nvfp4,
        Layout::BlockScaleK16_M128x4_V1,
        n,
        80,
        [&planes[0], &planes[1], &planes[2]],
    )
    .unwrap();
    let mut w = PreparedWeight::new(view).unwrap();
    assert_eq!(w.activation(), Activation::Exact);
    assert!(matches!(
        w.set_activation(Activation::Q8_1),
        Err(Error::BadShape(_))
    ));
    assert_eq!(w.activation(), Activation::Exact);
    assert!(matches!(
        Activation::from_u32(3),
        Err(Error::InvalidArgument(_))
    ));
}

/// nvfp4 planes (block_scale_k16_m128x4_v1) from logical codes [n, k] (one word per value),
/// linear scale words [n, k/16] and one divisor per row (n stacked one-row sources).
fn nvfp4_planes(n: usize, k: usize, codes: &[u8], words: &[u8], divs: &[f32]) -> Vec<Vec<u8>> {
    let nkb = k / 16;
    let mut c = vec![0u8; n * k / 2];
    for (j, &w) in codes.iter().enumerate() {
        c[j / 2] |= (w & 0x0F) << (4 * (j % 2));
    }
    let mut s = vec![0u8; ninfer::layouts::block_scale::scales_len(n, nkb).unwrap()];
    ninfer::layouts::block_scale::pack_scales(n, nkb, words, &mut s).unwrap();
    let d = divs.iter().flat_map(|d| d.to_le_bytes()).collect();
    vec![c, s, d]
}

/// nvfp4 weights written plainly from the spec's equation (§3.3), for any word (also the
/// invalid ones: their arithmetic meaning): `binary32(binary32(e2m1(c)·e4m3fn(s)) / d)`.
fn nvfp4_plain(codes: &[u8], words: &[u8], divs: &[f32], k: usize) -> Vec<f32> {
    let e2m1 = |c: u8| {
        let m = [0.0f32, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][(c & 7) as usize];
        if c & 8 != 0 { -m } else { m }
    };
    let e4m3 = |s: u8| {
        let (e, m) = (((s >> 3) & 15) as i32, (s & 7) as f32);
        let v = if e == 15 && m == 7.0 {
            f32::NAN
        } else if e == 0 {
            m * 2f32.powi(-9)
        } else {
            (1.0 + m / 8.0) * 2f32.powi(e - 7)
        };
        if s & 0x80 != 0 { -v } else { v }
    };
    codes
        .iter()
        .enumerate()
        .map(|(j, &c)| {
            let r = j / k;
            e2m1(c) * e4m3(words[r * (k / 16) + (j % k) / 16]) / divs[r]
        })
        .collect()
}

/// The opt-in q8_1 profile of nvfp4 (`Activation::Q8_1`): criterion `linear_f32acc_v1`
/// against the f64 product of the decoded weights (`decode_row`, tested against the spec
/// and ml_dtypes) with the q8_1 values x̂ re-derived here; every row its own divisor, rows
/// chosen for the fast order's edges and the exact-weight order (module docs of
/// `linear::cpu::nvfp4_q8`): codes all ±6 against activation codes all ±127, scale 448 and
/// the subnormal 2⁻⁹, d_w = 2¹¹⁶ (fast) / 2¹¹⁷ (subnormal weights), 3e38 (fast with scales
/// ≥ 8, else subnormal weights), 2⁻¹⁴⁰ (infinite weights: NaN outputs; zero codes: 0),
/// 2688·2⁻¹²⁷ (a weight of exactly 2¹²⁷), 2⁻⁹⁰, zero scales, −0 codes. K = 96, 160
/// (a partial scale tile), 128, 224, 1184 and 4096, N = 13 and 130 (beyond a 128-row tile);
/// scalar = AVX2, 1 = 2 threads, a row alone = the same row in a batch, bit for bit.
#[test]
fn q8_1_activation_profile_meets_the_criterion_on_nvfp4() {
    use linear::Activation;
    let mut rng = Rng(4242);
    let (format, layout) = (Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1);
    assert!(linear::supported_activation(
        format,
        layout,
        Activation::Q8_1,
        Device::Cpu
    ));
    let p2 = |e: i32| 2f32.powi(e);
    let mut c = Checked {
        count: 0,
        worst: 0.0,
    };
    let mut nan_rows = 0;
    for (k, n) in [
        (96, 13),
        (160, 13),
        (128, 13),
        (224, 130),
        (32 * 37, 13),
        (4096, 13),
    ] {
        let nkb = k / 16;
        let (mut codes, mut words, mut divs) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..n {
            let kind = r % 13;
            // ±6 patterns per 16-block: all +6, all −6, alternating, halves.
            let six = |j: usize| match (j / 16 + r) % 4 {
                0 => 0x7,
                1 => 0xF,
                2 => [0x7, 0xF][j % 2],
                _ => [0xF, 0x7][(j % 16) / 8],
            };
            for j in 0..k {
                codes.push(match kind {
                    1..=3 => six(j),
                    6 => [0x0, 0x8][j % 2],
                    // One ±6 (the weight ±2¹²⁷), against an activation of about ±1.
                    9 if j == 0 => [0x7, 0xF][r % 2],
                    9 if j < 16 => 0,
                    _ => (rng.next() % 16) as u8,
                });
            }
            for b in 0..nkb {
                let any = (rng.next() % 0x7F) as u8; // 0x00..=0x7E
                words.push(match kind {
                    1 => 0x7E,
                    2 | 3 => 0x01,
                    4 => 0x50 + (rng.next() % 0x2F) as u8, // ≥ 8
                    8 => 0,
                    9 => [0x7E, 0][(b > 0) as usize],
                    11 => [0x7E, 0x01, 0x38][b % 3],
                    _ => any,
                });
            }
            divs.push(match kind {
                2 => p2(116),
                3 => p2(117),
                4 | 5 => 3e38,
                6 | 7 => f32::from_bits(1 << 9), // 2⁻¹⁴⁰
                9 => 2688.0 * p2(-127),
                10 => p2(-90),
                1 | 8 | 11 => 1.0,
                _ => 0.75 + rng.unit().abs(),
            });
        }
        let planes = nvfp4_planes(n, k, &codes, &words, &divs);
        let view =
            WeightView::new(format, layout, n, k, [&planes[0], &planes[1], &planes[2]]).unwrap();
        let mut wdec = vec![0f32; n * k];
        for r in 0..n {
            decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
        }
        let mmax = 64;
        let x: Vec<f32> = (0..mmax * k)
            .map(|i| {
                let j = i % k + i / k; // blocks shift by one value per row
                if (j / 32) % 3 == 0 || i % k == 0 {
                    // Every code ±127 (one sign per block, or alternating); element 0
                    // (against row kind 9's weight 2¹²⁷) ±1.
                    if (j / 64) % 2 == 0 {
                        1.0
                    } else {
                        [-1.0, 1.0][i % 2]
                    }
                } else {
                    rng.unit() * if i % 7 == 0 { 100.0 } else { 1.0 }
                }
            })
            .collect();
        let xv: Vec<f64> = x.chunks(k).flat_map(q8_1_xhat).collect();
        let (yref, sabs) = reference(&wdec, &xv, n, k, mmax);
        nan_rows += (0..n).filter(|r| yref[*r].is_nan()).count();
        let what = format!("nvfp4+q8_1 K={k} N={n}");
        check_all_paths(view, to_q8_1, &x, &yref, &sabs, &what, &mut c);
    }
    // The 2⁻¹⁴⁰ rows with nonzero codes have infinite weights: NaN where y_ref is NaN.
    assert!(nan_rows >= 6, "{nan_rows} NaN rows");
    println!(
        "nvfp4+q8_1: {} outputs within linear_f32acc_v1 (worst |err|/tol = {:.2e}), {nan_rows} \
         NaN rows at M = 1",
        c.count, c.worst
    );
}

/// nvfp4 payloads that break §3.3 (no validation in a product, §8) under the q8_1 profile:
/// negative scale words and a negative divisor are computed with their arithmetic meaning
/// (criterion against the spec's equation written plainly), a NaN scale word or a zero
/// divisor gives NaN / ±Inf exactly where that equation's f64 product does; every path the
/// same bits.
#[test]
fn q8_1_profile_on_invalid_nvfp4_words() {
    use linear::Activation;
    let mut rng = Rng(99);
    let (n, k, m) = (6, 256, 3);
    let (format, layout) = (Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1);
    let codes: Vec<u8> = (0..n * k).map(|_| (rng.next() % 16) as u8).collect();
    let mut words: Vec<u8> = (0..n * k / 16).map(|_| (rng.next() % 0x7F) as u8).collect();
    let nkb = k / 16;
    words[nkb + 3] = 0xB8; // row 1: −1.0
    words[2 * nkb + 5] = 0x7F; // row 2: NaN
    words[3 * nkb + 7] = 0xFF; // row 3: NaN
    words[4 * nkb] = 0x80; // row 4: −0
    let divs = [1.5f32, 1.0, 1.0, 1.0, -2.0, 0.0];
    let planes = nvfp4_planes(n, k, &codes, &words, &divs);
    let view = WeightView::new(format, layout, n, k, [&planes[0], &planes[1], &planes[2]]).unwrap();
    let wv = nvfp4_plain(&codes, &words, &divs, k);
    let x: Vec<f32> = (0..m * k).map(|_| rng.unit()).collect();
    let xv: Vec<f64> = x.chunks(k).flat_map(q8_1_xhat).collect();
    let (yref, sabs) = reference(&wv, &xv, n, k, m);
    let mut results = Vec::new();
    let mut c = Checked {
        count: 0,
        worst: 0.0,
    };
    for isa in isas() {
        let mut w = PreparedWeight::new(view).unwrap();
        w.set_activation(Activation::Q8_1).unwrap();
        w.set_isa(isa).unwrap();
        let y = forward(&w, &x, m, None);
        for (i, (&got, &r)) in y.iter().zip(&yref).enumerate() {
            if r.is_infinite() {
                assert_eq!(got as f64, r, "{isa:?} y[{i}]");
            }
        }
        let finite = |v: &[f64]| {
            v.iter()
                .map(|r| if r.is_infinite() { 0.0 } else { *r })
                .collect::<Vec<_>>()
        };
        let yf: Vec<f32> = y
            .iter()
            .zip(&yref)
            .map(|(&g, r)| if r.is_infinite() { 0.0 } else { g })
            .collect();
        check(
            "nvfp4+q8_1 invalid",
            &yf,
            &finite(&yref),
            &sabs,
            None,
            n,
            k,
            false,
            &mut c,
        );
        results.push(bits(&y));
        // Row by row gives the same bits.
        for r in 0..m {
            let y1 = forward(&w, &x[r * k..(r + 1) * k], 1, None);
            assert_eq!(bits(&y1), bits(&y[r * n..(r + 1) * n]), "{isa:?} row {r}");
        }
    }
    assert!(results.windows(2).all(|r| r[0] == r[1]));
    for i in 0..m {
        for r in [2, 3, 5] {
            assert!(f32::from_bits(results[0][i * n + r]).is_nan() || r == 5);
        }
    }
    println!("nvfp4+q8_1 invalid words: {} outputs checked", c.count);
}

/// nvfp4 rows whose weights are subnormal binary32 values (codes 0.5, scale 2⁻⁹, d_w =
/// 3·2¹²⁶ and 5·2¹²⁵: the weights 2⁻¹³⁶/3 and 2⁻¹³⁵/5 keep 12 bits, rounded by 2⁻¹³ and
/// 2⁻¹⁴ of their value, all the same way) against same-sign activations: a product
/// computed from the exact e2m1·sf/d_w would miss the criterion ((K + 8)·2⁻²³ = 2⁻¹⁵
/// here); the q8_1 profile must use the decoded weights (its exact-weight order). A third
/// row (d_w = 2¹⁰⁰) is fast. Every path the same bits.
#[test]
fn q8_1_profile_on_nvfp4_subnormal_weights() {
    use linear::Activation;
    let (n, k) = (3, 256);
    let codes = vec![0x1u8; n * k];
    let words = vec![0x01u8; n * k / 16];
    let divs = [3.0 * 2f32.powi(126), 5.0 * 2f32.powi(125), 2f32.powi(100)];
    let planes = nvfp4_planes(n, k, &codes, &words, &divs);
    let view = WeightView::new(
        Format::Nvfp4,
        Layout::BlockScaleK16_M128x4_V1,
        n,
        k,
        [&planes[0], &planes[1], &planes[2]],
    )
    .unwrap();
    let mut wdec = vec![0f32; n * k];
    for r in 0..n {
        decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
    }
    assert!(wdec[..2 * k].iter().all(|w| w.is_subnormal()));
    let x = vec![1.0e4f32; k];
    let xv = q8_1_xhat(&x);
    let (yref, sabs) = reference(&wdec, &xv, n, k, 1);
    let mut c = Checked {
        count: 0,
        worst: 0.0,
    };
    let mut results = Vec::new();
    for isa in isas() {
        let mut w = PreparedWeight::new(view).unwrap();
        w.set_activation(Activation::Q8_1).unwrap();
        w.set_isa(isa).unwrap();
        let y = forward(&w, &x, 1, None);
        check(
            "nvfp4+q8_1 subnormal",
            &y,
            &yref,
            &sabs,
            None,
            n,
            k,
            false,
            &mut c,
        );
        results.push(bits(&y));
    }
    assert!(results.windows(2).all(|r| r[0] == r[1]));
}

/// The exact-activation product of `view` on every path (ISA × threads 1, 2; the batch and
/// each activation row alone): identical bits everywhere, and every output whose reference
/// stays inside the binary32 range within `linear_f32acc_v1` of the f64 product of the
/// `decode_row` weights. Returns how many outputs were checked against the criterion.
fn exact_paths_within_criterion(view: WeightView<'_>, x: &[f32], m: usize, label: &str) -> usize {
    let (n, k) = (view.rows(), view.cols());
    let mut wdec = vec![0f32; n * k];
    for r in 0..n {
        decode::decode_row(&view, r as u64, &mut wdec[r * k..(r + 1) * k]).unwrap();
    }
    let xv: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let (yref, sabs) = reference(&wdec, &xv, n, k, m);
    let mut first: Option<Vec<u32>> = None;
    let mut checked = 0;
    for isa in isas() {
        for threads in [1, 2] {
            let mut w = PreparedWeight::new(view).unwrap();
            w.set_isa(isa).unwrap();
            w.set_threads(threads).unwrap();
            let y = forward(&w, x, m, None);
            let mut single = Vec::new();
            for r in 0..m {
                single.extend(forward(&w, &x[r * k..(r + 1) * k], 1, None));
            }
            let what = format!("{label} {isa:?} t{threads}");
            assert_eq!(bits(&y), bits(&single), "{what}: batch vs single rows");
            match &first {
                None => first = Some(bits(&y)),
                Some(f) => assert_eq!(f, &bits(&y), "{what}: bits differ"),
            }
            for (i, &got) in y.iter().enumerate() {
                let (r, s) = (yref[i], sabs[i]);
                let tol = bound(k, s, r, false);
                // Partial sums past the binary32 range overflow in any order.
                if !r.is_finite() || s + tol >= f32::MAX as f64 {
                    continue;
                }
                let err = (got as f64 - r).abs();
                assert!(
                    err <= tol,
                    "{what}: y[x row {}, w row {}] = {got:e}, y_ref = {r:e}, |err| = {err:e} > {tol:e}",
                    i / n,
                    i % n
                );
                checked += 1;
            }
        }
    }
    checked
}

/// fp8 rows against activation rows on both sides of the scaled order's conditions
/// (cpu::float docs): row multipliers from the smallest bf16 subnormal to just below and at
/// 2¹¹⁹, zero, 2¹²⁵ (256·s overflows); activation rows with tiny normal values (2⁻¹²⁶:
/// against the smallest codes, products subnormal before the row factor 256·s = 2¹⁰⁸), values
/// at the 2⁻¹⁰⁹ bound, huge positive values (K·max|x| past 2¹²⁶: the sum before the factor
/// would overflow against s = 2⁻¹²⁰), subnormal values, zeros.
/// The criterion holds per output (every output whose Σ|w·x| lies inside the binary32
/// range); the bits agree across ISAs, thread counts, batch (mixed activation rows) and
/// single rows.
#[test]
fn fp8_scaled_order_conditions_both_sides() {
    let pow2 = |e: i32| 2f32.powi(e);
    // bf16 words: 1, 2¹⁰⁰, 2¹¹⁸·(2 − 2⁻⁷), 2¹¹⁹, 2⁻¹²⁵, 2⁻¹³³, 0, 0.01, 2⁻¹²⁰ (codes
    // 256..448, positive), 2¹⁰⁰ (codes ±2⁻⁹ only), 2¹²⁵ (codes below 2: finite weights,
    // but 256·s overflows).
    let scales: [u16; 11] = [
        0x3F80, 0x7180, 0x7AFF, 0x7B00, 0x0100, 0x0001, 0x0000, 0x3C24, 0x0380, 0x7180, 0x7E00,
    ];
    let n = scales.len();
    let mut rng = Rng(77);
    let mut total = 0;
    for k in [100usize, 333] {
        let m = 6;
        let format = Format::Fp8E4m3fnRowBf16;
        let mut codes: Vec<u8> = (0..n * k).map(|_| rng.next() as u8).collect();
        for (j, c) in codes.iter_mut().enumerate() {
            if *c & 0x7F == 0x7F {
                *c ^= 1;
            }
            if j % 17 == 0 {
                *c = 0x7E | (*c & 0x80); // ±448
            }
            match j / k {
                6 => *c &= 0x80, // a zero-scale row holds signed zeros only (§3.4)
                8 => *c = 0x70 | (*c & 0x0F).min(0x0E),
                9 => *c &= 0x81,
                10 => *c &= 0xBF,
                _ => {}
            }
        }
        let sbytes: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
        let view =
            WeightView::new(format, Layout::RowScaleV1, n, k, [&codes, &sbytes, &[]]).unwrap();
        let mut x = Vec::with_capacity(m * k);
        for r in 0..m {
            for j in 0..k {
                let u = rng.unit();
                x.push(match r {
                    0 => u,
                    1 => (1.0 + u.abs()) * pow2(-126) * u.signum(),
                    2 => (1.0 + u.abs() * 0.99) * pow2(-109) * u.signum(),
                    3 => (1.0 + u.abs()) * pow2(124),
                    4 if j % 3 == 0 => f32::from_bits(1 + (rng.next() % 1000) as u32),
                    4 => u,
                    _ if j % 2 == 0 => 0.0,
                    _ => u * 1e10,
                });
            }
        }
        let checked = exact_paths_within_criterion(view, &x, m, &format!("K={k}"));
        assert!(checked >= m * n, "K={k}: only {checked} outputs in range");
        total += checked;
    }
    println!("fp8 scaled-order conditions: {total} outputs within linear_f32acc_v1");
}

/// nvfp4 rows against activation rows on both sides of the nvfp4 scaled order's conditions
/// (cpu::float docs), four weights of 8 rows (two stacked sources each) × 6 activation
/// rows, K = 80:
/// - random codes and scales, divisors 1 and 2¹¹⁶ (scaled);
/// - codes +0.5, scales 2⁻⁹, divisors 2⁻¹¹⁰ / 2⁻¹¹⁵ (scaled): against x of size 2⁻¹²⁶
///   the products before the final division are subnormal (that activation row must
///   take the plain order);
/// - codes +6, scales 448, divisors 2¹¹⁶ / 2¹¹⁷: against positive x of size 2¹¹¹ the sum
///   before the division would overflow (K·max|x| past 2¹¹⁶);
/// - codes +0.5, scales 2⁻⁹, divisor 1.5·2¹²⁷ (past the row bound): every decoded weight
///   is a rounded subnormal, which the scaled order would not see (against positive x of
///   size 2⁶⁰, inside the activation bounds).
///
/// The criterion holds per output (Σ|w·x| inside the binary32 range); the bits agree
/// across ISAs, thread counts, batch (mixed activation rows) and single rows.
#[test]
fn nvfp4_scaled_order_conditions_both_sides() {
    let pow2 = |e: i32| 2f32.powi(e);
    let (n, k, m) = (8usize, 80usize, 6usize);
    let layout = Layout::BlockScaleK16_M128x4_V1;
    let mut rng = Rng(91);
    let mut total = 0;
    for (case, (code, scale, ds)) in [
        (None, None, [1.0f32, pow2(116)]),
        (Some(0x11u8), Some(0x01u8), [pow2(-110), pow2(-115)]),
        (Some(0x77), Some(0x7E), [pow2(116), pow2(117)]),
        (Some(0x11), Some(0x01), [1.5 * pow2(127), 1.5 * pow2(127)]),
    ]
    .into_iter()
    .enumerate()
    {
        let sizes = ninfer::layouts::plane_sizes(Format::Nvfp4, layout, n, k).unwrap();
        let mut p: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&l| (0..l).map(|_| rng.next() as u8).collect())
            .collect();
        if let Some(c) = code {
            p[0].iter_mut().for_each(|b| *b = c);
        }
        match scale {
            Some(s) => p[1].iter_mut().for_each(|b| *b = s),
            None => p[1].iter_mut().for_each(|b| *b &= 0x7E),
        }
        p[2] = ds.iter().flat_map(|d| d.to_le_bytes()).collect();
        let view = WeightView::new(Format::Nvfp4, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
        let mut x = Vec::with_capacity(m * k);
        for r in 0..m {
            for j in 0..k {
                let u = rng.unit();
                x.push(match r {
                    0 => u,
                    // 2⁻¹⁰·x = (2¹³ + ½ − 2⁻⁸)·2⁻¹⁴⁹: every fma on a subnormal sum rounds
                    // the same way, by a relative 2⁻¹⁴.
                    1 => (1.0 + pow2(-14) - pow2(-21)) * pow2(-126),
                    2 => (1.0 + u.abs() * 0.99) * pow2(-116) * u.signum(),
                    3 => (1.0 + u.abs() * 0.9) * pow2(111),
                    4 if j % 3 == 0 => f32::from_bits(1 + (rng.next() % 1000) as u32),
                    4 => u,
                    _ => (1.0 + u.abs()) * pow2(60),
                });
            }
        }
        let checked = exact_paths_within_criterion(view, &x, m, &format!("case {case}"));
        assert!(
            checked >= m * n,
            "case {case}: only {checked} outputs in range"
        );
        total += checked;
    }
    println!("nvfp4 scaled-order conditions: {total} outputs within linear_f32acc_v1");
}

/// A weight row's bits do not depend on the rows that share its pass (nvfp4, both
/// activation profiles): the q8_1 kernel decides "fast" from one running maximum of the
/// scale words of its group of four rows, the exact profile splits a group into runs of
/// scaled and plain rows. Each row of a weight mixing a fast / scaled row with extreme
/// neighbours (a NaN scale word, d_w = 2¹¹⁷ with the scale 2⁻⁹ (subnormal weights), d_w =
/// 3·10³⁸ with scales ≥ 8 (fast only by a scan of its own words), d_w = 2⁻¹⁴⁰ (infinite
/// weights), a negative scale word, a NaN divisor) at every position of groups of N = 1..5
/// and 9 rows gives the bits of the same row as a one-row weight. (NaN outputs compared as
/// NaN: their sign is the documented exception, docs/linear.md.)
#[test]
fn nvfp4_weight_row_bits_do_not_depend_on_its_group() {
    use linear::Activation;
    let mut rng = Rng(314);
    let layout = Layout::BlockScaleK16_M128x4_V1;
    let canon = |v: &[f32]| -> Vec<u32> {
        v.iter()
            .map(|f| if f.is_nan() { 0x7FC0_0000 } else { f.to_bits() })
            .collect()
    };
    let mut compared = 0;
    for k in [64usize, 160, 256] {
        let nkb = k / 16;
        // (scale words of the row, divisor): kind 0 is the ordinary row.
        let kind = |e: usize, rng: &mut Rng| -> (Vec<u8>, f32) {
            let mut w: Vec<u8> = (0..nkb).map(|_| (rng.next() % 0x7F) as u8).collect();
            let d = match e {
                0 => 0.75 + rng.unit().abs(),
                1 => {
                    w[nkb - 1] = 0x7F;
                    1.0
                }
                2 => {
                    w.iter_mut().for_each(|s| *s = 0x01);
                    2f32.powi(117)
                }
                3 => {
                    w.iter_mut().for_each(|s| *s = 0x50 + *s % 0x2F);
                    3e38
                }
                4 => f32::from_bits(1 << 9),
                5 => {
                    w[0] = 0xB8;
                    1.0
                }
                _ => f32::NAN,
            };
            (w, d)
        };
        for n in [1usize, 2, 3, 4, 5, 9] {
            for extreme in 1..7 {
                for at in 0..n {
                    let (mut codes, mut words, mut divs) = (Vec::new(), Vec::new(), Vec::new());
                    for r in 0..n {
                        let (w, d) = kind(if r == at { 0 } else { extreme }, &mut rng);
                        codes.extend((0..k).map(|_| (rng.next() % 16) as u8));
                        words.extend(w);
                        divs.push(d);
                    }
                    let planes = nvfp4_planes(n, k, &codes, &words, &divs);
                    let view = WeightView::new(
                        Format::Nvfp4,
                        layout,
                        n,
                        k,
                        [&planes[0], &planes[1], &planes[2]],
                    )
                    .unwrap();
                    let m = 3;
                    let x: Vec<f32> = (0..m * k).map(|_| rng.unit()).collect();
                    for act in [Activation::Exact, Activation::Q8_1] {
                        for isa in isas() {
                            let mut w = PreparedWeight::new(view).unwrap();
                            w.set_activation(act).unwrap();
                            w.set_isa(isa).unwrap();
                            for mm in [1, m] {
                                let y = forward(&w, &x[..mm * k], mm, None);
                                for r in 0..n {
                                    let p = nvfp4_planes(
                                        1,
                                        k,
                                        &codes[r * k..(r + 1) * k],
                                        &words[r * nkb..(r + 1) * nkb],
                                        &divs[r..r + 1],
                                    );
                                    let v1 = WeightView::new(
                                        Format::Nvfp4,
                                        layout,
                                        1,
                                        k,
                                        [&p[0], &p[1], &p[2]],
                                    )
                                    .unwrap();
                                    let mut w1 = PreparedWeight::new(v1).unwrap();
                                    w1.set_activation(act).unwrap();
                                    w1.set_isa(isa).unwrap();
                                    let y1 = forward(&w1, &x[..mm * k], mm, None);
                                    let mine: Vec<f32> = (0..mm).map(|i| y[i * n + r]).collect();
                                    assert_eq!(
                                        canon(&y1),
                                        canon(&mine),
                                        "K={k} N={n} row {r} (ordinary row at {at}, neighbours \
                                         of kind {extreme}) {act:?} {isa:?} M={mm}"
                                    );
                                    compared += mm;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    println!("nvfp4 rows alone = rows in their group: {compared} outputs");
}

/// Bytes copied so that they end exactly where an inaccessible page begins: a kernel load
/// past the end of a plane faults (a prefetch does not).
#[cfg(unix)]
struct GuardedBytes {
    map: *mut u8,
    map_len: usize,
    at: usize,
    len: usize,
}

#[cfg(unix)]
impl GuardedBytes {
    fn new(bytes: &[u8]) -> GuardedBytes {
        // SAFETY: a fresh private anonymous mapping of whole pages; the copy stays inside
        // its readable part (data_pages·page ≥ bytes.len()).
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
            let data_pages = bytes.len().div_ceil(page).max(1);
            let map_len = (data_pages + 1) * page;
            let map = libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            let map = map.cast::<u8>();
            let guard = map.add(data_pages * page);
            assert_eq!(libc::mprotect(guard.cast(), page, libc::PROT_NONE), 0);
            let at = data_pages * page - bytes.len();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), map.add(at), bytes.len());
            GuardedBytes {
                map,
                map_len,
                at,
                len: bytes.len(),
            }
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` initialized bytes at `at` inside the live mapping.
        unsafe { std::slice::from_raw_parts(self.map.add(self.at), self.len) }
    }
}

#[cfg(unix)]
impl Drop for GuardedBytes {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}

/// The in-place kernels never load past the end of a plane: nvfp4 (both activation
/// profiles; the q8_1 kernel reads the swizzled scale plane in place, so the last rows of
/// a 128-row band end at the plane's end) and fp8 (both layouts, both orders), every plane
/// placed right before an inaccessible page, N = 1..5, 9, 128, 130, K with partial scale
/// tiles (K/16 = 1, 2, 3, 5, 6, 9, 10, 18) and whole ones (8, 16: the last word of row 127
/// is the plane's last byte) and odd fp8 K, M = 1, 2, 5, scalar and AVX2,
/// 2 threads: the same bits as from ordinary buffers, and no fault.
#[cfg(unix)]
#[test]
fn in_place_kernels_stay_inside_their_planes() {
    use linear::Activation;
    let mut rng = Rng(2718);
    let mut runs = 0;
    let run = |view: WeightView<'_>, act: Activation, isa: Isa, x: &[f32], m: usize| {
        let mut w = PreparedWeight::new(view).unwrap();
        w.set_activation(act).unwrap();
        w.set_isa(isa).unwrap();
        w.set_threads(2).unwrap();
        forward(&w, x, m, None)
    };
    for n in [1usize, 2, 3, 4, 5, 9, 128, 130] {
        for k in [16usize, 32, 48, 80, 96, 128, 144, 160, 256, 288] {
            let nkb = k / 16;
            let codes: Vec<u8> = (0..n * k).map(|_| (rng.next() % 16) as u8).collect();
            // Ordinary rows, scaled-order rows (d = 1) and rows outside both fast orders.
            let words: Vec<u8> = (0..n * nkb).map(|_| (rng.next() % 0x7F) as u8).collect();
            let divs: Vec<f32> = (0..n)
                .map(|i| [1.0f32, 2f32.powi(117), 0.8][i % 3])
                .collect();
            let planes = nvfp4_planes(n, k, &codes, &words, &divs);
            let g: Vec<GuardedBytes> = planes.iter().map(|p| GuardedBytes::new(p)).collect();
            let layout = Layout::BlockScaleK16_M128x4_V1;
            let v = WeightView::new(
                Format::Nvfp4,
                layout,
                n,
                k,
                [&planes[0], &planes[1], &planes[2]],
            )
            .unwrap();
            let vg = WeightView::new(
                Format::Nvfp4,
                layout,
                n,
                k,
                [g[0].bytes(), g[1].bytes(), g[2].bytes()],
            )
            .unwrap();
            for act in [Activation::Exact, Activation::Q8_1] {
                if act == Activation::Q8_1 && k % 32 != 0 {
                    continue;
                }
                for isa in isas() {
                    for m in [1usize, 2, 5] {
                        let x: Vec<f32> = (0..m * k).map(|_| rng.unit()).collect();
                        let want = run(v, act, isa, &x, m);
                        assert_eq!(bits(&run(vg, act, isa, &x, m)), bits(&want));
                        runs += 1;
                    }
                }
            }
            for format in [Format::Fp8E4m3fnRowBf16, Format::Fp8E4m3fnRowFp16] {
                let (layout, kf) = (format.info().layout, k + 1);
                // Codes without NaN words; multipliers 1.5 (scaled order) and, for bf16,
                // 2¹²⁰ on every third row (the multiply-per-element order).
                let fcodes: Vec<u8> = (0..n * kf).map(|_| rng.next() as u8 & 0xBF).collect();
                let mult = |r: usize| -> [u8; 2] {
                    match format {
                        Format::Fp8E4m3fnRowBf16 if r.is_multiple_of(3) => 0x7B80u16,
                        Format::Fp8E4m3fnRowBf16 => 0x3FC0,
                        _ => 0x3E00,
                    }
                    .to_le_bytes()
                };
                let p: Vec<Vec<u8>> = if layout == Layout::RowScaleV1 {
                    vec![fcodes, (0..n).flat_map(mult).collect(), Vec::new()]
                } else {
                    let stride = ninfer::layouts::plane_sizes(format, layout, 1, kf).unwrap()[0];
                    let mut rec = vec![0u8; n * stride];
                    for (r, o) in rec.chunks_exact_mut(stride).enumerate() {
                        o[..2].copy_from_slice(&mult(r));
                        o[2..2 + kf].copy_from_slice(&fcodes[r * kf..(r + 1) * kf]);
                    }
                    vec![rec, Vec::new(), Vec::new()]
                };
                let g: Vec<GuardedBytes> = p.iter().map(|q| GuardedBytes::new(q)).collect();
                let v = WeightView::new(format, layout, n, kf, [&p[0], &p[1], &p[2]]).unwrap();
                let vg = WeightView::new(
                    format,
                    layout,
                    n,
                    kf,
                    [g[0].bytes(), g[1].bytes(), g[2].bytes()],
                )
                .unwrap();
                for isa in isas() {
                    for m in [1usize, 2, 5] {
                        let x: Vec<f32> = (0..m * kf).map(|_| rng.unit()).collect();
                        let want = run(v, Activation::Exact, isa, &x, m);
                        let got = run(vg, Activation::Exact, isa, &x, m);
                        assert_eq!(bits(&got), bits(&want), "{format} N={n} K={kf}");
                        runs += 1;
                    }
                }
            }
        }
    }
    println!("in-place kernels next to a guard page: {runs} products");
}

/// The q8_1 profile's exact-weight order of nvfp4 (rows that are not fast) is the exact
/// profile's plain order with x̂ for x (cpu::nvfp4_q8 docs): rows with subnormal weights
/// (d_w = 2¹¹⁷ with the scale 2⁻⁹; 3·10³⁸ with small scales), infinite weights (d_w =
/// 2⁻¹⁴⁰, d_w = 0), a NaN divisor, and d_w = 2¹²⁰ with a NaN scale word give, under
/// `Activation::Q8_1` on x, the bits the exact profile gives on x̂ (re-derived here), ±Inf
/// and NaN included (NaN compared as NaN: the sign is the documented exception), M = 1
/// and 3, scalar and AVX2. (Rows whose divisor lies in the exact profile's scaled range
/// take its scaled order there, so they are not compared.)
#[test]
fn nvfp4_q8_1_exact_weight_rows_are_the_plain_order_on_xhat() {
    use linear::Activation;
    let mut rng = Rng(1618);
    let (n, k, m) = (6usize, 256usize, 3usize);
    let nkb = k / 16;
    // Row 2's codes all +0.5 (its weights +Inf or 0: a +Inf output against x > 0).
    let codes: Vec<u8> = (0..n * k)
        .map(|j| {
            if j / k == 2 {
                1
            } else {
                (rng.next() % 16) as u8
            }
        })
        .collect();
    let mut words: Vec<u8> = (0..n * nkb).map(|_| (rng.next() % 0x7F) as u8).collect();
    words[3] = 0x01; // row 0: 0.5·2⁻⁹ / 2¹¹⁷ is subnormal
    for w in &mut words[nkb..2 * nkb] {
        *w %= 0x30; // row 1: scales below 1 against 3·10³⁸
    }
    words[nkb + 5] = 0x01;
    words[5 * nkb + 7] = 0x7F; // row 5: NaN scale
    let divs = [
        2f32.powi(117),
        3e38,
        f32::from_bits(1 << 9),
        0.0,
        f32::NAN,
        2f32.powi(120),
    ];
    let planes = nvfp4_planes(n, k, &codes, &words, &divs);
    let view = WeightView::new(
        Format::Nvfp4,
        Layout::BlockScaleK16_M128x4_V1,
        n,
        k,
        [&planes[0], &planes[1], &planes[2]],
    )
    .unwrap();
    // Activation row 0 in [1, 3] (every code nonzero), the others in (−3, 3).
    let x: Vec<f32> = (0..m * k)
        .map(|i| match i / k {
            0 => 1.0 + 2.0 * rng.unit().abs(),
            _ => rng.unit() * 3.0,
        })
        .collect();
    let xhat: Vec<f32> = x
        .chunks(k)
        .flat_map(q8_1_xhat)
        .map(|v| v as f32) // exact: d16·q
        .collect();
    let canon = |v: &[f32]| -> Vec<u32> {
        v.iter()
            .map(|f| if f.is_nan() { 0x7FC0_0000 } else { f.to_bits() })
            .collect()
    };
    let mut compared = 0;
    for isa in isas() {
        let mut q = PreparedWeight::new(view).unwrap();
        q.set_activation(Activation::Q8_1).unwrap();
        q.set_isa(isa).unwrap();
        let mut e = PreparedWeight::new(view).unwrap();
        e.set_isa(isa).unwrap();
        for mm in [1, m] {
            let yq = forward(&q, &x[..mm * k], mm, None);
            let ye = forward(&e, &xhat[..mm * k], mm, None);
            assert_eq!(canon(&yq), canon(&ye), "{isa:?} M={mm}");
            assert!(yq.iter().any(|v| v.is_nan()) && yq.iter().any(|v| v.is_infinite()));
            compared += yq.len();
        }
    }
    println!("nvfp4 q8_1 exact-weight rows = exact profile on x̂: {compared} outputs");
}

/// A weight keeps the temporaries of a small call for the next call of that shape; nothing
/// of an earlier call carries over: every format and activation profile, on every ISA and
/// thread count, gives one reused weight's calls (single rows, a batch, a row range, the
/// settings changed in between) the bits of a fresh weight per call.
#[test]
fn a_reused_weight_gives_the_bits_of_a_fresh_one() {
    use linear::Activation;
    let mut rng = Rng(77);
    let n = 11;
    let mut checked = 0;
    for i in 0..Format::COUNT as u32 {
        let format = Format::from_u32(i).unwrap();
        let info = format.info();
        let layout = info.layout;
        if !linear::supported(format, layout, Dtype::F32, Dtype::F32, Device::Cpu) {
            continue;
        }
        let k = match layout {
            Layout::GgufBlocksV1 => 2 * info.block_values as usize,
            Layout::BlockScaleK16_M128x4_V1 => 80,
            _ => 200,
        };
        let planes = random_planes(format, n, k, &mut rng);
        let view =
            WeightView::new(format, layout, n, k, [&planes[0], &planes[1], &planes[2]]).unwrap();
        let xs: Vec<Vec<f32>> = (0..3)
            .map(|_| (0..3 * k).map(|_| rng.unit()).collect())
            .collect();
        for activation in [Activation::Exact, Activation::Q8_1, Activation::Q8K] {
            let fresh = |isa: Isa, threads: usize| {
                let mut w = PreparedWeight::new(view).unwrap();
                w.set_activation(activation).ok()?;
                w.set_isa(isa).unwrap();
                w.set_threads(threads).unwrap();
                Some(w)
            };
            for isa in isas() {
                let Some(mut w) = fresh(isa, 1) else {
                    continue;
                };
                // (x, M, rows, threads) in the order called.
                let calls: [(usize, usize, std::ops::Range<usize>, usize); 7] = [
                    (0, 1, 0..n, 1),
                    (1, 1, 0..n, 1),
                    (2, 3, 0..n, 1),
                    (1, 1, 0..n, 1),
                    (0, 1, 2..n - 1, 1),
                    (2, 1, 0..n, 2),
                    (0, 1, 0..n, 2),
                ];
                for (c, (xi, m, rows, threads)) in calls.into_iter().enumerate() {
                    if w.threads() != threads {
                        w.set_threads(threads).unwrap();
                    }
                    let x = &xs[xi][..m * k];
                    let got = forward_rows_f32(&w, x, m, rows.clone());
                    let want = forward_rows_f32(&fresh(isa, threads).unwrap(), x, m, rows);
                    assert_eq!(
                        bits(&got),
                        bits(&want),
                        "{format} {activation:?} {isa:?} call {c}"
                    );
                    checked += 1;
                }
            }
        }
    }
    println!("{checked} reused-weight calls equal to fresh ones");
    assert!(checked > 100);
}

/// `forward_rows` of f32 x: the outputs of weight rows `rows` for `m` rows (row-major,
/// `rows.len()` per row; y's rows `rows.end` apart, as the call requires).
fn forward_rows_f32(
    w: &PreparedWeight<'_>,
    x: &[f32],
    m: usize,
    rows: std::ops::Range<usize>,
) -> Vec<f32> {
    let (k, ld) = (w.cols(), rows.end);
    let xb: Vec<u8> = x.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut yb = vec![0u8; m * ld * 4];
    w.forward_rows(
        &xb,
        Dtype::F32,
        m,
        k,
        k,
        None,
        rows.clone(),
        &mut yb,
        ld,
        Dtype::F32,
    )
    .unwrap();
    let y: Vec<f32> = yb
        .chunks_exact(4)
        .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    (0..m)
        .flat_map(|r| y[r * ld + rows.start..r * ld + rows.end].to_vec())
        .collect()
}
