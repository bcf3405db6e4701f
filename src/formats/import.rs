//! `import_encoded` for GGUF blocks whose contract is a native grouped format's (spec §2,
//! §3.2): GGUF Q2_0 → `q2_g64_fp16` and GGUF Q8_0 → `q8_g32_fp16`. Codes and scale words
//! move from interleaved ggml blocks into the planes of `row_split_k128_v1` without
//! rounding, negating or canonicalizing anything: a GGUF block is exactly one native group
//! (64 values for Q2_0, 32 for Q8_0), its `d` the group's binary16 scale word.
//!
//! Ternary checkpoints: GGUF TQ1_0 and TQ2_0 → `t2_g128_fp16` ([`import_gguf_ternary`]).
//! These ggml types have no registered format of their own; a 256-value block's `d` is
//! the scale word of the two 128-value t2 groups it covers, its codes −1/0/+1 unchanged.

use crate::error::{Error, Result, mul, try_filled};
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
        *s = u16_at(block, 0);
        match source {
            Format::GgufQ2_0 => {
                for (j, q) in c.iter_mut().enumerate() {
                    let u = (block[2 + j / 4] >> (2 * (j % 4))) & 3;
                    *q = u as i8 - 1;
                }
            }
            _ => {
                for (q, &b) in c.iter_mut().zip(&block[2..]) {
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
                name: format!(
                    "{} (the ternary imports into t2_g128_fp16 take TQ1_0 (34) and TQ2_0 (35) only)",
                    crate::registry::ggml_type_name(other).unwrap_or("unknown")
                ),
            });
        }
    };
    let bb = ternary_block_bytes(ggml_type).unwrap_or(0);
    if rows == 0 || cols == 0 || cols % TERNARY_BLOCK_VALUES != 0 {
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
