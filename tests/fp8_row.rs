//! fp8_e4m3fn_row_bf16 / _fp16: the fp8_row_maxabs encoder against the independent numpy +
//! ml_dtypes oracle (scripts/fixtures/fp8_row_maxabs.py; real all-MiniLM-L6-v2 rows and
//! synthetic rows), compared byte for byte; decoding of every encoded row against the §3.4
//! equation written plainly; chunk independence; refused inputs with their status.

use ninfer::formats::float_source::FloatSource;
use ninfer::formats::fp8_row::fp8_row_maxabs;
use ninfer::layouts::plane_sizes;
use ninfer::{Error, Format, Status, WeightView, decode};

struct Case {
    dtype: u32,
    rows: usize,
    cols: usize,
    src: Vec<u8>,
    bf16_codes: Vec<u8>,
    bf16_scales: Vec<u8>,
    fp16_rows: Vec<u8>,
}

fn cases() -> Vec<Case> {
    let path = format!(
        "{}/tests/data/fp8/row_maxabs.bin",
        env!("CARGO_MANIFEST_DIR")
    );
    let data = std::fs::read(&path).unwrap_or_else(|e| {
        panic!("fixture {path} missing ({e}): run scripts/fixtures/fp8_row_maxabs.py")
    });
    let mut rest: &[u8] = &data;
    let mut take = |n: usize| {
        let (s, r) = rest.split_at(n);
        rest = r;
        s.to_vec()
    };
    let mut out = vec![];
    for _ in 0..data.len() {
        let h = take(12);
        let u = |i: usize| u32::from_le_bytes(h[i * 4..i * 4 + 4].try_into().unwrap());
        let (dtype, rows, cols) = (u(0), u(1) as usize, u(2) as usize);
        let size = if dtype == 0 { 4 } else { 2 };
        out.push(Case {
            dtype,
            rows,
            cols,
            src: take(rows * cols * size),
            bf16_codes: take(rows * cols),
            bf16_scales: take(rows * 2),
            fp16_rows: take(rows * (cols + 2)),
        });
        if out.iter().map(case_len).sum::<usize>() == data.len() {
            break;
        }
    }
    assert!(!out.is_empty());
    out
}

fn case_len(c: &Case) -> usize {
    12 + c.src.len() + c.bf16_codes.len() + c.bf16_scales.len() + c.fp16_rows.len()
}

/// Source words in native order (the fixture is little-endian).
enum Owned {
    F32(Vec<f32>),
    U16(u32, Vec<u16>),
}

fn source(c: &Case) -> Owned {
    if c.dtype == 0 {
        Owned::F32(
            c.src
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect(),
        )
    } else {
        Owned::U16(
            c.dtype,
            c.src
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes(b.try_into().unwrap()))
                .collect(),
        )
    }
}

fn as_source(o: &Owned) -> FloatSource<'_> {
    match o {
        Owned::F32(v) => FloatSource::F32(v),
        Owned::U16(1, v) => FloatSource::Bf16(v),
        Owned::U16(_, v) => FloatSource::F16(v),
    }
}

/// §3.3 E4M3FN meaning, written plainly (not the crate's table).
fn e4m3_plain(w: u8) -> f64 {
    let s = if w & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((w >> 3) & 15) as i32;
    let m = (w & 7) as f64;
    assert!(!(e == 15 && m == 7.0), "NaN code emitted");
    if e == 0 {
        s * m * 2f64.powi(-9)
    } else {
        s * (1.0 + m / 8.0) * 2f64.powi(e - 7)
    }
}

fn encode(format: Format, src: FloatSource<'_>, rows: usize, cols: usize) -> Vec<Vec<u8>> {
    let sizes = plane_sizes(format, format.info().layout, rows, cols).unwrap();
    let mut p0 = vec![0xAAu8; sizes[0]];
    let mut p1 = vec![0xAAu8; sizes[1]];
    fp8_row_maxabs(format, src, rows, cols, [&mut p0, &mut p1]).unwrap();
    vec![p0, p1]
}

fn check_decode(format: Format, planes: &[Vec<u8>], rows: usize, cols: usize) -> usize {
    let v = WeightView::new(
        format,
        format.info().layout,
        rows,
        cols,
        [&planes[0], &planes[1], &[]],
    )
    .unwrap();
    let mut out = vec![0f32; cols];
    for r in 0..rows {
        decode::decode_row(&v, r as u64, &mut out).unwrap();
        let (s, codes): (u16, &[u8]) = if format == Format::Fp8E4m3fnRowBf16 {
            (
                u16::from_le_bytes([planes[1][2 * r], planes[1][2 * r + 1]]),
                &planes[0][r * cols..(r + 1) * cols],
            )
        } else {
            let rec = &planes[0][r * (cols + 2)..(r + 1) * (cols + 2)];
            (u16::from_le_bytes([rec[0], rec[1]]), &rec[2..])
        };
        let s32 = if format == Format::Fp8E4m3fnRowBf16 {
            f32::from_bits((s as u32) << 16)
        } else {
            half::f16::from_bits(s).to_f32()
        };
        for k in 0..cols {
            // c32 * s32 rounded once to binary32: the f64 product of two binary32 values
            // with 4- and 11-bit significands is exact, so one rounding to f32 is the spec's.
            let want = (e4m3_plain(codes[k]) * s32 as f64) as f32;
            assert_eq!(out[k].to_bits(), want.to_bits(), "{format} row {r} col {k}");
        }
    }
    rows * cols
}

#[test]
fn maxabs_matches_python_oracle_bit_for_bit() {
    let mut elems = [0usize; 3];
    let mut decoded = 0;
    for c in cases() {
        let owned = source(&c);
        let src = as_source(&owned);
        let b = encode(Format::Fp8E4m3fnRowBf16, src, c.rows, c.cols);
        assert_eq!(b[0], c.bf16_codes, "bf16 codes, {} x {}", c.rows, c.cols);
        assert_eq!(b[1], c.bf16_scales, "bf16 scales");
        let h = encode(Format::Fp8E4m3fnRowFp16, src, c.rows, c.cols);
        assert_eq!(h[0], c.fp16_rows, "fp16 rows, {} x {}", c.rows, c.cols);
        assert!(h[1].is_empty());
        elems[c.dtype as usize] += c.rows * c.cols;
        decoded += check_decode(Format::Fp8E4m3fnRowBf16, &b, c.rows, c.cols);
        decoded += check_decode(Format::Fp8E4m3fnRowFp16, &h, c.rows, c.cols);
        // Rows are independent of chunking: encode each row alone.
        for r in 0..c.rows {
            let one = src_row(&owned, r, c.cols);
            let b1 = encode(Format::Fp8E4m3fnRowBf16, as_source(&one), 1, c.cols);
            assert_eq!(b1[0], &b[0][r * c.cols..(r + 1) * c.cols]);
            let h1 = encode(Format::Fp8E4m3fnRowFp16, as_source(&one), 1, c.cols);
            assert_eq!(h1[0], &h[0][r * (c.cols + 2)..(r + 1) * (c.cols + 2)]);
        }
    }
    println!(
        "fp8_row_maxabs: f32 {} / bf16 {} / f16 {} source values x 2 formats compared by bytes; \
         {decoded} decoded values compared by bits",
        elems[0], elems[1], elems[2]
    );
    assert!(elems.iter().all(|&n| n > 0));
}

fn src_row(o: &Owned, r: usize, cols: usize) -> Owned {
    match o {
        Owned::F32(v) => Owned::F32(v[r * cols..(r + 1) * cols].to_vec()),
        Owned::U16(d, v) => Owned::U16(*d, v[r * cols..(r + 1) * cols].to_vec()),
    }
}

#[test]
fn refused_inputs_with_status() {
    let bf = Format::Fp8E4m3fnRowBf16;
    let st = |e: Result<(), Error>| e.unwrap_err().status();
    let (mut c, mut s) = (vec![0u8; 4], vec![0u8; 4]);
    // Wrong plane sizes, shape, format.
    let src = [1.0f32; 4];
    assert_eq!(
        st(fp8_row_maxabs(
            bf,
            FloatSource::F32(&src),
            2,
            2,
            [&mut c[..3], &mut s]
        )),
        Status::SizeMismatch
    );
    assert_eq!(
        st(fp8_row_maxabs(
            bf,
            FloatSource::F32(&src),
            2,
            3,
            [&mut c, &mut s]
        )),
        Status::SizeMismatch
    );
    assert_eq!(
        st(fp8_row_maxabs(
            bf,
            FloatSource::F32(&[]),
            0,
            2,
            [&mut [], &mut []]
        )),
        Status::BadShape
    );
    assert_eq!(
        st(fp8_row_maxabs(
            Format::Nvfp4,
            FloatSource::F32(&src),
            2,
            2,
            [&mut c, &mut s]
        )),
        Status::InvalidArgument
    );
    // Non-finite sources: NaN, Inf, and bf16/f16 words.
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX] {
        let src = [1.0, 2.0, bad, 0.0];
        assert_eq!(
            fp8_row_maxabs(bf, FloatSource::F32(&src), 2, 2, [&mut c, &mut s]),
            Err(Error::NonFiniteSource { row: 1, col: 0 })
        );
    }
    assert_eq!(
        st(fp8_row_maxabs(
            bf,
            FloatSource::Bf16(&[0x3F80, 0x7F80, 0, 0]),
            2,
            2,
            [&mut c, &mut s]
        )),
        Status::NonFiniteSource
    );
    assert_eq!(
        st(fp8_row_maxabs(
            bf,
            FloatSource::F16(&[0x3C00, 0x7E00, 0, 0]),
            2,
            2,
            [&mut c, &mut s]
        )),
        Status::NonFiniteSource
    );
    // Overflowing binary16 scale; the near miss just below is accepted.
    let mut rows = vec![0u8; 2 * 3];
    let hf = Format::Fp8E4m3fnRowFp16;
    assert_eq!(
        fp8_row_maxabs(
            hf,
            FloatSource::F32(&[0.0, 2.94e7]),
            2,
            1,
            [&mut rows, &mut []]
        ),
        // A row scale has no group: Location::NONE (printed as "row 1 (a row or matrix
        // scale, no group)").
        Err(Error::ScaleOverflow {
            row: 1,
            group: ninfer::Location::NONE
        })
    );
    assert_eq!(rows, vec![0u8; 6], "nothing written on error");
    fp8_row_maxabs(
        hf,
        FloatSource::F32(&[0.0, 2.92e7]),
        2,
        1,
        [&mut rows, &mut []],
    )
    .unwrap();
    // bf16(2.92e7) = 223 · 2^17; / 448 = 65243.4, to binary16 65248 (0x7BF7).
    assert_eq!(&rows[3..5], &0x7BF7u16.to_le_bytes());
}
