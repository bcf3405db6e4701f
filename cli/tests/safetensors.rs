//! End-to-end checks of `ninfer quantize`, `import`, and `inspect`/`verify`/`decode` on
//! safetensors files holding ninfer planes (docs/safetensors.md).
//!
//! Oracles: the decoded .npy must equal, bit for bit, the library's `decode_row` of the
//! planes read here straight from the output file by the documented naming rules (not by
//! the CLI's reader), and must lie within each format's error bound from the source
//! (the bounds are written from the formats' equations, not from the code).

use ninfer::{Format, WeightView};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod common;
use common::{ninfer, out_text, s};

fn scratch(name: &str) -> PathBuf {
    common::scratch("st", name)
}

/// Deterministic values with a spread of magnitudes per row (and a few exact zeros).
fn values(n: usize, seed: f32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let t = i as f32;
            if i % 97 == 5 {
                0.0
            } else {
                (t * 0.731 + seed).sin() * (1.0 + (t * 0.013).cos() * 0.9) * 0.05
                    + if i % 41 == 0 { 0.4 } else { 0.0 }
            }
        })
        .collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bf16_bytes(v: &[f32]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| half::bf16::from_f32(*x).to_bits().to_le_bytes())
        .collect()
}

fn f16_bytes(v: &[f32]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| half::f16::from_f32(*x).to_bits().to_le_bytes())
        .collect()
}

fn write_st(path: &Path, tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)]) {
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, sh, b)| (n.to_string(), TensorView::new(*d, sh.clone(), b).unwrap()))
        .collect();
    safetensors::serialize_to_file(views, None, path).unwrap();
}

/// The source matrices of the synthetic input: (name, rows, cols, exact f32 values).
fn sources() -> Vec<(&'static str, usize, usize, Vec<f32>)> {
    let a = values(70 * 128, 0.3);
    let b: Vec<f32> = values(33 * 64, 1.1)
        .iter()
        .map(|&x| half::bf16::from_f32(x).to_f32())
        .collect();
    let c: Vec<f32> = values(16 * 48, 2.7)
        .iter()
        .map(|&x| half::f16::from_f32(x).to_f32())
        .collect();
    vec![("w.a", 70, 128, a), ("w.b", 33, 64, b), ("w.c", 16, 48, c)]
}

fn make_input(path: &Path) {
    let src = sources();
    write_st(
        path,
        &[
            (src[0].0, Dtype::F32, vec![70, 128], f32_bytes(&src[0].3)),
            (src[1].0, Dtype::BF16, vec![33, 64], bf16_bytes(&src[1].3)),
            (src[2].0, Dtype::F16, vec![16, 48], f16_bytes(&src[2].3)),
            ("bias", Dtype::F32, vec![128], f32_bytes(&values(128, 0.0))),
            ("ids", Dtype::I64, vec![4], vec![0; 32]),
        ],
    );
}

/// Reads a little-endian f32 .npy (version 1): (shape text, values).
fn read_npy(path: &Path) -> (String, Vec<f32>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..6], b"\x93NUMPY");
    let hl = u16::from_le_bytes([b[8], b[9]]) as usize;
    let header = String::from_utf8_lossy(&b[10..10 + hl]).into_owned();
    assert!(header.contains("'<f4'"), "{header}");
    let shape = header
        .split("'shape': ")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .replace(['(', ' '], "")
        .trim_end_matches(',')
        .to_owned();
    let v = b[10 + hl..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (shape, v)
}

/// An encoded tensor read straight from the output file by the documented rules.
struct Planes {
    format: Format,
    rows: usize,
    cols: usize,
    planes: [Vec<u8>; 3],
    provenance: String,
}

fn read_planes(bytes: &[u8], name: &str) -> Planes {
    let (_, meta) = SafeTensors::read_metadata(bytes).unwrap();
    let md: HashMap<String, String> = meta.metadata().clone().unwrap();
    assert_eq!(md["ninfer"], "safetensors_v1");
    let desc = &md[&format!("ninfer.{name}")];
    let mut format = None;
    let mut layout = None;
    let mut shape = None;
    for kv in desc.split(';') {
        let (k, v) = kv.split_once('=').unwrap();
        match k {
            "format" => format = Some(Format::from_name(v).unwrap()),
            "layout" => layout = Some(ninfer::Layout::from_name(v).unwrap()),
            "shape" => {
                let d: Vec<usize> = v.split(',').map(|x| x.parse().unwrap()).collect();
                shape = Some((d[0], d[1]));
            }
            other => panic!("unexpected descriptor key {other}"),
        }
    }
    let (format, layout, (rows, cols)) = (format.unwrap(), layout.unwrap(), shape.unwrap());
    assert_eq!(layout, format.info().layout);
    let st = SafeTensors::deserialize(bytes).unwrap();
    let mut planes: [Vec<u8>; 3] = Default::default();
    for (i, p) in ninfer::layouts::plane_names(layout).iter().enumerate() {
        if let Ok(t) = st.tensor(&format!("{name}.{p}")) {
            assert_eq!(t.dtype(), Dtype::U8);
            assert_eq!(t.shape(), [t.data().len()]);
            planes[i] = t.data().to_vec();
        }
    }
    Planes {
        format,
        rows,
        cols,
        planes,
        provenance: md[&format!("ninfer-provenance.{name}")].clone(),
    }
}

impl Planes {
    fn view(&self) -> WeightView<'_> {
        WeightView::new(
            self.format,
            self.format.info().layout,
            self.rows,
            self.cols,
            [&self.planes[0], &self.planes[1], &self.planes[2]],
        )
        .unwrap()
    }

    fn decode(&self) -> Vec<f32> {
        let v = self.view();
        let mut out = vec![0f32; self.rows * self.cols];
        for (r, o) in out.chunks_mut(self.cols).enumerate() {
            ninfer::decode::decode_row(&v, r as u64, o).unwrap();
        }
        out
    }
}

/// The largest allowed |decoded − source| for each value, from the formats' equations:
/// - grouped (§3.2, §7.2): scale ≈ group amax / qmax, codes round to nearest, so
///   |err| ≤ scale/2 (plus binary16 rounding of the scale: 2^-10 relative, times qmax);
/// - fp8 row (§3.4): scale = row amax / 448; BF16 pre-rounding (2^-9 relative), then E4M3
///   (3 fraction bits: 2^-4 relative, subnormal step 2^-9 times the scale);
/// - nvfp4 (§3.3): block unit u = bmax/6 with an E4M3 scale (2^-4 relative); the E2M1 grid
///   {0, .5, 1, 1.5, 2, 3, 4, 6} has steps ≤ 2, so |err| ≤ u·(1 + 2^-4) + rounding.
fn bounds(format: Format, rows: usize, cols: usize, src: &[f32]) -> Vec<f32> {
    let info = format.info();
    let mut b = vec![0f32; src.len()];
    for r in 0..rows {
        let row = &src[r * cols..(r + 1) * cols];
        let out = &mut b[r * cols..(r + 1) * cols];
        match info.category {
            ninfer::Category::GroupedInt => {
                let g = info.block_values as usize;
                for (gi, grp) in row.chunks(g).enumerate() {
                    let amax = grp.iter().fold(0f32, |a, x| a.max(x.abs()));
                    let q = info.qmax as f32;
                    let e = amax / q * 0.5 * (1.0 + 2e-3) + amax * 2f32.powi(-10);
                    for o in &mut out[gi * g..(gi * g + grp.len())] {
                        *o = e + 1e-30;
                    }
                }
            }
            ninfer::Category::RowScaledFloat => {
                let amax = row.iter().fold(0f32, |a, x| a.max(x.abs()));
                for (o, x) in out.iter_mut().zip(row) {
                    *o = x.abs() * (2f32.powi(-4) + 2f32.powi(-8))
                        + amax / 448.0 * 2f32.powi(-9) * 1.01
                        + 1e-30;
                }
            }
            _ => {
                for (kb, blk) in row.chunks(16).enumerate() {
                    let bmax = blk.iter().fold(0f32, |a, x| a.max(x.abs()));
                    for o in &mut out[kb * 16..kb * 16 + blk.len()] {
                        *o = bmax / 6.0 * (1.0 + 2f32.powi(-4)) * 1.001 + 1e-30;
                    }
                }
            }
        }
    }
    b
}

/// Compares the decoded .npy with the library's decode of the planes (bits) and with the
/// source (bound, when `bounded`: grouped_search may trade a value's error for a smaller
/// total). Returns (max |err|, RMS err).
fn check_tensor(out_file: &Path, name: &str, src: &[f32], dir: &Path, bounded: bool) -> (f64, f64) {
    let bytes = std::fs::read(out_file).unwrap();
    let p = read_planes(&bytes, name);
    let npy = dir.join(format!("{name}.npy"));
    let o = ninfer(&["decode", s(out_file), "--tensor", name, "--out", s(&npy)]);
    assert!(o.status.success(), "{}", out_text(&o));
    let (shape, got) = read_npy(&npy);
    assert_eq!(shape, format!("{},{}", p.rows, p.cols));
    let lib = p.decode();
    assert_eq!(got.len(), lib.len());
    for (i, (a, b)) in got.iter().zip(&lib).enumerate() {
        assert_eq!(a.to_bits(), b.to_bits(), "{name}: value {i}");
    }
    let bound = bounds(p.format, p.rows, p.cols, src);
    let (mut m, mut se) = (0f64, 0f64);
    for (i, ((d, x), b)) in got.iter().zip(src).zip(&bound).enumerate() {
        let e = (d - x).abs();
        assert!(
            e <= *b || !bounded,
            "{name} ({}): value {i} (row {}): source {x}, decoded {d}, |err| {e} > bound {b}",
            p.format,
            i / p.cols
        );
        m = m.max(e as f64);
        se += (e as f64) * (e as f64);
    }
    (m, (se / src.len() as f64).sqrt())
}

const TARGETS: [&str; 7] = [
    "q4_g64_fp16",
    "q5_g64_fp16",
    "q6_g64_fp16",
    "q8_g32_fp16",
    "fp8_e4m3fn_row_bf16",
    "fp8_e4m3fn_row_fp16",
    "nvfp4",
];

#[test]
fn quantize_then_verify_inspect_decode_every_target() {
    let dir = scratch("targets");
    let input = dir.join("in.safetensors");
    make_input(&input);
    let src = sources();
    let mut compared = 0usize;
    for fmt in TARGETS {
        let out = dir.join(format!("{fmt}.safetensors"));
        let o = ninfer(&["quantize", s(&input), "--format", fmt, "--out", s(&out)]);
        let t = out_text(&o);
        assert!(o.status.success(), "{fmt}: {t}");
        assert!(t.contains("3 tensors encoded"), "{t}");
        assert!(t.contains("copied (1-D, not a [N, K] matrix)"), "{t}");
        assert!(t.contains("copied (I64 is not F32/BF16/F16)"), "{t}");

        let v = ninfer(&["verify", s(&out)]);
        let vt = out_text(&v);
        assert!(v.status.success(), "{fmt}: {vt}");
        assert!(
            vt.contains("3 encoded tensors validated and decoded, 1 direct data, 1 not decodable dtype, 0 failed"),
            "{vt}"
        );
        // Every encoded matrix's products checked against the f64 oracle on every path.
        assert!(
            vt.contains("linear: 3 weights, ") && vt.contains("paths bit-identical, 0 failed"),
            "{fmt}: {vt}"
        );
        let i = ninfer(&["inspect", s(&out)]);
        let it = out_text(&i);
        assert!(i.status.success(), "{it}");
        let line = it.lines().find(|l| l.starts_with("w.a ")).unwrap();
        assert!(
            line.contains(fmt)
                && line.contains(Format::from_name(fmt).unwrap().info().layout.name()),
            "{line}"
        );
        assert!(line.contains("[70, 128]"), "{line}");

        for (name, _, _, x) in &src {
            let (m, rms) = check_tensor(&out, name, x, &dir, true);
            println!("{fmt} {name}: max |err| {m:.3e}, RMS {rms:.3e}");
            compared += x.len();
        }
        let bytes = std::fs::read(&out).unwrap();
        if fmt == "q5_g64_fp16" {
            // The one format with a high-bit plane: present and named.
            let st = SafeTensors::deserialize(&bytes).unwrap();
            assert_eq!(st.tensor("w.a.high_bits").unwrap().shape(), [70 * 16]);
        }
        let prov = read_planes(&bytes, "w.b").provenance;
        assert!(prov.contains("source_dtype=BF16"), "{prov}");
        // The plain tensors are copied byte for byte.
        let st = SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(
            st.tensor("bias").unwrap().data(),
            f32_bytes(&values(128, 0.0))
        );
        assert_eq!(st.tensor("ids").unwrap().dtype(), Dtype::I64);
    }
    println!("{compared} decoded values compared bit for bit and against bounds");
}

#[test]
fn search_method_and_tensor_filter() {
    let dir = scratch("search");
    let input = dir.join("in.safetensors");
    make_input(&input);
    let out = dir.join("q4s.safetensors");
    let o = ninfer(&[
        "quantize",
        s(&input),
        "--format",
        "q4_g64_fp16",
        "--method",
        "search",
        "--tensors",
        "w.a",
        "--out",
        s(&out),
    ]);
    let t = out_text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("1 tensor encoded"), "{t}");
    assert!(t.contains("copied (not selected)"), "{t}");
    let bytes = std::fs::read(&out).unwrap();
    let p = read_planes(&bytes, "w.a");
    assert!(
        p.provenance.contains("method=grouped_search"),
        "{}",
        p.provenance
    );
    let st = SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(st.tensor("w.b").unwrap().dtype(), Dtype::BF16);
    // grouped_search never does worse than grouped_absmax in squared error.
    let abs = dir.join("q4a.safetensors");
    let o = ninfer(&[
        "quantize",
        s(&input),
        "--format",
        "q4_g64_fp16",
        "--tensors",
        "w.a",
        "--out",
        s(&abs),
    ]);
    assert!(o.status.success());
    let x = &sources()[0].3;
    let (_, rms_s) = check_tensor(&out, "w.a", x, &dir, false);
    let (_, rms_a) = check_tensor(&abs, "w.a", x, &dir, true);
    assert!(rms_s <= rms_a, "search {rms_s} > absmax {rms_a}");
}

/// `--negative-scales` from the command line. The source is built so that a negative scale
/// wins (hand-worked, spec §6.1/§7.3): every value is an integer in [−7, 8] and each group
/// holds +8, so scale −1 (extreme / qmin = 8 / −8) reproduces every value exactly with codes
/// −v ∈ [−8, 7], while the positive max-abs scale 8/7 cannot (e.g. 1.0 is no multiple of
/// binary16(8/7)).
#[test]
fn search_negative_scales_flag() {
    let dir = scratch("negscale");
    let input = dir.join("in.safetensors");
    let (rows, cols) = (2usize, 128usize);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| {
            if i % 64 == 3 {
                8.0
            } else {
                ((i * 7) % 15) as f32 - 7.0
            }
        })
        .collect();
    write_st(
        &input,
        &[("w.n", Dtype::F32, vec![rows, cols], f32_bytes(&x))],
    );
    let run = |extra: &[&str], out: &Path| {
        let mut args = vec![
            "quantize",
            s(&input),
            "--format",
            "q4_g64_fp16",
            "--out",
            s(out),
        ];
        args.extend_from_slice(extra);
        ninfer(&args)
    };
    let negative = |p: &Planes| {
        p.planes[2]
            .chunks_exact(2)
            .filter(|w| u16::from_le_bytes([w[0], w[1]]) & 0x8000 != 0)
            .count()
    };
    // Without the flag: recorded false, no negative scale.
    let off = dir.join("off.safetensors");
    let o = run(&["--method", "search"], &off);
    assert!(o.status.success(), "{}", out_text(&o));
    let p = read_planes(&std::fs::read(&off).unwrap(), "w.n");
    assert!(
        p.provenance.contains("method=grouped_search")
            && p.provenance.contains("negative_scales=false"),
        "{}",
        p.provenance
    );
    assert_eq!(negative(&p), 0);
    assert_ne!(p.decode(), x, "the positive scales cannot be exact here");
    // With it: recorded true, every group takes scale −1 (0xBC00) and decodes exactly.
    let on = dir.join("on.safetensors");
    let o = run(&["--method", "search", "--negative-scales"], &on);
    assert!(o.status.success(), "{}", out_text(&o));
    let p = read_planes(&std::fs::read(&on).unwrap(), "w.n");
    assert!(
        p.provenance.contains("negative_scales=true"),
        "{}",
        p.provenance
    );
    assert_eq!(negative(&p), rows * cols / 64);
    assert!(p.planes[2].chunks_exact(2).all(|w| w == [0x00, 0xBC]));
    // Equal values (a zero source value decodes as 0 × −1 = −0).
    assert_eq!(p.decode(), x);
    // The flag belongs to grouped_search only.
    let o = run(&["--negative-scales"], &dir.join("absmax.safetensors"));
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        out_text(&o).contains("--negative-scales is a grouped_search parameter"),
        "{}",
        out_text(&o)
    );
    assert!(!dir.join("absmax.safetensors").exists());
}

#[test]
fn refused_inputs_are_named_with_clear_messages() {
    let dir = scratch("refused");
    let input = dir.join("in.safetensors");
    make_input(&input);
    let out = dir.join("out.safetensors");
    // Targets without an encoder: exit 2 before reading anything.
    for (fmt, why) in [
        ("q2_g64_fp16", "refuse it"),
        ("t2_g128_fp16", "refuse it"),
        ("gguf_q4_0", "GGUF blocks"),
        ("bf16", "direct formats"),
        ("q3_g64", "UNKNOWN"),
    ] {
        let o = ninfer(&["quantize", s(&input), "--format", fmt, "--out", s(&out)]);
        let t = out_text(&o);
        assert_eq!(o.status.code(), Some(2), "{fmt}: {t}");
        assert!(t.contains(why) || t.contains("unknown"), "{fmt}: {t}");
        assert!(!out.exists());
    }
    let o = ninfer(&[
        "quantize",
        s(&input),
        "--format",
        "nvfp4",
        "--method",
        "search",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(out_text(&o).contains("grouped formats") || out_text(&o).contains("q4_g64_fp16"));
    // Missing file.
    let o = ninfer(&[
        "quantize",
        s(&dir.join("missing.safetensors")),
        "--format",
        "q4_g64_fp16",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(out_text(&o).contains("opening"), "{}", out_text(&o));
    let o = ninfer(&["verify", s(&dir.join("missing.safetensors"))]);
    assert_eq!(o.status.code(), Some(2));

    // Only a 1-D tensor: nothing to encode, exit 1, no output.
    let one_d = dir.join("1d.safetensors");
    write_st(
        &one_d,
        &[("b", Dtype::F32, vec![64], f32_bytes(&values(64, 0.0)))],
    );
    let o = ninfer(&[
        "quantize",
        s(&one_d),
        "--format",
        "q8_g32_fp16",
        "--out",
        s(&out),
    ]);
    let t = out_text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("copied (1-D") && t.contains("no tensor encoded"),
        "{t}"
    );
    assert!(!out.exists());

    // A NaN source and an nvfp4 K that is not a multiple of 16: refused with the
    // library's status, copied through unchanged, exit 1; the others are encoded.
    let mut bad = values(4 * 32, 0.5);
    bad[37] = f32::NAN;
    let mixed = dir.join("mixed.safetensors");
    write_st(
        &mixed,
        &[
            (
                "good",
                Dtype::F32,
                vec![4, 32],
                f32_bytes(&values(4 * 32, 0.9)),
            ),
            ("nan", Dtype::F32, vec![4, 32], f32_bytes(&bad)),
            ("k40", Dtype::F32, vec![2, 40], f32_bytes(&values(80, 0.2))),
        ],
    );
    for fmt in TARGETS {
        let o = ninfer(&["quantize", s(&mixed), "--format", fmt, "--out", s(&out)]);
        let t = out_text(&o);
        assert_eq!(o.status.code(), Some(1), "{fmt}: {t}");
        let nan_line = t.lines().find(|l| l.starts_with("  nan  ")).expect(&t);
        assert!(nan_line.contains("NON_FINITE_SOURCE"), "{nan_line}");
        assert!(
            nan_line.contains("row 1") || nan_line.contains("row: 1"),
            "{nan_line}"
        );
        if fmt == "nvfp4" {
            assert!(t.contains("  k40  BAD_SHAPE"), "{t}");
        }
        let bytes = std::fs::read(&out).unwrap();
        let st = SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(st.tensor("nan").unwrap().data(), f32_bytes(&bad));
        assert!(st.tensor("good.codes").is_ok() || st.tensor("good.rows").is_ok());
        let v = ninfer(&["verify", s(&out)]);
        assert!(v.status.success(), "{}", out_text(&v));
        std::fs::remove_file(&out).unwrap();
    }
}

#[test]
fn verify_fails_on_a_broken_descriptor_or_invalid_planes() {
    let dir = scratch("broken");
    let input = dir.join("in.safetensors");
    make_input(&input);
    let good = dir.join("q8.safetensors");
    assert!(
        ninfer(&[
            "quantize",
            s(&input),
            "--format",
            "fp8_e4m3fn_row_bf16",
            "--out",
            s(&good)
        ])
        .status
        .success()
    );
    let bytes = std::fs::read(&good).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let mut md = meta.metadata().clone().unwrap();
    let mut tensors: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(n, t)| (n, t.dtype(), t.shape().to_vec(), t.data().to_vec()))
        .collect();
    // A NaN code (0x7F) in w.a's codes: INVALID_ENCODING.
    for t in &mut tensors {
        if t.0 == "w.a.codes" {
            t.3[5] = 0x7F;
        }
    }
    // A descriptor whose shape disagrees with the planes: SIZE_MISMATCH.
    md.insert(
        "ninfer.w.b".into(),
        "format=fp8_e4m3fn_row_bf16;layout=row_scale_v1;shape=33,65".into(),
    );
    let bad = dir.join("bad.safetensors");
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, sh, b)| (n.clone(), TensorView::new(*d, sh.clone(), b).unwrap()))
        .collect();
    safetensors::serialize_to_file(views, Some(md), &bad).unwrap();
    let o = ninfer(&["verify", s(&bad)]);
    let t = out_text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("w.a") && t.contains("INVALID_ENCODING"), "{t}");
    assert!(t.contains("w.b") && t.contains("SIZE_MISMATCH"), "{t}");
    let o = ninfer(&[
        "decode",
        s(&bad),
        "--tensor",
        "w.b",
        "--out",
        s(&dir.join("x.npy")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(out_text(&o).contains("SIZE_MISMATCH"), "{}", out_text(&o));
}

/// A container version this build does not read is refused, not read as this one.
#[test]
fn another_container_version_is_refused() {
    let dir = scratch("version");
    let path = dir.join("v99.safetensors");
    let bytes = f32_bytes(&[1.0, 2.0]);
    let view = TensorView::new(Dtype::F32, vec![2], &bytes).unwrap();
    let md = HashMap::from([("ninfer".to_string(), "safetensors_v99".to_string())]);
    safetensors::serialize_to_file(vec![("b".to_string(), view)], Some(md), &path).unwrap();
    let o = ninfer(&["inspect", s(&path)]);
    let t = out_text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("\"safetensors_v99\"") && t.contains("safetensors_v1"),
        "{t}"
    );
}

#[test]
fn import_the_python_checkpoint() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/nvfp4/checkpoint.safetensors");
    let ck = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "fixture {} missing ({e}): run scripts/fixtures/nvfp4_checkpoint.py",
            path.display()
        )
    });
    let dir = scratch("import");
    let out = dir.join("imported.safetensors");
    let o = ninfer(&["import", s(&path), "--out", s(&out)]);
    let t = out_text(&o);
    // fp8f's F32 scales (amax/448) are exact in neither BF16 nor binary16: refused.
    assert_eq!(o.status.code(), Some(1), "{t}");
    let refused = t.lines().find(|l| l.starts_with("  fp8f ")).expect(&t);
    assert!(
        refused.contains("no exact BF16") && refused.contains("no exact binary16"),
        "{refused}"
    );
    assert!(t.contains("4 imported, 1 refused"), "{t}");

    let src = SafeTensors::deserialize(&ck).unwrap();
    let data = |n: &str| src.tensor(n).unwrap().data().to_vec();
    let bytes = std::fs::read(&out).unwrap();
    let b = read_planes(&bytes, "fp8b.weight");
    assert_eq!(b.format, Format::Fp8E4m3fnRowBf16);
    assert_eq!(b.planes[0], data("fp8b.weight"));
    assert_eq!(b.planes[1], data("expected.fp8b.scales"));
    let m = read_planes(&bytes, "m.weight");
    assert_eq!(m.format, Format::Nvfp4);
    assert_eq!(m.planes[0], data("m.weight"));
    assert_eq!(m.planes[1], data("expected.m.scales"));
    assert_eq!(m.planes[2], data("expected.m.divisors"));
    assert!(
        m.provenance.contains("scheme=nvfp4-modelopt"),
        "{}",
        m.provenance
    );
    let q = read_planes(&bytes, "q.weight");
    assert_eq!(q.planes[0], data("q.weight_packed"));
    assert!(
        q.provenance.contains("compressed-tensors"),
        "{}",
        q.provenance
    );
    // The refused layer and the unrelated tensors are copied through.
    let st = SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(
        st.tensor("fp8f.weight").unwrap().data(),
        data("fp8f.weight")
    );
    assert!(
        st.tensor("q.weight_packed").is_err(),
        "consumed by the import"
    );
    // Everything imported validates and decodes; the decode equals the library's.
    let v = ninfer(&["verify", s(&out)]);
    assert!(v.status.success(), "{}", out_text(&v));
    let npy = dir.join("m.npy");
    let o = ninfer(&["decode", s(&out), "--tensor", "m.weight", "--out", s(&npy)]);
    assert!(o.status.success(), "{}", out_text(&o));
    let (_, got) = read_npy(&npy);
    let lib = m.decode();
    assert!(
        got.iter()
            .zip(&lib)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    );
    // No importable layer at all: exit 2 with the naming rules.
    let plain = dir.join("plain.safetensors");
    write_st(
        &plain,
        &[("x", Dtype::F32, vec![2], f32_bytes(&[1.0, 2.0]))],
    );
    let o = ninfer(&["import", s(&plain), "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        out_text(&o).contains("no FP8 per-channel"),
        "{}",
        out_text(&o)
    );
}

/// Real weights: all-MiniLM-L6-v2 (F32) from scripts/fetch-models.sh, layer 0 and the
/// position embeddings, every target. Skipped with a note when the model is absent.
#[test]
fn minilm_real_weights() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cache/models/all-MiniLM-L6-v2.safetensors");
    let Ok(model) = std::fs::read(&path) else {
        println!(
            "NOTE: {} absent (scripts/fetch-models.sh fetches it): real-weights check skipped",
            path.display()
        );
        return;
    };
    let st = SafeTensors::deserialize(&model).unwrap();
    let dir = scratch("minilm");
    let names = [
        "encoder.layer.0.intermediate.dense.weight",
        "encoder.layer.0.output.dense.weight",
        "encoder.layer.0.attention.self.query.weight",
    ];
    for fmt in TARGETS {
        let out = dir.join(format!("{fmt}.safetensors"));
        let o = ninfer(&[
            "quantize",
            s(&path),
            "--format",
            fmt,
            "--tensors",
            "encoder.layer.0.",
            "--out",
            s(&out),
        ]);
        let t = out_text(&o);
        assert!(o.status.success(), "{fmt}: {t}");
        assert!(
            t.contains("6 tensors encoded, ") || t.contains("6 tensors encoded ("),
            "{t}"
        );
        let v = ninfer(&["verify", s(&out)]);
        assert!(v.status.success(), "{}", out_text(&v));
        for n in names {
            let x: Vec<f32> = st
                .tensor(n)
                .unwrap()
                .data()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            let (m, rms) = check_tensor(&out, n, &x, &dir, true);
            let rms_x =
                (x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / x.len() as f64).sqrt();
            println!(
                "MiniLM {fmt} {n}: max |err| {m:.3e}, RMS {rms:.3e}, RMS/RMS(x) {:.4}",
                rms / rms_x
            );
        }
    }
}

#[test]
fn detected_by_header_and_plain_tensors_decode_as_data() {
    let dir = scratch("detect");
    let input = dir.join("in.safetensors");
    make_input(&input);
    let out = dir.join("encoded.bin");
    let o = ninfer(&["quantize", s(&input), "--format", "nvfp4", "--out", s(&out)]);
    assert!(o.status.success(), "{}", out_text(&o));
    // No .safetensors extension: recognised by its header, not read as GGUF.
    let i = ninfer(&["inspect", s(&out)]);
    let it = out_text(&i);
    assert!(i.status.success(), "{it}");
    assert!(it.contains("container safetensors_v1"), "{it}");
    assert!(it.contains("3 encoded, 2 plain, 0 malformed"), "{it}");
    // A plain F32 tensor decodes to its own words; an I64 one is refused.
    let npy = dir.join("bias.npy");
    let o = ninfer(&["decode", s(&out), "--tensor", "bias", "--out", s(&npy)]);
    assert!(o.status.success(), "{}", out_text(&o));
    let (shape, v) = read_npy(&npy);
    assert_eq!(shape, "128");
    assert_eq!(f32_bytes(&v), f32_bytes(&values(128, 0.0)));
    let o = ninfer(&["decode", s(&out), "--tensor", "ids", "--out", s(&npy)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        out_text(&o).contains("I64 is not decoded"),
        "{}",
        out_text(&o)
    );
    let o = ninfer(&["decode", s(&out), "--tensor", "nope", "--out", s(&npy)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(out_text(&o).contains("no tensor named"), "{}", out_text(&o));
    // Quantizing an encoded file again copies its encoded tensors (descriptors kept).
    let again = dir.join("again.safetensors");
    let o = ninfer(&[
        "quantize",
        s(&out),
        "--format",
        "q8_g32_fp16",
        "--out",
        s(&again),
    ]);
    let t = out_text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("copied (already encoded)") && t.contains("no tensor encoded"),
        "{t}"
    );
}

/// A tensor with a zero dimension is valid safetensors (the `safetensors` package loads
/// it): `inspect`, `verify` and `decode` treat it as an empty tensor, not a failure.
#[test]
fn tensors_with_a_zero_dimension_are_empty_tensors() {
    let dir = scratch("empty");
    let p = dir.join("empty.safetensors");
    write_st(
        &p,
        &[
            ("e32", Dtype::F32, vec![0, 4], vec![]),
            ("ebf16", Dtype::BF16, vec![3, 0], vec![]),
            (
                "w",
                Dtype::F32,
                vec![2, 2],
                f32_bytes(&[1.0, 2.0, 3.0, 4.0]),
            ),
        ],
    );
    let o = ninfer(&["verify", s(&p)]);
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    assert!(out_text(&o).contains(" 3 direct data, 0 not decodable dtypes, 0 failed"));
    let o = ninfer(&["inspect", s(&p)]);
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let npy = dir.join("e.npy");
    let o = ninfer(&["decode", s(&p), "--tensor", "e32", "--out", s(&npy)]);
    assert!(o.status.success(), "{}", out_text(&o));
    let (shape, v) = read_npy(&npy);
    assert_eq!((shape.as_str(), v.len()), ("0,4", 0));
}
