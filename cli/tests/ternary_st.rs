//! `ninfer import` of ternary (BitNet b1.58 style) safetensors checkpoints into
//! t2_g128_fp16, in transformers' packed uint8 form and one word per weight.
//!
//! Fixtures: tests/data/convert/{bitnet_packed,ternary_values,ternary_st_expected}.safetensors,
//! written by scripts/fixtures/ternary_st_fixtures.py with numpy. Oracle: the imported
//! planes, decoded by the library, equal word for word the convention's dequantization
//! computed plainly in numpy by that script (transformers' `unpack_weights` order, code / s
//! or code × s, or the stored values); refused layers are named with the library's status
//! and copied through byte for byte.

use ninfer::{Format, Layout, WeightView};
use safetensors::{Dtype, SafeTensors};
use std::path::{Path, PathBuf};

mod common;
use common::{ninfer, out_text, s};

fn scratch(name: &str) -> PathBuf {
    common::scratch("ternary-st", name)
}

fn data(name: &str) -> String {
    common::convert_data(name, "scripts/fixtures/ternary_st_fixtures.py")
}

/// The F32 bits of an expected tensor.
fn expected(name: &str) -> (Vec<usize>, Vec<u32>) {
    let bytes = std::fs::read(data("ternary_st_expected.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let t = st.tensor(name).unwrap();
    assert_eq!(t.dtype(), Dtype::F32);
    let v = t
        .data()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (t.shape().to_vec(), v)
}

/// Decodes the t2_g128_fp16 tensor `name` of an output file to F32 bits, checking its
/// descriptor and provenance.
fn decoded(out: &Path, name: &str, scheme: &str) -> Vec<u32> {
    let bytes = std::fs::read(out).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let md = meta.metadata().clone().unwrap();
    let desc = &md[&format!("ninfer.{name}")];
    assert!(
        desc.starts_with("format=t2_g128_fp16;layout=row_split_k128_v1;shape="),
        "{desc}"
    );
    let shape = desc.rsplit_once("shape=").unwrap().1;
    let (r, c) = shape.split_once(',').unwrap();
    let (rows, cols): (usize, usize) = (r.parse().unwrap(), c.parse().unwrap());
    assert!(
        md[&format!("ninfer-provenance.{name}")]
            .starts_with(&format!("method=import_encoded;scheme={scheme};source=")),
        "{md:?}"
    );
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let codes = st.tensor(&format!("{name}.codes")).unwrap().data().to_vec();
    let scales = st
        .tensor(&format!("{name}.scales"))
        .unwrap()
        .data()
        .to_vec();
    let view = WeightView::new(
        Format::T2_G128Fp16,
        Layout::RowSplitK128_V1,
        rows,
        cols,
        [&codes, &[], &scales],
    )
    .unwrap();
    ninfer::validate::validate(&view).unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0f32; cols];
    for r in 0..rows {
        ninfer::decode::decode_row(&view, r as u64, &mut buf).unwrap();
        out.extend(buf.iter().map(|v| v.to_bits()));
    }
    out
}

/// A tensor of the input copied through byte for byte.
fn assert_copied(input: &str, out: &Path, name: &str) {
    let a = std::fs::read(input).unwrap();
    let b = std::fs::read(out).unwrap();
    let (sa, sb) = (
        SafeTensors::deserialize(&a).unwrap(),
        SafeTensors::deserialize(&b).unwrap(),
    );
    let (ta, tb) = (sa.tensor(name).unwrap(), sb.tensor(name).unwrap());
    assert_eq!(ta.dtype(), tb.dtype(), "{name}");
    assert_eq!(ta.shape(), tb.shape(), "{name}");
    assert_eq!(ta.data(), tb.data(), "{name}");
}

fn import(input: &str, out: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["import", input, "--out", s(out)];
    args.extend_from_slice(extra);
    let o = ninfer(&args);
    (o.status.code(), out_text(&o))
}

#[test]
fn packed_bitnet_divide_and_multiply() {
    let dir = scratch("packed");
    let input = data("bitnet_packed.safetensors");
    // Default rule: value = code / weight_scale (transformers' BitLinear).
    let out = dir.join("divide.safetensors");
    let (code, t) = import(&input, &out, &[]);
    assert_eq!(code, Some(1), "{t}");
    let (shape, want) = expected("divide.good");
    assert_eq!(shape, [8, 256]);
    assert_eq!(decoded(&out, "good.weight", "bitnet-packed-divide"), want);
    assert!(
        t.contains("third.weight: INVALID_ARGUMENT")
            && t.contains("1/s is not exactly a binary16 value"),
        "{t}"
    );
    assert!(
        t.contains("word3.weight: INVALID_ENCODING — invalid encoding at row 2, block 0: column 77 is the packed 2-bit word 3"),
        "{t}"
    );
    for n in [
        "third.weight",
        "third.weight_scale",
        "word3.weight",
        "word3.weight_scale",
        "norm.weight",
    ] {
        assert_copied(&input, &out, n);
    }
    // value = code × weight_scale (AutoBitLinear): 3 is exact in binary16, so `third` imports.
    let out = dir.join("multiply.safetensors");
    let (code, t) = import(&input, &out, &["--ternary-scale", "multiply"]);
    assert_eq!(code, Some(1), "{t}");
    assert_eq!(
        decoded(&out, "good.weight", "bitnet-packed-multiply"),
        expected("multiply.good").1
    );
    assert_eq!(
        decoded(&out, "third.weight", "bitnet-packed-multiply"),
        expected("multiply.third").1
    );
    assert!(t.contains("word3.weight: INVALID_ENCODING"), "{t}");
}

#[test]
fn ternary_values_and_codes_with_refusals() {
    let dir = scratch("values");
    let input = data("ternary_values.safetensors");
    // Float tensors are ternary only on request.
    let out = dir.join("none.safetensors");
    let (code, t) = import(&input, &out, &[]);
    assert_eq!(code, Some(2), "{t}");
    assert!(t.contains("need --ternary-values"), "{t}");
    assert!(!out.exists());
    let (code, t) = import(&input, &out, &["--tensors", "codes"]);
    assert_eq!(code, Some(2), "{t}");
    assert!(t.contains("it needs --ternary-values"), "{t}");
    assert!(!out.exists());

    let out = dir.join("divide.safetensors");
    let (code, t) = import(&input, &out, &["--ternary-values"]);
    assert_eq!(code, Some(1), "{t}");
    assert_eq!(
        decoded(&out, "vals.weight", "ternary-values"),
        expected("values.vals").1
    );
    assert_eq!(
        decoded(&out, "codes.weight", "ternary-codes-divide"),
        expected("divide.codes").1
    );
    for (n, why) in [
        (
            "code2.weight",
            "INVALID_ENCODING — invalid encoding at row 2, block 0: column 5 holds 2e0, not a ternary code",
        ),
        (
            "mixed.weight",
            "INVALID_ENCODING — invalid encoding at row 0, block 0: column 1 holds 2.5e-1, neither 0 nor ±5e-1",
        ),
        ("tiny.weight", "is not exactly a binary16 value"),
        ("shape.weight", "BAD_SHAPE"),
        (
            "nanscale.weight",
            "INVALID_ARGUMENT — invalid argument: weight_scale NaN",
        ),
    ] {
        assert!(t.contains(&format!("{n}: ")) && t.contains(why), "{n}: {t}");
        assert_copied(&input, &out, n);
    }
    assert!(t.contains("7 layers: 2 imported, 5 refused"), "{t}");

    // --tensors narrows the ternary-values selection; code × s under multiply.
    let out = dir.join("multiply.safetensors");
    let (code, t) = import(
        &input,
        &out,
        &[
            "--ternary-values",
            "--tensors",
            "codes",
            "--ternary-scale",
            "multiply",
        ],
    );
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(
        decoded(&out, "codes.weight", "ternary-codes-multiply"),
        expected("multiply.codes").1
    );
    assert_copied(&input, &out, "vals.weight");
}
