//! `import_encoded` for GGUF blocks whose contract is a native grouped format's (spec §2,
//! §3.2): GGUF Q2_0 → `q2_g64_fp16` and GGUF Q8_0 → `q8_g32_fp16`. Codes and scale words
//! move from interleaved ggml blocks into the planes of `row_split_k128_v1` without
//! rounding, negating or canonicalizing anything: a GGUF block is exactly one native group
//! (64 values for Q2_0, 32 for Q8_0), its `d` the group's binary16 scale word.
//!
//! Ternary checkpoints: GGUF TQ1_0 and TQ2_0 → `t2_g128_fp16` ([`import_gguf_ternary`]).
//! These ggml types have no registered format of their own; a 256-value block's `d` is
//! the scale word of the two 128-value t2 groups it covers, its codes −1/0/+1 unchanged.
//! Safetensors BitNet b1.58 checkpoints → `t2_g128_fp16` ([`import_ternary_safetensors`]):
//! transformers' packed uint8 codes with a per-tensor `weight_scale`, or one word per
//! weight (codes with a scale, or the represented values ±s themselves).

use crate::error::{Error, Result, mul, try_filled};
use crate::formats::float_source::FloatSource;
use crate::formats::gguf::blocks::{q2_0, q8_0};
use crate::formats::gguf::u16_at;
use crate::layouts::{MAX_PLANES, row_split};
use crate::registry::Format;
use crate::view::WeightView;

/// The native format a GGUF format imports into, if it has one.
pub fn native_target(source: Format) -> Option<Format> {
    match source {
        Format::GgufQ2_0 => Some(Format::Q2_G64Fp16),
        Format::GgufQ8_0 => Some(Format::Q8_G32Fp16),
        _ => None,
    }
}

/// Imports a gguf_q2_0 or gguf_q8_0 view into the `row_split_k128_v1` planes of `target`
/// (which must be [`native_target`] of the source), `planes` sized by
/// `layouts::plane_sizes(target, RowSplitK128_V1, rows, K)`.
///
/// Q2_0: element j of a block is bits `2(j%4)..2(j%4)+1` of `qs[j/4]`, an offset word u that
/// is the native Q2 word (q = u − 1); every finite scale is legal for Q2 (both zeros,
/// subnormals). Q8_0: `qs[j]` is the native signed code. The native rules are checked
/// before anything is written: a Q8_0 block with code −128, a −0/Inf/NaN scale, or a +0
/// scale with non-zero codes, and a Q2_0 block with an Inf/NaN scale, are refused with
/// [`Error::InvalidEncoding`] naming the row and block.
///
/// Errors: [`Error::Unsupported`] (no native target, or a different target),
/// [`Error::SizeMismatch`] (a plane of the wrong length), [`Error::InvalidEncoding`],
/// [`Error::OutOfMemory`] (the logical codes and scales are staged in temporaries of
/// rows × K bytes and rows × K / block × 2 bytes).
pub fn import_gguf(
    view: &WeightView<'_>,
    target: Format,
    planes: [&mut [u8]; MAX_PLANES],
) -> Result<()> {
    let source = view.format();
    if native_target(source) != Some(target) {
        return Err(Error::Unsupported(format!(
            "import_encoded from {source} into {target}: the only exact imports are gguf_q2_0 → q2_g64_fp16 and gguf_q8_0 → q8_g32_fp16"
        )));
    }
    let (rows, cols) = (view.rows(), view.cols());
    let info = source.info();
    let (bv, bb) = (info.block_values as usize, info.block_bytes as usize);
    let mut codes = try_filled(mul(rows, cols, "rows × K")?, 0i8, "import codes")?;
    let mut scales = try_filled(
        mul(rows, cols / bv, "rows × blocks")?,
        0u16,
        "import scales",
    )?;
    for (block, (c, s)) in view
        .plane(0)
        .chunks_exact(bb)
        .zip(codes.chunks_exact_mut(bv).zip(scales.iter_mut()))
    {
        match source {
            Format::GgufQ2_0 => {
                *s = u16_at(block, q2_0::D.at);
                let qs = q2_0::QS.of(block);
                for (j, q) in c.iter_mut().enumerate() {
                    let u = (qs[j / 4] >> (2 * (j % 4))) & 3;
                    *q = u as i8 - 1;
                }
            }
            _ => {
                *s = u16_at(block, q8_0::D.at);
                for (q, &b) in c.iter_mut().zip(q8_0::QS.of(block)) {
                    *q = b as i8;
                }
            }
        }
    }
    // `pack` validates the logical words against the native rules (row, group = block)
    // before writing any plane.
    row_split::pack(target, rows, cols, &codes, &scales, planes)
}

/// ggml type id of TQ1_0 (ternary, base-3 packed, 256 values in 54 bytes).
pub const GGML_TYPE_TQ1_0: u32 = 34;
/// ggml type id of TQ2_0 (ternary, 2 bits per value, 256 values in 66 bytes).
pub const GGML_TYPE_TQ2_0: u32 = 35;
/// Values per TQ1_0 / TQ2_0 block (ggml's `QK_K`).
pub const TERNARY_BLOCK_VALUES: usize = 256;

/// The block size in bytes of a ternary ggml type (TQ1_0: 54, TQ2_0: 66), or `None`.
pub fn ternary_block_bytes(ggml_type: u32) -> Option<usize> {
    match ggml_type {
        GGML_TYPE_TQ1_0 => Some(54),
        GGML_TYPE_TQ2_0 => Some(66),
        _ => None,
    }
}

/// The 256 offset words u ∈ 0..=3 (value code u − 1) of one TQ1_0 or TQ2_0 block, in
/// element order, as ggml's `dequantize_row_tq1_0` / `_tq2_0` read them.
///
/// TQ2_0 (`qs[64]`, then `d`): element `128c + 32l + m` is bits `2l..2l+1` of
/// `qs[32c + m]`. TQ1_0 (`qs[48]`, `qh[4]`, then `d`): a byte b holds 5 (4 for `qh`)
/// base-3 digits, digit n being `((b·3ⁿ mod 256) · 3) >> 8`; element `32n + m` (m < 32)
/// is digit n of `qs[m]`, element `160 + 16n + m` (m < 16) digit n of `qs[32 + m]`, and
/// element `240 + 4n + m` (m < 4) digit n of `qh[m]`. TQ1_0 digits are always 0..=2;
/// TQ2_0 can hold the word 3, which is not ternary.
fn ternary_words(ggml_type: u32, block: &[u8], out: &mut [u8; TERNARY_BLOCK_VALUES]) {
    const POW3: [u8; 5] = [1, 3, 9, 27, 81];
    let digit = |b: u8, n: usize| ((b.wrapping_mul(POW3[n]) as u16 * 3) >> 8) as u8;
    if ggml_type == GGML_TYPE_TQ2_0 {
        for (j, o) in out.iter_mut().enumerate() {
            let (c, l, m) = (j / 128, (j % 128) / 32, j % 32);
            *o = (block[32 * c + m] >> (2 * l)) & 3;
        }
    } else {
        for n in 0..5 {
            for m in 0..32 {
                out[32 * n + m] = digit(block[m], n);
            }
            for m in 0..16 {
                out[160 + 16 * n + m] = digit(block[32 + m], n);
            }
        }
        for n in 0..4 {
            for m in 0..4 {
                out[240 + 4 * n + m] = digit(block[48 + m], n);
            }
        }
    }
}

/// Imports a ternary GGUF tensor (TQ1_0 or TQ2_0, ggml type 34 or 35) into the
/// `row_split_k128_v1` planes of `t2_g128_fp16`, moving codes and scales without rounding
/// (spec §2 `import_encoded`, §3.2): each 256-value block's binary16 `d` word becomes the
/// scale word of both 128-value groups it covers, unchanged, and each code maps to −1, 0
/// or +1 exactly (value = d × code, as ggml's dequantizer computes it).
///
/// - `blocks`: the tensor's data, `rows × cols / 256` consecutive ggml blocks (54 bytes for
///   TQ1_0, 66 for TQ2_0), row-major [rows, cols], `cols` the contiguous (GGUF `ne[0]`)
///   dimension.
/// - `planes`: `codes`, `high_bits` (empty), `scales`, sized by
///   `layouts::plane_sizes(Format::T2_G128Fp16, Layout::RowSplitK128_V1, rows, cols)`.
///
/// Refused before anything is written: [`Error::UnregisteredType`] (another ggml type);
/// [`Error::BadShape`] (zero rows or cols, or cols not a multiple of 256: a file is never
/// requantized to fit); [`Error::SizeMismatch`] (`blocks` or a plane of the wrong length);
/// [`Error::Overflow`]; [`Error::InvalidEncoding`] naming the row and t2 group (and the
/// GGUF block) when a block breaks t2_g128_fp16's rules: a TQ2_0 2-bit word 3 (value +2,
/// not ternary), a NaN or infinite `d`, a `d` of −0 (t2 admits +0 but not −0, spec §6.1),
/// or a `d` of +0 over a non-zero code; [`Error::OutOfMemory`] (the logical codes and
/// scales are staged in temporaries of rows × cols bytes and rows × cols / 64 bytes).
pub fn import_gguf_ternary(
    ggml_type: u32,
    blocks: &[u8],
    rows: usize,
    cols: usize,
    planes: [&mut [u8]; MAX_PLANES],
) -> Result<()> {
    let name = match ggml_type {
        GGML_TYPE_TQ1_0 => "TQ1_0",
        GGML_TYPE_TQ2_0 => "TQ2_0",
        other => {
            return Err(Error::UnregisteredType {
                id: other,
                name: crate::registry::ggml_type_name(other)
                    .unwrap_or("unknown")
                    .to_owned(),
                why: "is not ternary: the ternary imports into t2_g128_fp16 take TQ1_0 (34) \
                      and TQ2_0 (35)",
            });
        }
    };
    let bb = ternary_block_bytes(ggml_type).unwrap_or(0);
    if rows == 0 || cols == 0 || !cols.is_multiple_of(TERNARY_BLOCK_VALUES) {
        return Err(Error::BadShape(format!(
            "{name} [{rows}, {cols}] into t2_g128_fp16: rows and cols must be positive and cols a multiple of {TERNARY_BLOCK_VALUES} (whole {name} blocks, each two t2 groups of 128)"
        )));
    }
    let n = mul(rows, cols, "rows × cols")?;
    let nblocks = n / TERNARY_BLOCK_VALUES;
    let expected = mul(nblocks, bb, "blocks × block bytes")?;
    if blocks.len() != expected {
        return Err(Error::SizeMismatch {
            plane: "blocks",
            unit: "bytes",
            expected,
            actual: blocks.len(),
        });
    }
    let target = Format::T2_G128Fp16;
    crate::layouts::check_plane_lens(
        target,
        crate::Layout::RowSplitK128_V1,
        rows,
        cols,
        planes.each_ref().map(|p| p.len()),
    )?;
    let mut codes = try_filled(n, 0i8, "import codes")?;
    let mut scales = try_filled(nblocks * 2, 0u16, "import scales")?;
    let per_row = cols / TERNARY_BLOCK_VALUES;
    let mut words = [0u8; TERNARY_BLOCK_VALUES];
    for (b, (block, (c, s))) in blocks
        .chunks_exact(bb)
        .zip(
            codes
                .chunks_exact_mut(TERNARY_BLOCK_VALUES)
                .zip(scales.chunks_exact_mut(2)),
        )
        .enumerate()
    {
        let (row, rb) = ((b / per_row) as u64, b % per_row);
        let d = u16_at(block, bb - 2);
        ternary_words(ggml_type, block, &mut words);
        if let Some(j) = words.iter().position(|&u| u == 3) {
            return Err(Error::encoding(
                row,
                (2 * rb + j / 128) as u64,
                format!(
                    "t2 group of {name} block {rb} of the row, whose element {j} has the 2-bit word 3 (value +2), not a ternary code"
                ),
            ));
        }
        let why = match d {
            0x8000 => Some("d is −0 (0x8000); t2_g128_fp16 admits +0 but not −0"),
            _ if d & 0x7C00 == 0x7C00 => Some("d is NaN or infinite"),
            _ => None,
        };
        if let Some(why) = why {
            return Err(Error::encoding(
                row,
                (2 * rb) as u64,
                format!("t2 group of {name} block {rb} of the row, whose {why} (d = {d:#06x})"),
            ));
        }
        // A +0 d over non-zero codes: what gguf-py's quantizer writes when a block's largest
        // magnitude underflows binary16. ggml reads its values as ±0; t2's +0 scale requires
        // zero codes and −0 values have no t2 form, so it is refused, saying why.
        if d == 0
            && let Some(j) = words.iter().position(|&u| u != 1)
        {
            return Err(Error::encoding(
                row,
                (2 * rb + j / 128) as u64,
                format!(
                    "t2 group of {name} block {rb} of the row: scale d = +0 with non-zero codes \
                     (a block whose values underflow binary16; ggml reads them as ±0, which \
                     t2_g128_fp16 cannot represent without rounding)"
                ),
            ));
        }
        for (q, &u) in c.iter_mut().zip(&words) {
            *q = u as i8 - 1;
        }
        s.fill(d);
    }
    // `pack` checks every group against t2_g128_fp16's rules (here: a +0 scale over a
    // non-zero code) before writing any plane.
    row_split::pack(target, rows, cols, &codes, &scales, planes)
}

/// Values per `t2_g128_fp16` group.
const T2_GROUP: usize = 128;

/// How a BitNet checkpoint's per-tensor `weight_scale` s turns a ternary code into the
/// represented weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TernaryScaleRule {
    /// value = code / s: transformers' `BitLinear` (`linear_class` `bitlinear`, the
    /// packed `microsoft/bitnet-b1.58-2B-4T` checkpoint), whose output is divided by
    /// `weight_scale`.
    Divide,
    /// value = code × s: transformers' `AutoBitLinear` with offline quantization
    /// (`linear_class` `autobitlinear`), whose output is multiplied by `weight_scale`.
    Multiply,
}

/// The ternary codes of a safetensors weight `[rows, cols]`.
#[derive(Clone, Copy, Debug)]
pub enum TernaryCodes<'a> {
    /// transformers' BitNet packing (`integrations/bitnet.py`, `pack_weights` /
    /// `unpack_weights`): a `U8` tensor `[rows / 4, cols]`, row-major. With P = rows / 4,
    /// weight row n, column k is the 2-bit field i = n / P (bits `2i..2i+1`) of byte
    /// `[n mod P, k]`, an offset word u with code u − 1 (the word 3 is not ternary).
    Packed(&'a [u8]),
    /// One word per weight, row-major `[rows, cols]`. With a scale: every value must be
    /// exactly −1, ±0 or +1 (the codes). Without: every value of a 128-value group must be
    /// −s, ±0 or +s for one s per group (the represented weights themselves).
    Values(FloatSource<'a>),
}

/// The binary16 word of a per-tensor scale, or why there is none.
fn ternary_scale_word(s: f32, rule: TernaryScaleRule) -> Result<u16> {
    let refuse = |why: String| {
        Err(Error::InvalidArgument(format!(
            "weight_scale {s:e} ({:#010x}): {why}; t2_g128_fp16 stores one exact binary16 scale per group and nothing is requantized",
            s.to_bits()
        )))
    };
    if !s.is_finite() || s == 0.0 {
        return refuse("not a finite non-zero number".into());
    }
    match rule {
        TernaryScaleRule::Multiply => {
            let h = half::f16::from_f32(s);
            if h.is_finite() && h.to_f32() == s {
                Ok(h.to_bits())
            } else {
                refuse("value = code × s, and s is not exactly a binary16 value".into())
            }
        }
        TernaryScaleRule::Divide => {
            // s has at most 24 significant bits and a binary16 value 11, so the product
            // is exact in binary64: equality to 1 means 1/s is exactly that binary16 value.
            let h = half::f16::from_f64(1.0 / s as f64);
            if h.is_finite() && h.to_bits() & 0x7FFF != 0 && h.to_f64() * s as f64 == 1.0 {
                Ok(h.to_bits())
            } else {
                refuse(
                    "value = code / s, and 1/s is not exactly a binary16 value (only a power of two within binary16's range is)".into(),
                )
            }
        }
    }
}

/// Imports a ternary safetensors weight (BitNet b1.58 style) into the `row_split_k128_v1`
/// planes of `t2_g128_fp16` without rounding (spec §2 `import_encoded`, §3.2, §6.1).
///
/// - `codes`: [`TernaryCodes::Packed`] (transformers' uint8 packing, 4 rows per byte) or
///   [`TernaryCodes::Values`] (one BF16/F16/F32 word per weight).
/// - `scale`: `Some((s, rule))`, the checkpoint's per-tensor `weight_scale` (one value,
///   widened exactly to binary32) and how it applies: every group's scale word is then
///   binary16(s) ([`TernaryScaleRule::Multiply`]) or binary16(1/s)
///   ([`TernaryScaleRule::Divide`]), which must be exact. `None` (values only): each group's
///   scale is its largest magnitude s, which must be exactly a binary16 value, and codes
///   are the signs of ±s (an all-zero group gets +0).
/// - `planes`: `codes`, `high_bits` (empty), `scales`, sized by
///   `layouts::plane_sizes(Format::T2_G128Fp16, Layout::RowSplitK128_V1, rows, cols)`.
///
/// Every decoded value equals the convention's dequantization (code × s, code / s, or the
/// value itself) exactly.
///
/// Refused before anything is written: [`Error::BadShape`] (zero rows or cols, cols not a
/// multiple of 128, packed rows not a multiple of 4); [`Error::SizeMismatch`] (`packed`,
/// `values` or a plane of the wrong length); [`Error::InvalidArgument`] (a packed source
/// without a scale; a scale that is NaN, infinite, zero, or not exact in binary16 under its
/// rule); [`Error::InvalidEncoding`] naming the row and 128-value group (as block): a packed
/// word 3, a value other than −1/0/+1 with a scale, and without one a NaN/infinite value,
/// magnitudes that differ within the group, or a magnitude not exact in binary16;
/// [`Error::Overflow`]; [`Error::OutOfMemory`] (temporaries of rows × cols bytes and
/// rows × cols / 64 bytes).
pub fn import_ternary_safetensors(
    codes: TernaryCodes<'_>,
    scale: Option<(f32, TernaryScaleRule)>,
    rows: usize,
    cols: usize,
    planes: [&mut [u8]; MAX_PLANES],
) -> Result<()> {
    if rows == 0 || cols == 0 || !cols.is_multiple_of(T2_GROUP) {
        return Err(Error::BadShape(format!(
            "ternary [{rows}, {cols}] into t2_g128_fp16: rows and cols must be positive and cols a multiple of {T2_GROUP} (whole t2 groups; nothing is requantized to fit)"
        )));
    }
    let n = mul(rows, cols, "rows × cols")?;
    match codes {
        TernaryCodes::Packed(p) => {
            if !rows.is_multiple_of(4) {
                return Err(Error::BadShape(format!(
                    "packed ternary [{rows}, {cols}]: rows must be a multiple of 4 (4 rows per byte)"
                )));
            }
            if p.len() != n / 4 {
                return Err(Error::SizeMismatch {
                    plane: "packed",
                    unit: "bytes",
                    expected: n / 4,
                    actual: p.len(),
                });
            }
        }
        TernaryCodes::Values(v) => {
            if v.len() != n {
                return Err(Error::SizeMismatch {
                    plane: "values",
                    unit: "values",
                    expected: n,
                    actual: v.len(),
                });
            }
        }
    }
    let target = Format::T2_G128Fp16;
    crate::layouts::check_plane_lens(
        target,
        crate::Layout::RowSplitK128_V1,
        rows,
        cols,
        planes.each_ref().map(|p| p.len()),
    )?;
    let word = match (scale, codes) {
        (Some((s, rule)), _) => Some(ternary_scale_word(s, rule)?),
        (None, TernaryCodes::Packed(_)) => {
            return Err(Error::InvalidArgument(
                "packed ternary codes need their weight_scale".into(),
            ));
        }
        (None, TernaryCodes::Values(_)) => None,
    };
    let mut q = try_filled(n, 0i8, "import codes")?;
    let mut scales = try_filled(n / T2_GROUP, word.unwrap_or(0), "import scales")?;
    let groups_per_row = cols / T2_GROUP;
    let at = |i: usize| ((i / cols) as u64, ((i % cols) / T2_GROUP) as u64);
    match codes {
        TernaryCodes::Packed(p) => {
            let prow = rows / 4;
            for (i, c) in q.iter_mut().enumerate() {
                let (r, k) = (i / cols, i % cols);
                let u = (p[(r % prow) * cols + k] >> (2 * (r / prow))) & 3;
                if u == 3 {
                    let (row, g) = at(i);
                    return Err(Error::encoding(
                        row,
                        g,
                        format!(
                            "column {k} is the packed 2-bit word 3 (field {} of packed row {}), not a ternary code",
                            r / prow,
                            r % prow
                        ),
                    ));
                }
                *c = u as i8 - 1;
            }
        }
        TernaryCodes::Values(v) => {
            let value = |i: usize| -> f32 {
                match v {
                    FloatSource::F32(s) => s[i],
                    FloatSource::Bf16(s) => f32::from_bits((s[i] as u32) << 16),
                    FloatSource::F16(s) => half::f16::from_bits(s[i]).to_f32(),
                }
            };
            for (g, (c, sw)) in q
                .chunks_exact_mut(T2_GROUP)
                .zip(scales.iter_mut())
                .enumerate()
            {
                let base = g * T2_GROUP;
                let (row, grp) = ((g / groups_per_row) as u64, (g % groups_per_row) as u64);
                let mag = match word {
                    Some(_) => 1.0f32,
                    None => (0..T2_GROUP).fold(0f32, |m, j| m.max(value(base + j).abs())),
                };
                if word.is_none() {
                    let h = half::f16::from_f32(mag);
                    if !mag.is_finite() || h.to_f32() != mag {
                        return Err(Error::encoding(
                            row,
                            grp,
                            format!(
                                "magnitude {mag:e} is not exactly a binary16 value (or not finite): the group has no exact t2 scale"
                            ),
                        ));
                    }
                    *sw = h.to_bits();
                }
                for (j, c) in c.iter_mut().enumerate() {
                    let x = value(base + j);
                    *c = if x == 0.0 {
                        0
                    } else if x == mag {
                        1
                    } else if x == -mag {
                        -1
                    } else {
                        let k = base % cols + j;
                        return Err(Error::encoding(
                            row,
                            grp,
                            match word {
                                Some(_) => format!(
                                    "column {k} holds {x:e}, not a ternary code −1, 0 or +1"
                                ),
                                None => format!(
                                    "column {k} holds {x:e}, neither 0 nor ±{mag:e} (the group's magnitude)"
                                ),
                            },
                        ));
                    };
                }
            }
        }
    }
    // `pack` checks every group against t2_g128_fp16's rules before writing any plane.
    row_split::pack(target, rows, cols, &q, &scales, planes)
}
