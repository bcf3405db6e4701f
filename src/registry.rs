//! The closed format registry and the layout registry (spec §1–§2, §9).
//!
//! Every persistent numeric format of a `.ninfer` artifact is one [`Format`] value; its facts
//! live in one [`FormatInfo`] row of [`FORMATS`]. There is no constructor from an open-ended
//! (bits, group, scale) triple: a format is found by its exact canonical name
//! ([`Format::from_name`]), its ggml type id ([`Format::from_ggml_type`]) or its index.
//!
//! Every storage layout is one [`Layout`]; each format has exactly one registered layout
//! ([`FormatInfo::layout`]), and [`compatible`] answers whether a pair is legal.

use crate::error::{Error, Result};
use crate::formats::gguf::blocks::{self as b, BlockType};
use std::ffi::CStr;

/// A canonical persistent numeric format (C: `ninfer_format`, a `uint32_t`).
///
/// The numbers are part of the ABI (append-only) and index [`FORMATS`].
// Variant names keep the canonical names' digit-letter breaks so that the C constants read
// NINFER_FORMAT_Q4_G64_FP16, NINFER_FORMAT_GGUF_Q4_K.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// `bf16`: bfloat16 words (§3.1).
    Bf16 = 0,
    /// `fp32`: IEEE-754 binary32 words (§3.1).
    Fp32 = 1,
    /// `int32`: two's-complement 32-bit integers (§3.1).
    Int32 = 2,
    /// `q2_g64_fp16`: offset codes u-1 in [-1, 2], one binary16 scale per 64 values (§3.2).
    Q2_G64Fp16 = 3,
    /// `q4_g64_fp16`: 4-bit signed codes, one binary16 scale per 64 values (§3.2, §5–§6).
    Q4_G64Fp16 = 4,
    /// `q5_g64_fp16`: 5-bit signed codes, one binary16 scale per 64 values.
    Q5_G64Fp16 = 5,
    /// `q6_g64_fp16`: 6-bit signed codes, one binary16 scale per 64 values.
    Q6_G64Fp16 = 6,
    /// `q8_g32_fp16`: 8-bit signed codes in [-127, 127], one binary16 scale per 32 values.
    Q8_G32Fp16 = 7,
    /// `t2_g128_fp16`: ternary 2-bit two's-complement codes, one binary16 scale per 128.
    T2_G128Fp16 = 8,
    /// `nvfp4`: E2M1 codes, one E4M3FN scale per 16 K-values, FP32 divisors (§3.3).
    Nvfp4 = 9,
    /// `fp8_e4m3fn_row_bf16`: E4M3FN codes, one BF16 multiplier per row (§3.4).
    Fp8E4m3fnRowBf16 = 10,
    /// `fp8_e4m3fn_row_fp16`: E4M3FN codes, one binary16 multiplier per row (§3.4).
    Fp8E4m3fnRowFp16 = 11,
    /// `gguf_q8_0` (ggml type 8).
    GgufQ8_0 = 12,
    /// `gguf_q4_0` (ggml type 2).
    GgufQ4_0 = 13,
    /// `gguf_q5_0` (ggml type 6).
    GgufQ5_0 = 14,
    /// `gguf_q2_0` (ggml type 42).
    GgufQ2_0 = 15,
    /// `gguf_q2_k` (ggml type 10).
    GgufQ2_K = 16,
    /// `gguf_q3_k` (ggml type 11).
    GgufQ3_K = 17,
    /// `gguf_q4_k` (ggml type 12).
    GgufQ4_K = 18,
    /// `gguf_q5_k` (ggml type 13).
    GgufQ5_K = 19,
    /// `gguf_q6_k` (ggml type 14).
    GgufQ6_K = 20,
    /// `gguf_iq2_xxs` (ggml type 16).
    GgufIq2Xxs = 21,
    /// `gguf_iq2_xs` (ggml type 17).
    GgufIq2Xs = 22,
    /// `gguf_iq3_xxs` (ggml type 18).
    GgufIq3Xxs = 23,
    /// `gguf_iq1_s` (ggml type 19).
    GgufIq1S = 24,
    /// `gguf_iq4_nl` (ggml type 20).
    GgufIq4Nl = 25,
    /// `gguf_iq3_s` (ggml type 21).
    GgufIq3S = 26,
    /// `gguf_iq2_s` (ggml type 22).
    GgufIq2S = 27,
    /// `gguf_iq4_xs` (ggml type 23).
    GgufIq4Xs = 28,
    /// `gguf_iq1_m` (ggml type 29).
    GgufIq1M = 29,
}

/// The family a format belongs to (spec §1).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// bf16, fp32.
    DirectFloat = 0,
    /// int32.
    DirectInt = 1,
    /// q2/q4/q5/q6/q8/t2 grouped signed-integer formats.
    GroupedInt = 2,
    /// nvfp4.
    BlockScaledFloat = 3,
    /// fp8_e4m3fn_row_*.
    RowScaledFloat = 4,
    /// gguf_*: ggml blocks kept byte for byte.
    GgufBlock = 5,
}

/// The type of a format's stored scale field.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScaleType {
    /// Direct formats have no scale.
    None = 0,
    /// IEEE-754 binary16.
    F16 = 1,
    /// bfloat16.
    Bf16 = 2,
    /// E4M3FN (nvfp4 block scales; the FP32 divisors are a separate field).
    E4m3fn = 3,
    /// The binary16 `d`/`dmin` and sub-block scales of a ggml block struct.
    GgmlBlock = 4,
}

/// A storage layout (C: `ninfer_layout`, a `uint32_t`). Numbers are append-only.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// `contiguous_le_v1`: direct words, row-major, little-endian. One plane.
    ContiguousLeV1 = 0,
    /// `row_split_k128_v1`: grouped codes split into bit planes plus a scale plane, K
    /// padded to 128 (docs/layouts.md).
    RowSplitK128_V1 = 1,
    /// `block_scale_k16_m128x4_v1`: nvfp4 codes, 128×4-swizzled E4M3FN scales, FP32
    /// divisors.
    BlockScaleK16_M128x4_V1 = 2,
    /// `row_scale_v1`: fp8 codes plane plus a BF16 row-scale plane.
    RowScaleV1 = 3,
    /// `row_interleaved_v1`: fp8 rows, each its binary16 scale followed by its codes.
    RowInterleavedV1 = 4,
    /// `gguf_blocks_v1`: a row-major [N, K] matrix whose rows are K / block_values
    /// consecutive ggml blocks, byte for byte as in a GGUF file. One plane.
    GgufBlocksV1 = 5,
}

/// Everything the registry knows about one format. One row per format in [`FORMATS`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FormatInfo {
    /// The format.
    pub format: Format,
    /// Canonical name, NUL-terminated for C.
    pub cname: &'static CStr,
    /// Family.
    pub category: Category,
    /// Logical code (or word) width in bits; 0 for GGUF blocks, whose codes vary.
    pub code_bits: u32,
    /// Values sharing one scale: the group size (grouped), K-group (nvfp4), block values
    /// (GGUF); 1 for direct and row-scaled formats.
    pub block_values: u32,
    /// Logical bytes of one such block: codes plus its scale (grouped: G·b/8 + 2; nvfp4: 8 +
    /// 1; GGUF: sizeof(block_*); direct: the word size; fp8: 1, the per-row scale excluded).
    pub block_bytes: u32,
    /// Stored scale type.
    pub scale: ScaleType,
    /// Smallest legal signed code (grouped and int32), else 0.
    pub code_min: i64,
    /// Largest legal signed code (grouped and int32), else 0.
    pub code_max: i64,
    /// The reference encoder's scale denominator (spec §7.2), or 0 when grouped_absmax
    /// refuses the format or it has none.
    pub qmax: i32,
    /// Ideal logical bits per weight for full blocks (spec §1, §6.3; per-row and per-matrix
    /// fields excluded). Every value is dyadic, so the `f64` is exact.
    pub bits_per_weight: f64,
    /// The ggml type whose data is bit-identical, if any.
    pub ggml_type: Option<u32>,
    /// The one registered layout of this format.
    pub layout: Layout,
}

impl FormatInfo {
    /// Canonical name.
    pub fn name(&self) -> &'static str {
        cstr(self.cname)
    }
}

fn cstr(c: &'static CStr) -> &'static str {
    // The registry's names are ASCII literals.
    c.to_str().unwrap_or("?")
}

const fn direct(format: Format, cname: &'static CStr, cat: Category, bits: u32) -> FormatInfo {
    let (lo, hi) = match cat {
        Category::DirectInt => (i32::MIN as i64, i32::MAX as i64),
        _ => (0, 0),
    };
    FormatInfo {
        format,
        cname,
        category: cat,
        code_bits: bits,
        block_values: 1,
        block_bytes: bits / 8,
        scale: ScaleType::None,
        code_min: lo,
        code_max: hi,
        qmax: 0,
        bits_per_weight: bits as f64,
        ggml_type: match format {
            Format::Bf16 => Some(30),
            Format::Fp32 => Some(0),
            _ => Some(26),
        },
        layout: Layout::ContiguousLeV1,
    }
}

const fn grouped(
    format: Format,
    cname: &'static CStr,
    bits: u32,
    group: u32,
    (lo, hi): (i64, i64),
    qmax: i32,
) -> FormatInfo {
    FormatInfo {
        format,
        cname,
        category: Category::GroupedInt,
        code_bits: bits,
        block_values: group,
        block_bytes: group * bits / 8 + 2,
        scale: ScaleType::F16,
        code_min: lo,
        code_max: hi,
        qmax,
        bits_per_weight: bits as f64 + 16.0 / group as f64,
        ggml_type: None,
        layout: Layout::RowSplitK128_V1,
    }
}

/// A gguf_* row: its sizes and ggml type are its block descriptor's.
const fn gguf(cname: &'static CStr, block: BlockType) -> FormatInfo {
    let (values, bytes) = (block.values as u32, block.bytes as u32);
    FormatInfo {
        format: block.format,
        cname,
        category: Category::GgufBlock,
        code_bits: 0,
        block_values: values,
        block_bytes: bytes,
        scale: ScaleType::GgmlBlock,
        code_min: 0,
        code_max: 0,
        qmax: 0,
        bits_per_weight: (bytes * 8) as f64 / values as f64,
        ggml_type: Some(block.ggml_type),
        layout: Layout::GgufBlocksV1,
    }
}

const fn fp8_row(
    format: Format,
    cname: &'static CStr,
    scale: ScaleType,
    layout: Layout,
) -> FormatInfo {
    FormatInfo {
        format,
        cname,
        category: Category::RowScaledFloat,
        code_bits: 8,
        block_values: 1,
        block_bytes: 1,
        scale,
        code_min: 0,
        code_max: 0,
        qmax: 0,
        bits_per_weight: 8.0,
        ggml_type: None,
        layout,
    }
}

/// The closed registry: one row per [`Format`], indexed by its number.
pub static FORMATS: [FormatInfo; 30] = {
    use Format::*;
    [
        direct(Bf16, c"bf16", Category::DirectFloat, 16),
        direct(Fp32, c"fp32", Category::DirectFloat, 32),
        direct(Int32, c"int32", Category::DirectInt, 32),
        grouped(Q2_G64Fp16, c"q2_g64_fp16", 2, 64, (-1, 2), 0),
        grouped(Q4_G64Fp16, c"q4_g64_fp16", 4, 64, (-8, 7), 7),
        grouped(Q5_G64Fp16, c"q5_g64_fp16", 5, 64, (-16, 15), 15),
        grouped(Q6_G64Fp16, c"q6_g64_fp16", 6, 64, (-32, 31), 31),
        grouped(Q8_G32Fp16, c"q8_g32_fp16", 8, 32, (-127, 127), 127),
        grouped(T2_G128Fp16, c"t2_g128_fp16", 2, 128, (-1, 1), 0),
        FormatInfo {
            format: Nvfp4,
            cname: c"nvfp4",
            category: Category::BlockScaledFloat,
            code_bits: 4,
            block_values: 16,
            block_bytes: 9,
            scale: ScaleType::E4m3fn,
            code_min: 0,
            code_max: 0,
            qmax: 0,
            bits_per_weight: 4.5,
            ggml_type: None,
            layout: Layout::BlockScaleK16_M128x4_V1,
        },
        fp8_row(
            Fp8E4m3fnRowBf16,
            c"fp8_e4m3fn_row_bf16",
            ScaleType::Bf16,
            Layout::RowScaleV1,
        ),
        fp8_row(
            Fp8E4m3fnRowFp16,
            c"fp8_e4m3fn_row_fp16",
            ScaleType::F16,
            Layout::RowInterleavedV1,
        ),
        gguf(c"gguf_q8_0", b::q8_0::BLOCK),
        gguf(c"gguf_q4_0", b::q4_0::BLOCK),
        gguf(c"gguf_q5_0", b::q5_0::BLOCK),
        gguf(c"gguf_q2_0", b::q2_0::BLOCK),
        gguf(c"gguf_q2_k", b::q2_k::BLOCK),
        gguf(c"gguf_q3_k", b::q3_k::BLOCK),
        gguf(c"gguf_q4_k", b::q4_k::BLOCK),
        gguf(c"gguf_q5_k", b::q5_k::BLOCK),
        gguf(c"gguf_q6_k", b::q6_k::BLOCK),
        gguf(c"gguf_iq2_xxs", b::iq2_xxs::BLOCK),
        gguf(c"gguf_iq2_xs", b::iq2_xs::BLOCK),
        gguf(c"gguf_iq3_xxs", b::iq3_xxs::BLOCK),
        gguf(c"gguf_iq1_s", b::iq1_s::BLOCK),
        gguf(c"gguf_iq4_nl", b::iq4_nl::BLOCK),
        gguf(c"gguf_iq3_s", b::iq3_s::BLOCK),
        gguf(c"gguf_iq2_s", b::iq2_s::BLOCK),
        gguf(c"gguf_iq4_xs", b::iq4_xs::BLOCK),
        gguf(c"gguf_iq1_m", b::iq1_m::BLOCK),
    ]
};

impl Format {
    /// Number of registered formats.
    /// cbindgen:ignore
    pub const COUNT: usize = 30;

    /// Every format in numeric order.
    pub fn all() -> impl Iterator<Item = Format> {
        FORMATS.iter().map(|i| i.format)
    }

    /// The format with this number, if registered.
    pub fn from_u32(v: u32) -> Result<Format> {
        FORMATS
            .get(v as usize)
            .map(|i| i.format)
            .ok_or(Error::UnknownFormatNumber(v, FORMATS.len()))
    }

    /// Exact canonical-name lookup: `"q4_g64_fp16"` is found, `"Q4"`, `"q4_g64"` or
    /// `"Q4_G64_FP16"` are [`Error::UnknownFormat`].
    pub fn from_name(name: &str) -> Result<Format> {
        FORMATS
            .iter()
            .find(|i| i.name() == name)
            .map(|i| i.format)
            .ok_or_else(|| Error::UnknownFormat(name.to_owned()))
    }

    /// The format whose data is bit-identical to a GGUF tensor of this ggml type: the 18
    /// gguf_* block types, plus F32 → fp32, BF16 → bf16 and I32 → int32 (direct words).
    /// Every other type (F16, Q4_1, Q8_K, TQ1_0, MXFP4, ...) is
    /// [`Error::UnregisteredType`], naming the type.
    pub fn from_ggml_type(ty: u32) -> Result<Format> {
        FORMATS
            .iter()
            .find(|i| i.ggml_type == Some(ty))
            .map(|i| i.format)
            .ok_or_else(|| Error::UnregisteredType {
                id: ty,
                name: ggml_type_name(ty).unwrap_or("unknown").to_owned(),
                why: "has no registered format",
            })
    }

    /// This format's registry row.
    pub fn info(self) -> &'static FormatInfo {
        &FORMATS[self as usize]
    }

    /// Canonical name.
    pub fn name(self) -> &'static str {
        self.info().name()
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The names ggml gives its type ids (facts from ggml.h; the supported block types' from
/// their descriptors), for messages and the CLI.
pub fn ggml_type_name(ty: u32) -> Option<&'static str> {
    if let Some(block) = b::from_ggml_type(ty) {
        return Some(block.name);
    }
    Some(match ty {
        0 => "F32",
        1 => "F16",
        3 => "Q4_1",
        7 => "Q5_1",
        9 => "Q8_1",
        15 => "Q8_K",
        24 => "I8",
        25 => "I16",
        26 => "I32",
        27 => "I64",
        28 => "F64",
        30 => "BF16",
        34 => "TQ1_0",
        35 => "TQ2_0",
        39 => "MXFP4",
        40 => "NVFP4",
        41 => "Q1_0",
        _ => return None,
    })
}

/// All layouts, in numeric order.
pub static LAYOUTS: [(Layout, &CStr); 6] = [
    (Layout::ContiguousLeV1, c"contiguous_le_v1"),
    (Layout::RowSplitK128_V1, c"row_split_k128_v1"),
    (
        Layout::BlockScaleK16_M128x4_V1,
        c"block_scale_k16_m128x4_v1",
    ),
    (Layout::RowScaleV1, c"row_scale_v1"),
    (Layout::RowInterleavedV1, c"row_interleaved_v1"),
    (Layout::GgufBlocksV1, c"gguf_blocks_v1"),
];

impl Layout {
    /// Number of registered layouts.
    /// cbindgen:ignore
    pub const COUNT: usize = 6;

    /// The layout with this number.
    pub fn from_u32(v: u32) -> Result<Layout> {
        LAYOUTS
            .get(v as usize)
            .map(|l| l.0)
            .ok_or(Error::UnknownLayoutNumber(v, LAYOUTS.len()))
    }

    /// Exact-name lookup.
    pub fn from_name(name: &str) -> Result<Layout> {
        LAYOUTS
            .iter()
            .find(|l| cstr(l.1) == name)
            .map(|l| l.0)
            .ok_or_else(|| Error::UnknownLayout(name.to_owned()))
    }

    /// Canonical name.
    pub fn name(self) -> &'static str {
        cstr(self.cname())
    }

    /// Canonical name, NUL-terminated.
    pub fn cname(self) -> &'static CStr {
        LAYOUTS[self as usize].1
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `format` may be stored in `layout` (spec §2: "reject ... unsupported
/// format/layout combinations"). Each format has exactly one registered layout.
pub fn compatible(format: Format, layout: Layout) -> bool {
    format.info().layout == layout
}

/// [`compatible`] as a `Result`: [`Error::IncompatibleLayout`] when the pair is illegal.
pub fn check_compatible(format: Format, layout: Layout) -> Result<()> {
    if compatible(format, layout) {
        Ok(())
    } else {
        Err(Error::IncompatibleLayout {
            format: format.name(),
            layout: layout.name(),
        })
    }
}
