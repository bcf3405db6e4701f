//! The registry against spec §1, transcribed by hand from the spec's tables (the oracle),
//! and lookups of near-miss names.

use ninfer::registry::{Category, Format, Layout, ScaleType, compatible};

/// (name, code width, group size, code interval, bits/weight, qmax) from §1 and §5.
type GroupedRow = (&'static str, u32, u32, (i64, i64), f64, i32);
const GROUPED: [GroupedRow; 6] = [
    ("q2_g64_fp16", 2, 64, (-1, 2), 2.25, 0),
    ("q4_g64_fp16", 4, 64, (-8, 7), 4.25, 7),
    ("q5_g64_fp16", 5, 64, (-16, 15), 5.25, 15),
    ("q6_g64_fp16", 6, 64, (-32, 31), 6.25, 31),
    ("q8_g32_fp16", 8, 32, (-127, 127), 8.50, 127),
    ("t2_g128_fp16", 2, 128, (-1, 1), 2.125, 0),
];

/// (name, ggml type, block values, block bytes, bits/weight) from §1's GGUF table.
const GGUF: [(&str, u32, u32, u32, f64); 18] = [
    ("gguf_q8_0", 8, 32, 34, 8.50),
    ("gguf_q4_0", 2, 32, 18, 4.50),
    ("gguf_q5_0", 6, 32, 22, 5.50),
    ("gguf_q2_0", 42, 64, 18, 2.25),
    ("gguf_q2_k", 10, 256, 84, 2.625),
    ("gguf_q3_k", 11, 256, 110, 3.4375),
    ("gguf_q4_k", 12, 256, 144, 4.50),
    ("gguf_q5_k", 13, 256, 176, 5.50),
    ("gguf_q6_k", 14, 256, 210, 6.5625),
    ("gguf_iq2_xxs", 16, 256, 66, 2.0625),
    ("gguf_iq2_xs", 17, 256, 74, 2.3125),
    ("gguf_iq3_xxs", 18, 256, 98, 3.0625),
    ("gguf_iq1_s", 19, 256, 50, 1.5625),
    ("gguf_iq4_nl", 20, 32, 18, 4.50),
    ("gguf_iq3_s", 21, 256, 110, 3.4375),
    ("gguf_iq2_s", 22, 256, 82, 2.5625),
    ("gguf_iq4_xs", 23, 256, 136, 4.25),
    ("gguf_iq1_m", 29, 256, 56, 1.75),
];

#[test]
fn thirty_formats_with_dense_numbers_and_unique_names() {
    assert_eq!(Format::all().count(), 30);
    for (i, f) in Format::all().enumerate() {
        assert_eq!(f as usize, i);
        assert_eq!(Format::from_u32(i as u32).unwrap(), f);
        assert_eq!(Format::from_name(f.name()).unwrap(), f);
    }
    assert!(Format::from_u32(30).is_err());
}

#[test]
fn direct_formats_match_section_3_1() {
    for (name, cat, bits, ggml) in [
        ("bf16", Category::DirectFloat, 16, 30),
        ("fp32", Category::DirectFloat, 32, 0),
        ("int32", Category::DirectInt, 32, 26),
    ] {
        let i = Format::from_name(name).unwrap().info();
        assert_eq!(
            (i.category, i.code_bits, i.bits_per_weight),
            (cat, bits, bits as f64)
        );
        assert_eq!(i.scale, ScaleType::None);
        assert_eq!(i.layout, Layout::ContiguousLeV1);
        assert_eq!(i.ggml_type, Some(ggml));
    }
    let i = Format::Int32.info();
    assert_eq!((i.code_min, i.code_max), (-2147483648, 2147483647));
}

#[test]
fn grouped_formats_match_sections_1_and_5() {
    for (name, bits, group, interval, bpw, qmax) in GROUPED {
        let i = Format::from_name(name).unwrap().info();
        assert_eq!(i.category, Category::GroupedInt, "{name}");
        assert_eq!((i.code_bits, i.block_values), (bits, group), "{name}");
        assert_eq!((i.code_min, i.code_max), interval, "{name}");
        assert_eq!(i.bits_per_weight.to_bits(), bpw.to_bits(), "{name}");
        assert_eq!(i.qmax, qmax, "{name}");
        assert_eq!(i.scale, ScaleType::F16, "{name}");
        assert_eq!(i.layout, Layout::RowSplitK128_V1, "{name}");
        assert_eq!(i.ggml_type, None, "{name}");
    }
}

#[test]
fn float_weight_formats_match_sections_3_3_and_3_4() {
    let n = Format::Nvfp4.info();
    assert_eq!((n.name(), n.code_bits, n.block_values), ("nvfp4", 4, 16));
    assert_eq!(
        (n.scale, n.layout),
        (ScaleType::E4m3fn, Layout::BlockScaleK16_M128x4_V1)
    );
    let b = Format::from_name("fp8_e4m3fn_row_bf16").unwrap().info();
    assert_eq!(
        (b.code_bits, b.scale, b.layout),
        (8, ScaleType::Bf16, Layout::RowScaleV1)
    );
    let h = Format::from_name("fp8_e4m3fn_row_fp16").unwrap().info();
    assert_eq!(
        (h.code_bits, h.scale, h.layout),
        (8, ScaleType::F16, Layout::RowInterleavedV1)
    );
}

#[test]
fn gguf_formats_match_section_1() {
    for (name, ty, values, bytes, bpw) in GGUF {
        let f = Format::from_name(name).unwrap();
        let i = f.info();
        assert_eq!(i.category, Category::GgufBlock, "{name}");
        assert_eq!((i.block_values, i.block_bytes), (values, bytes), "{name}");
        assert_eq!(i.bits_per_weight.to_bits(), bpw.to_bits(), "{name}");
        assert_eq!(i.ggml_type, Some(ty), "{name}");
        assert_eq!(Format::from_ggml_type(ty).unwrap(), f, "{name}");
        assert_eq!(i.layout, Layout::GgufBlocksV1, "{name}");
    }
}

#[test]
fn near_miss_names_are_unknown() {
    for name in [
        "Q4",
        "Q8",
        "q4",
        "q4_g64",
        "Q4_G64_FP16",
        "q4_g64_fp16 ",
        " q4_g64_fp16",
        "q4_g32_fp16",
        "q4_g64_bf16",
        "q3_g64_fp16",
        "q8_g64_fp16",
        "gguf_q4_1",
        "gguf_Q4_K",
        "Q4_K",
        "q4_k",
        "gguf_q8_k",
        "fp16",
        "f16",
        "f32",
        "bfloat16",
        "nvfp4_",
        "NVFP4",
        "fp8_e4m3fn_row",
        "fp8_e4m3_row_bf16",
        "t2_g64_fp16",
        "",
    ] {
        let e = Format::from_name(name).unwrap_err();
        assert_eq!(e.status(), ninfer::Status::UnknownFormat, "{name:?}");
    }
    assert!(Layout::from_name("row_split_k128").is_err());
    assert!(Layout::from_name("ROW_SPLIT_K128_V1").is_err());
}

#[test]
fn unregistered_ggml_types_are_refused_by_name() {
    for (ty, name) in [
        (1, "F16"),
        (3, "Q4_1"),
        (7, "Q5_1"),
        (15, "Q8_K"),
        (34, "TQ1_0"),
        (39, "MXFP4"),
        (99, "unknown"),
    ] {
        let e = Format::from_ggml_type(ty).unwrap_err();
        assert_eq!(e.status(), ninfer::Status::UnregisteredType);
        assert!(e.to_string().contains(name), "{e}");
    }
}

#[test]
fn unknown_numbers_say_the_range() {
    let e = Layout::from_u32(99).unwrap_err();
    assert_eq!(e.status(), ninfer::Status::UnknownLayout);
    assert_eq!(
        e.to_string(),
        format!(
            "unknown layout number 99: layouts are numbered 0 to {}",
            Layout::COUNT - 1
        )
    );
}

#[test]
fn each_format_has_exactly_one_legal_layout() {
    for f in Format::all() {
        let legal: Vec<Layout> = (0..Layout::COUNT as u32)
            .map(|l| Layout::from_u32(l).unwrap())
            .filter(|&l| compatible(f, l))
            .collect();
        assert_eq!(legal, vec![f.info().layout], "{f}");
    }
}
