//! nvfp4: the quantizer against the independent numpy + ml_dtypes oracle
//! (scripts/fixtures/nvfp4_quantize.py: real all-MiniLM-L6-v2 rows, stacked sources, random
//! and edge blocks), compared byte for byte including the swizzled scale plane (the oracle
//! swizzles by tensor reshape); decoding of every quantized row against the §3.3 equation
//! written plainly; the swizzle round trip for awkward shapes; refused inputs and payloads.

use ninfer::formats::float_source::FloatSource;
use ninfer::formats::nvfp4::{self, nvfp4_quantize};
use ninfer::layouts::block_scale::{pack_scales, scales_len, unpack_scales};
use ninfer::{Error, Format, Layout, Status, WeightView, decode};

struct Case {
    dtype: u32,
    rows: usize,
    cols: usize,
    sources: usize,
    src: Vec<u8>,
    codes: Vec<u8>,
    scales: Vec<u8>,
    divisors: Vec<u8>,
}

fn cases() -> Vec<Case> {
    let path = format!(
        "{}/tests/data/nvfp4/quantize.bin",
        env!("CARGO_MANIFEST_DIR")
    );
    let data = std::fs::read(&path).unwrap_or_else(|e| {
        panic!("fixture {path} missing ({e}): run scripts/fixtures/nvfp4_quantize.py")
    });
    let mut rest: &[u8] = &data;
    let mut take = |n: usize| {
        let (s, r) = rest.split_at(n);
        rest = r;
        s.to_vec()
    };
    let mut out = vec![];
    let mut used = 0;
    while used < data.len() {
        let h = take(16);
        let u = |i: usize| u32::from_le_bytes(h[i * 4..i * 4 + 4].try_into().unwrap()) as usize;
        let (dtype, rows, cols, sources) = (u(0) as u32, u(1), u(2), u(3));
        let size = if dtype == 0 { 4 } else { 2 };
        let c = Case {
            dtype,
            rows,
            cols,
            sources,
            src: take(rows * cols * size),
            codes: take(rows * cols / 2),
            scales: take(rows.div_ceil(128) * 128 * (cols / 16).div_ceil(4) * 4),
            divisors: take(sources * 4),
        };
        used += 16 + c.src.len() + c.codes.len() + c.scales.len() + c.divisors.len();
        out.push(c);
    }
    out
}

/// The swizzle offset, written plainly from the reference file.
fn plain_offset(m: usize, kb: usize, nkb: usize) -> usize {
    let kt = nkb.div_ceil(4);
    (m / 128) * kt * 512 + (kb / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + kb % 4
}

fn e2m1_plain(c: u8) -> f32 {
    let v = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][(c & 7) as usize];
    if c & 8 != 0 { -v } else { v }
}

fn e4m3_plain(w: u8) -> f32 {
    let e = ((w >> 3) & 15) as i32;
    let m = (w & 7) as f64;
    assert!(w & 0x80 == 0 && w != 0x7F, "invalid scale emitted");
    (if e == 0 {
        m * 2f64.powi(-9)
    } else {
        (1.0 + m / 8.0) * 2f64.powi(e - 7)
    }) as f32
}

#[test]
fn quantizer_matches_python_oracle_bit_for_bit() {
    let mut n = [0usize; 3];
    let mut decoded = 0;
    let mut stacked = 0;
    for c in cases() {
        let f32s: Vec<f32>;
        let u16s: Vec<u16>;
        let src = if c.dtype == 0 {
            f32s = c
                .src
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect();
            FloatSource::F32(&f32s)
        } else {
            u16s = c
                .src
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes(b.try_into().unwrap()))
                .collect();
            if c.dtype == 1 {
                FloatSource::Bf16(&u16s)
            } else {
                FloatSource::F16(&u16s)
            }
        };
        let mut codes = vec![0xAA; c.codes.len()];
        let mut scales = vec![0xAA; c.scales.len()];
        let mut divs = vec![0xAA; c.divisors.len()];
        nvfp4_quantize(
            src,
            c.rows,
            c.cols,
            c.sources,
            [&mut codes, &mut scales, &mut divs],
        )
        .unwrap();
        let what = format!("{} x {}, {} sources", c.rows, c.cols, c.sources);
        assert_eq!(divs, c.divisors, "divisors {what}");
        assert_eq!(scales, c.scales, "scales {what}");
        assert_eq!(codes, c.codes, "codes {what}");
        n[c.dtype as usize] += c.rows * c.cols;
        if c.sources > 1 {
            stacked += 1;
        }
        // Decode every row and compare with the equation.
        let v = WeightView::new(
            Format::Nvfp4,
            Layout::BlockScaleK16_M128x4_V1,
            c.rows,
            c.cols,
            [&codes, &scales, &divs],
        )
        .unwrap();
        nvfp4::validate(&v).unwrap();
        let nkb = c.cols / 16;
        let per = c.rows / c.sources;
        let mut out = vec![0f32; c.cols];
        for r in 0..c.rows {
            decode::decode_row(&v, r as u64, &mut out).unwrap();
            let d = f32::from_le_bytes(divs[4 * (r / per)..4 * (r / per) + 4].try_into().unwrap());
            for k in 0..c.cols {
                let byte = codes[r * c.cols / 2 + k / 2];
                let code = if k % 2 == 0 { byte & 0xF } else { byte >> 4 };
                let s = e4m3_plain(scales[plain_offset(r, k / 16, nkb)]);
                let want = e2m1_plain(code) * s / d;
                assert_eq!(out[k].to_bits(), want.to_bits(), "row {r} col {k} {what}");
            }
            decoded += c.cols;
        }
    }
    println!(
        "nvfp4 quantizer: f32 {} / bf16 {} / f16 {} source values compared by bytes \
         ({stacked} stacked cases); {decoded} decoded values compared by bits",
        n[0], n[1], n[2]
    );
    assert!(n.iter().all(|&x| x > 0) && stacked >= 2);
}

#[test]
fn swizzle_round_trip_awkward_shapes() {
    let mut seed = 12345u32;
    let mut next = || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 24) as u8 | 1 // never zero, so padding is distinguishable
    };
    let mut count = 0;
    for rows in [1usize, 130, 300] {
        for cols in [16usize, 80, 272] {
            let nkb = cols / 16;
            let lin: Vec<u8> = (0..rows * nkb).map(|_| next()).collect();
            let mut sw = vec![0xEE; scales_len(rows, nkb).unwrap()];
            assert_eq!(sw.len(), rows.div_ceil(128) * 128 * nkb.div_ceil(4) * 4);
            pack_scales(rows, nkb, &lin, &mut sw).unwrap();
            let mut touched = vec![false; sw.len()];
            for m in 0..rows {
                for kb in 0..nkb {
                    let o = plain_offset(m, kb, nkb);
                    assert_eq!(sw[o], lin[m * nkb + kb]);
                    touched[o] = true;
                }
            }
            for (i, t) in touched.iter().enumerate() {
                if !t {
                    assert_eq!(sw[i], 0, "padding byte {i} ({rows} x {cols})");
                }
            }
            let mut back = vec![0; rows * nkb];
            unpack_scales(rows, nkb, &sw, &mut back).unwrap();
            assert_eq!(back, lin);
            count += 1;
        }
    }
    // Wrong buffer sizes are refused.
    let mut sw = vec![0; 512];
    assert_eq!(
        pack_scales(2, 1, &[1], &mut sw).unwrap_err().status(),
        Status::SizeMismatch
    );
    assert_eq!(
        pack_scales(1, 1, &[1], &mut sw[..511])
            .unwrap_err()
            .status(),
        Status::SizeMismatch
    );
    println!("swizzle: {count} shapes round-tripped");
}

#[test]
fn refused_inputs_with_status() {
    let src = vec![1.0f32; 2 * 16];
    let (mut c, mut s, mut d) = (vec![0u8; 16], vec![0u8; 512], vec![0u8; 4]);
    let q = |src: &[f32], rows, cols, sources, c: &mut [u8], s: &mut [u8], d: &mut [u8]| {
        nvfp4_quantize(FloatSource::F32(src), rows, cols, sources, [c, s, d])
    };
    let st = |r: Result<(), Error>| r.unwrap_err().status();
    // K not a multiple of 16, sources not dividing N, zero sources, wrong sizes.
    assert_eq!(
        st(q(&src, 4, 8, 1, &mut c, &mut s, &mut d)),
        Status::BadShape
    );
    assert_eq!(
        st(q(&src, 2, 16, 3, &mut c, &mut s, &mut d)),
        Status::BadShape
    );
    assert_eq!(
        st(q(&src, 2, 16, 0, &mut c, &mut s, &mut d)),
        Status::BadShape
    );
    assert_eq!(
        st(q(&src, 2, 16, 2, &mut c, &mut s, &mut d)),
        Status::SizeMismatch
    );
    assert_eq!(
        st(q(&src, 2, 16, 1, &mut c[..15], &mut s, &mut d)),
        Status::SizeMismatch
    );
    // Non-finite sources.
    let mut bad = src.clone();
    bad[20] = f32::NAN;
    assert_eq!(
        q(&bad, 2, 16, 1, &mut c, &mut s, &mut d),
        Err(Error::NonFiniteSource { row: 1, col: 4 })
    );
    bad[20] = f32::NEG_INFINITY;
    assert_eq!(
        st(q(&bad, 2, 16, 1, &mut c, &mut s, &mut d)),
        Status::NonFiniteSource
    );
    // A source so small its divisor is infinite; the other source is fine.
    let mut tiny = src.clone();
    for x in &mut tiny[16..] {
        *x = 1e-40;
    }
    assert_eq!(
        q(&tiny, 2, 16, 2, &mut c, &mut s, &mut [0; 8]),
        Err(Error::ScaleOverflow {
            row: 1,
            group: u64::MAX
        })
    );
    // amax 1e-33 with a block 2^-9 / 448 times smaller: that block's scale is 2^-9 and
    // 1 / (2^-9 · (1 / d_w)) overflows binary32.
    let mut two = vec![1e-33f32; 32];
    for x in &mut two[16..] {
        *x = 1e-33 * 2f32.powi(-9) / 448.0;
    }
    let (mut c2, mut s2, mut d2) = (vec![0u8; 16], vec![0u8; 512], vec![0u8; 4]);
    assert_eq!(
        q(&two, 1, 32, 1, &mut c2, &mut s2, &mut d2),
        Err(Error::ScaleOverflow { row: 0, group: 1 })
    );
    assert!(
        c2.iter().chain(&s2).chain(&d2).all(|&b| b == 0),
        "nothing written"
    );
    // The same shape 1e10 times larger is fine.
    let big: Vec<f32> = two.iter().map(|x| x * 1e10).collect();
    q(&big, 1, 32, 1, &mut c2, &mut s2, &mut d2).unwrap();
    // Near miss: 1e-20 quantizes fine.
    for x in &mut tiny[16..] {
        *x = 1e-20;
    }
    q(&tiny, 2, 16, 2, &mut c, &mut s, &mut [0; 8]).unwrap();

    // Views: divisor plane lengths.
    let codes = [0u8; 16];
    let scales = [0u8; 512];
    let view = |div: &[u8]| {
        WeightView::new(
            Format::Nvfp4,
            Layout::BlockScaleK16_M128x4_V1,
            2,
            16,
            [&codes, &scales, div],
        )
        .map(|_| ())
    };
    assert_eq!(st(view(&[])), Status::SizeMismatch);
    assert_eq!(st(view(&[0; 6])), Status::SizeMismatch);
    assert_eq!(st(view(&[0; 12])), Status::BadShape);
    view(&[0; 8]).unwrap();
    assert_eq!(
        WeightView::new(
            Format::Nvfp4,
            Layout::BlockScaleK16_M128x4_V1,
            2,
            24,
            [&[0; 24], &scales, &[0; 4]],
        )
        .unwrap_err()
        .status(),
        Status::BadShape
    );
}
