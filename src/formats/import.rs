//! `import_encoded` for GGUF blocks whose contract is a native grouped format's (spec §2,
//! §3.2): GGUF Q2_0 → `q2_g64_fp16` and GGUF Q8_0 → `q8_g32_fp16`. Codes and scale words
//! move from interleaved ggml blocks into the planes of `row_split_k128_v1` without
//! rounding, negating or canonicalizing anything: a GGUF block is exactly one native group
//! (64 values for Q2_0, 32 for Q8_0), its `d` the group's binary16 scale word.

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
