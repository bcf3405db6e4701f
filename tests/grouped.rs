//! Grouped formats against independent oracles.
//!
//! - `absmax_cases.bin` (scripts/fixtures/grouped_fixtures.py: §7.2 written plainly with
//!   numpy float32/float16, row_split_k128_v1 packed per docs/layouts.md): every case's
//!   planes, logical codes and scale words compared bit for bit, refusals compared by status
//!   and location, decoded rows compared with §6.2 evaluated here by hand.
//! - `absmax_bulk.txt`: checksums of 2^16 (or, with NINFER_GROUPED_BULK=full, 2^20) generated
//!   groups per format, the generator reproduced below.
//! - grouped_search: never worse than grouped_absmax under the importance weights (errors
//!   computed here from the decoded weights), valid output, thread-count independence.

use ninfer::formats::float_source::FloatSource;
use ninfer::formats::grouped::{Method, Options, quantize};
use ninfer::layouts::row_split;
use ninfer::{Error, Format, Layout, Status, WeightView, decode::decode_row};

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/grouped")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("missing fixture {}: {e}", p.display()))
}

/// binary16 → binary32 by the IEEE definition (independent of `half`).
fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f64 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    let v = match e {
        0 => m * 2f64.powi(-24),
        31 => panic!("non-finite scale {h:#06x}"),
        _ => (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    };
    (sign * v) as f32
}

struct Reader<'a>(&'a [u8]);
impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
}

fn planes_for(f: Format, rows: usize, cols: usize, fill: u8) -> [Vec<u8>; 3] {
    ninfer::layouts::plane_sizes(f, Layout::RowSplitK128_V1, rows, cols)
        .unwrap()
        .map(|n| vec![fill; n])
}

fn run(
    f: Format,
    src: FloatSource<'_>,
    rows: usize,
    cols: usize,
    o: &Options<'_>,
    p: &mut [Vec<u8>; 3],
) -> Result<ninfer::formats::grouped::Provenance, Error> {
    let [a, b, c] = p;
    quantize(f, src, rows, cols, o, [a, b, c])
}

fn words_u16(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2)
        .map(|w| u16::from_le_bytes([w[0], w[1]]))
        .collect()
}

#[test]
fn absmax_matches_the_python_oracle_bit_for_bit() {
    let data = fixture("absmax_cases.bin");
    let mut r = Reader(&data);
    assert_eq!(r.take(4), b"NGQ1");
    let n = r.u32();
    let mut division_cases = 0;
    let (mut cases, mut codes_cmp, mut scales_cmp, mut bytes_cmp, mut values_cmp, mut refusals) =
        (0, 0, 0, 0, 0, 0);
    for _ in 0..n {
        let name = String::from_utf8_lossy(r.take(32))
            .trim_end_matches('\0')
            .to_string();
        let f = Format::from_u32(r.u32()).unwrap();
        let dtype = r.u32();
        let (rows, cols) = (r.u32() as usize, r.u32() as usize);
        let (status, er, ec) = (r.u32(), r.u32() as u64, r.u32() as u64);
        let nsrc = r.u32() as usize;
        let src_bytes = r.take(nsrc).to_vec();
        let f32s: Vec<f32>;
        let u16s: Vec<u16>;
        let src = match dtype {
            0 => {
                f32s = src_bytes
                    .chunks_exact(4)
                    .map(|w| f32::from_le_bytes(w.try_into().unwrap()))
                    .collect();
                FloatSource::F32(&f32s)
            }
            1 => {
                u16s = words_u16(&src_bytes);
                FloatSource::Bf16(&u16s)
            }
            _ => {
                u16s = words_u16(&src_bytes);
                FloatSource::F16(&u16s)
            }
        };
        let mut planes = planes_for(f, rows, cols, 0xab);
        let got = run(f, src, rows, cols, &Options::ABSMAX, &mut planes);
        let ctx = format!("case {name} ({f}, [{rows}, {cols}])");
        if status != 0 {
            let e = got.expect_err(&ctx);
            assert_eq!(e.status() as u32, status, "{ctx}: {e}");
            match e {
                Error::NonFiniteSource { row, col } => assert_eq!((row, col), (er, ec), "{ctx}"),
                Error::ScaleOverflow { row, group } => assert_eq!((row, group), (er, ec), "{ctx}"),
                other => panic!("{ctx}: {other}"),
            }
            assert!(
                planes.iter().flatten().all(|&b| b == 0xab),
                "{ctx}: output written"
            );
            refusals += 1;
            continue;
        }
        got.unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let g = f.info().block_values as usize;
        let ng = cols.div_ceil(g);
        let want_codes: Vec<i8> = r.take(rows * cols).iter().map(|&b| b as i8).collect();
        let want_scales = words_u16(r.take(rows * ng * 2));
        for (i, p) in planes.iter().enumerate() {
            let len = r.u32() as usize;
            let want = r.take(len);
            assert_eq!(p.len(), len, "{ctx}: plane {i} length");
            if let Some(k) = p.iter().zip(want).position(|(a, b)| a != b) {
                panic!(
                    "{ctx}: plane {i} byte {k}: {:#04x} != oracle {:#04x}",
                    p[k], want[k]
                );
            }
            bytes_cmp += len;
        }
        let view = WeightView::new(
            f,
            Layout::RowSplitK128_V1,
            rows,
            cols,
            [&planes[0], &planes[1], &planes[2]],
        )
        .unwrap();
        let (codes, scales) = row_split::unpack(&view).unwrap();
        assert_eq!(codes, want_codes, "{ctx}");
        assert_eq!(scales, want_scales, "{ctx}");
        if name == "recip_vs_div" {
            // The case exists because direct division selects another code (§7.2).
            let s32 = f16_value(want_scales[0]);
            let x = match src {
                FloatSource::F32(v) => v,
                _ => unreachable!(),
            };
            let by_division = x[..g].iter().map(|&v| {
                ((v / s32).round_ties_even())
                    .clamp(f.info().code_min as f32, f.info().code_max as f32) as i8
            });
            assert!(
                by_division.zip(&codes).any(|(a, &b)| a != b),
                "{ctx}: division agrees"
            );
            division_cases += 1;
        }
        codes_cmp += codes.len();
        scales_cmp += scales.len();
        let mut out = vec![0f32; cols];
        for row in 0..rows {
            decode_row(&view, row as u64, &mut out).unwrap();
            for (k, v) in out.iter().enumerate() {
                let s = f16_value(want_scales[row * ng + k / g]);
                let want = s * want_codes[row * cols + k] as f32;
                assert_eq!(v.to_bits(), want.to_bits(), "{ctx}: row {row} col {k}");
                values_cmp += 1;
            }
        }
        cases += 1;
    }
    assert!(r.0.is_empty());
    assert_eq!(cases + refusals, n as usize);
    assert_eq!(division_cases, 4);
    println!(
        "grouped_absmax oracle: {cases} cases, {codes_cmp} codes, {scales_cmp} scale words, \
         {bytes_cmp} plane bytes, {values_cmp} decoded values identical; {refusals} refusals \
         matched (status and location); {division_cases} groups where x / scale would differ"
    );
}

// ---- bulk: the generator of grouped_fixtures.py, reproduced ----

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

fn mix(t: u64) -> u64 {
    let mut z = t;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn bulk_groups(seed: u64, count: usize, g: usize) -> Vec<f32> {
    let mut x = Vec::with_capacity(count * g);
    let mut t = 0u64; // global output index
    let mut next = || {
        t += 1;
        mix(seed.wrapping_add(t.wrapping_mul(GOLDEN)))
    };
    for _ in 0..count {
        let e = (next() % 41) as i32 - 30;
        let p = 2f32.powi(e);
        for _ in 0..g {
            let u = next();
            let m = (u >> 40) as f32 * 2f32.powi(-24);
            let mut v = m * p;
            if u & 1 == 1 {
                v = -v;
            }
            if (u >> 4) & 15 == 0 {
                v = 0.0;
            }
            x.push(v);
        }
    }
    x
}

fn checksum(codes: &[i8], scales: &[u16], g: usize) -> u64 {
    let mut s = 0u64;
    for (i, (gc, &sc)) in codes.chunks(g).zip(scales).enumerate() {
        let i = i as u64;
        s = s.wrapping_add(mix(i.wrapping_mul(GOLDEN)).wrapping_mul(sc as u64 + 1));
        for (j, &q) in gc.iter().enumerate() {
            let idx = i * 256 + j as u64;
            s = s.wrapping_add(mix(idx.wrapping_mul(GOLDEN)).wrapping_mul((q as i64 + 128) as u64));
        }
    }
    s
}

#[test]
fn absmax_bulk_groups_match_the_python_oracle() {
    let full = std::env::var("NINFER_GROUPED_BULK").is_ok_and(|v| v == "full");
    let want_groups = if full { 1usize << 20 } else { 1 << 16 };
    let text = String::from_utf8(fixture("absmax_bulk.txt")).unwrap();
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let v: Vec<&str> = line.split_whitespace().collect();
        let (f, seed, groups, sum) = (
            Format::from_name(v[0]).unwrap(),
            v[1].parse::<u64>().unwrap(),
            v[2].parse::<usize>().unwrap(),
            v[3].parse::<u64>().unwrap(),
        );
        if groups != want_groups {
            continue;
        }
        let g = f.info().block_values as usize;
        let x = bulk_groups(seed, groups, g);
        let cols = g * 64;
        let rows = groups / 64;
        let mut planes = planes_for(f, rows, cols, 0);
        run(
            f,
            FloatSource::F32(&x),
            rows,
            cols,
            &Options::ABSMAX,
            &mut planes,
        )
        .unwrap();
        let view = WeightView::new(
            f,
            Layout::RowSplitK128_V1,
            rows,
            cols,
            [&planes[0], &planes[1], &planes[2]],
        )
        .unwrap();
        let (codes, scales) = row_split::unpack(&view).unwrap();
        assert_eq!(checksum(&codes, &scales, g), sum, "{f}: {groups} groups");
        println!("{f}: {groups} generated groups match the oracle's checksum");
        checked += 1;
    }
    assert_eq!(
        checked, 4,
        "bulk fixture lacks entries for {want_groups} groups"
    );
}

// ---- refusals, layout properties through the encoder ----

#[test]
fn q2_and_t2_targets_are_refused() {
    for f in [Format::Q2_G64Fp16, Format::T2_G128Fp16, Format::Bf16] {
        let mut p = [vec![], vec![], vec![]];
        let e = run(
            f,
            FloatSource::F32(&[1.0; 64]),
            1,
            64,
            &Options::ABSMAX,
            &mut p,
        )
        .unwrap_err();
        assert!(
            matches!(e.status(), Status::Unsupported | Status::IncompatibleLayout),
            "{f}: {e}"
        );
    }
}

#[test]
fn gathers_of_the_encoding_equal_the_encoding_of_gathers() {
    let f = Format::Q5_G64Fp16;
    let (rows, cols) = (7, 300);
    let x = bulk_groups(99, rows * cols / 60 + 1, 60);
    let x = &x[..rows * cols];
    let mut p = planes_for(f, rows, cols, 0);
    run(f, FloatSource::F32(x), rows, cols, &Options::ABSMAX, &mut p).unwrap();
    let view = WeightView::new(
        f,
        Layout::RowSplitK128_V1,
        rows,
        cols,
        [&p[0], &p[1], &p[2]],
    )
    .unwrap();
    let idx = [6u64, 2, 2, 0, 5];
    let mut gp = planes_for(f, idx.len(), cols, 0);
    let [a, b, c] = &mut gp;
    row_split::gather_rows(&view, &idx, [a, b, c]).unwrap();
    let xs: Vec<f32> = idx
        .iter()
        .flat_map(|&i| x[i as usize * cols..(i as usize + 1) * cols].to_vec())
        .collect();
    let mut qp = planes_for(f, idx.len(), cols, 0);
    run(
        f,
        FloatSource::F32(&xs),
        idx.len(),
        cols,
        &Options::ABSMAX,
        &mut qp,
    )
    .unwrap();
    assert_eq!(gp, qp);
}

// ---- grouped_search ----

fn decoded(f: Format, rows: usize, cols: usize, p: &[Vec<u8>; 3]) -> Vec<f32> {
    let view = WeightView::new(
        f,
        Layout::RowSplitK128_V1,
        rows,
        cols,
        [&p[0], &p[1], &p[2]],
    )
    .unwrap();
    ninfer::layouts::row_split::validate(&view).unwrap();
    let mut out = vec![0f32; rows * cols];
    for (r, o) in out.chunks_mut(cols).enumerate() {
        decode_row(&view, r as u64, o).unwrap();
    }
    out
}

fn weighted_group_errors(f: Format, x: &[f32], w: &[f32], imp: &[f32], cols: usize) -> Vec<f64> {
    let g = f.info().block_values as usize;
    let mut e = Vec::new();
    for (xr, wr) in x.chunks(cols).zip(w.chunks(cols)) {
        for (k0, (xg, wg)) in xr.chunks(g).zip(wr.chunks(g)).enumerate() {
            let mut s = 0f64;
            for (j, (&a, &b)) in xg.iter().zip(wg).enumerate() {
                let d = a as f64 - b as f64;
                s += imp[k0 * g + j] as f64 * d * d;
            }
            e.push(s);
        }
    }
    e
}

#[test]
fn search_is_never_worse_than_absmax_and_validates() {
    let (rows, cols) = (24, 200);
    let x = bulk_groups(7, rows * cols / 50, 50);
    let imp: Vec<f32> = (0..cols).map(|k| ((k * 37) % 11) as f32 * 0.5).collect();
    let ones = vec![1f32; cols];
    let mut improved = 0;
    for f in [
        Format::Q4_G64Fp16,
        Format::Q5_G64Fp16,
        Format::Q6_G64Fp16,
        Format::Q8_G32Fp16,
    ] {
        let mut pa = planes_for(f, rows, cols, 0);
        run(
            f,
            FloatSource::F32(&x),
            rows,
            cols,
            &Options::ABSMAX,
            &mut pa,
        )
        .unwrap();
        let wa = decoded(f, rows, cols, &pa);
        for (importance, neg) in [
            (None, false),
            (Some(&imp[..]), false),
            (Some(&imp[..]), true),
            (None, true),
        ] {
            let o = Options {
                method: Method::GroupedSearch,
                importance,
                negative_scales: neg,
            };
            let mut ps = planes_for(f, rows, cols, 0);
            let prov = run(f, FloatSource::F32(&x), rows, cols, &o, &mut ps).unwrap();
            let ws = decoded(f, rows, cols, &ps);
            let w = importance.unwrap_or(&ones);
            let ea = weighted_group_errors(f, &x, &wa, w, cols);
            let es = weighted_group_errors(f, &x, &ws, w, cols);
            for (i, (a, s)) in ea.iter().zip(&es).enumerate() {
                assert!(s <= a, "{f} group {i}: search {s} > absmax {a}");
            }
            assert!(prov.error <= prov.absmax_error);
            assert_eq!(prov.method, Method::GroupedSearch);
            assert_eq!(prov.negative_scales, neg);
            assert!(
                prov.improved_groups > 0,
                "{f}: the search found nothing better"
            );
            improved += prov.improved_groups;
            if !neg {
                let view = WeightView::new(
                    f,
                    Layout::RowSplitK128_V1,
                    rows,
                    cols,
                    [&ps[0], &ps[1], &ps[2]],
                )
                .unwrap();
                let (_, scales) = row_split::unpack(&view).unwrap();
                assert!(
                    scales.iter().all(|s| s & 0x8000 == 0),
                    "{f}: negative scale without negative_scales"
                );
            }
        }
    }
    println!("grouped_search: {improved} groups improved, none worse");
}

#[test]
fn search_keeps_absmax_when_nothing_is_strictly_better() {
    // Every value is an exact multiple of a power-of-two scale: §7.2 already has zero error.
    let f = Format::Q4_G64Fp16;
    let cols = 128;
    let x: Vec<f32> = (0..cols).map(|k| ((k % 15) as f32 - 7.0) * 0.25).collect();
    let mut pa = planes_for(f, 1, cols, 0);
    run(f, FloatSource::F32(&x), 1, cols, &Options::ABSMAX, &mut pa).unwrap();
    let o = Options {
        method: Method::GroupedSearch,
        importance: None,
        negative_scales: true,
    };
    let mut ps = planes_for(f, 1, cols, 0);
    let prov = run(f, FloatSource::F32(&x), 1, cols, &o, &mut ps).unwrap();
    assert_eq!(pa, ps);
    assert_eq!(prov.improved_groups, 0);
    assert_eq!(prov.error, 0.0);
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let (rows, cols) = (33, 192);
    let x = bulk_groups(3, rows * cols / 64, 64);
    let imp: Vec<f32> = (0..cols).map(|k| 1.0 + (k % 5) as f32).collect();
    for o in [
        Options::ABSMAX,
        Options {
            method: Method::GroupedSearch,
            importance: Some(&imp),
            negative_scales: true,
        },
    ] {
        let runs: Vec<[Vec<u8>; 3]> = [1, 2, 3]
            .iter()
            .map(|&t| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .unwrap();
                pool.install(|| {
                    let mut p = planes_for(Format::Q6_G64Fp16, rows, cols, 0);
                    run(
                        Format::Q6_G64Fp16,
                        FloatSource::F32(&x),
                        rows,
                        cols,
                        &o,
                        &mut p,
                    )
                    .unwrap();
                    p
                })
            })
            .collect();
        assert_eq!(runs[0], runs[1]);
        assert_eq!(runs[0], runs[2]);
    }
}

#[test]
fn option_refusals() {
    let f = Format::Q4_G64Fp16;
    let x = vec![1f32; 128];
    let mut p = planes_for(f, 1, 128, 0x11);
    let bad = [f32::NAN; 128];
    let short = [1f32; 10];
    let neg = {
        let mut v = [1f32; 128];
        v[3] = -1.0;
        v
    };
    for o in [
        Options {
            method: Method::GroupedAbsmax,
            importance: Some(&x),
            negative_scales: false,
        },
        Options {
            method: Method::GroupedAbsmax,
            importance: None,
            negative_scales: true,
        },
        Options {
            method: Method::GroupedSearch,
            importance: Some(&bad),
            negative_scales: false,
        },
        Options {
            method: Method::GroupedSearch,
            importance: Some(&short),
            negative_scales: false,
        },
        Options {
            method: Method::GroupedSearch,
            importance: Some(&neg),
            negative_scales: false,
        },
    ] {
        let e = run(f, FloatSource::F32(&x), 1, 128, &o, &mut p).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    }
    let e = run(
        f,
        FloatSource::F32(&x[..100]),
        1,
        128,
        &Options::ABSMAX,
        &mut p,
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::SizeMismatch);
    let mut small = [vec![0u8; 10], vec![], vec![0u8; 4]];
    let e = run(
        f,
        FloatSource::F32(&x),
        1,
        128,
        &Options::ABSMAX,
        &mut small,
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::SizeMismatch);
    assert!(p.iter().flatten().all(|&b| b == 0x11));
}

#[test]
fn search_matches_the_python_oracle_bit_for_bit() {
    let data = fixture("search_cases.bin");
    let mut r = Reader(&data);
    assert_eq!(r.take(4), b"NGS1");
    let n = r.u32();
    let (mut codes_cmp, mut scales_cmp, mut negative) = (0, 0, 0);
    for case in 0..n {
        let f = Format::from_u32(r.u32()).unwrap();
        let (rows, cols) = (r.u32() as usize, r.u32() as usize);
        let (neg, has_imp) = (r.u32() == 1, r.u32() == 1);
        let f32s = |b: &[u8]| -> Vec<f32> {
            b.chunks_exact(4)
                .map(|w| f32::from_le_bytes(w.try_into().unwrap()))
                .collect()
        };
        let x = f32s(r.take(rows * cols * 4));
        let imp = has_imp.then(|| f32s(r.take(cols * 4)));
        let g = f.info().block_values as usize;
        let ng = cols.div_ceil(g);
        let want_codes: Vec<i8> = r.take(rows * cols).iter().map(|&b| b as i8).collect();
        let want_scales = words_u16(r.take(rows * ng * 2));
        let o = Options {
            method: Method::GroupedSearch,
            importance: imp.as_deref(),
            negative_scales: neg,
        };
        let mut p = planes_for(f, rows, cols, 0);
        run(f, FloatSource::F32(&x), rows, cols, &o, &mut p).unwrap();
        let view = WeightView::new(
            f,
            Layout::RowSplitK128_V1,
            rows,
            cols,
            [&p[0], &p[1], &p[2]],
        )
        .unwrap();
        let (codes, scales) = row_split::unpack(&view).unwrap();
        assert_eq!(
            scales, want_scales,
            "case {case}: {f} neg={neg} imp={has_imp}"
        );
        assert_eq!(
            codes, want_codes,
            "case {case}: {f} neg={neg} imp={has_imp}"
        );
        codes_cmp += codes.len();
        scales_cmp += scales.len();
        negative += scales.iter().filter(|&&s| s & 0x8000 != 0).count();
    }
    assert!(r.0.is_empty());
    assert!(negative > 0, "no case exercised a negative scale");
    println!(
        "grouped_search oracle: {n} cases, {codes_cmp} codes and {scales_cmp} scale words \
         identical ({negative} negative scales)"
    );
}
