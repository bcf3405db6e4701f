//! One descriptor per GGUF block type: the library's copy of ggml's type-traits table.
//!
//! Every fact about a block's bytes lives here once: its ggml name and type id, values per
//! block, and its fields in struct order ([`Field`](crate::formats::gguf::blocks::Field):
//! name, byte offset, length, element type). A type's module (`q4_k`, `iq1_m`, ...) holds its fields as constants
//! (`q4_k::QS.at`), its size (`q4_k::BYTES`, the end of its last field, as C's `sizeof`)
//! and its [`BlockType`](crate::formats::gguf::blocks::BlockType) (`q4_k::BLOCK`);
//! [`BLOCK_TYPES`](crate::formats::gguf::blocks::BLOCK_TYPES) lists the 18 in registry order.
//! The registry's sizes, the decoders, the validator and the products all read these.
//!
//! Fields are laid out one after the other from byte 0 (ggml's structs have no padding:
//! every field is bytes or aligned 16/32-bit words), so a block is tiled by its fields.
//! Two ggml arrays are split where their halves mean different things: IQ3_XXS's
//! `qs[96]` is `qs[64]` (grid indices) then `scales_and_signs` (eight u32), and IQ2_S's
//! `qs[64]` is `qs[32]` (grid indices) then `signs[32]`, as ggml's decoders read them.
//!
//! Facts decoded in more than one place are functions here:
//! [`scale_min_k4`](crate::formats::gguf::blocks::scale_min_k4) (Q4_K, Q5_K), `q3_k::scales`,
//! `iq4_xs::scale` and `iq1_m::super_scale_bits`. They take a whole block (or the field's
//! bytes) and panic on a shorter slice, as indexing does.

use crate::registry::Format;
use std::ops::Range;

/// The element type ggml declares for a field (every multi-byte word is little-endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// IEEE-754 binary16 words (a scale: `d`, `dmin`).
    F16,
    /// Bytes (codes, packed scales, bit masks).
    U8,
    /// Signed bytes (Q8_0's codes, Q6_K's scales).
    I8,
    /// 16-bit words.
    U16,
}

impl Elem {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            Elem::U8 | Elem::I8 => 1,
            Elem::F16 | Elem::U16 => 2,
        }
    }
}

/// One named field of a block struct: `len` bytes at byte offset `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// ggml's name for it (`d`, `dmin`, `scales`, `qs`, `qh`, `signs`, ...).
    pub name: &'static str,
    /// Byte offset in the block.
    pub at: usize,
    /// Length in bytes.
    pub len: usize,
    /// Element type.
    pub elem: Elem,
}

impl Field {
    /// The first field of a block: `count` elements at byte 0.
    const fn first(name: &'static str, elem: Elem, count: usize) -> Field {
        Field {
            name,
            at: 0,
            len: count * elem.size(),
            elem,
        }
    }

    /// The field right after `self`: `count` elements.
    const fn then(self, name: &'static str, elem: Elem, count: usize) -> Field {
        Field {
            name,
            at: self.end(),
            len: count * elem.size(),
            elem,
        }
    }

    /// One past its last byte.
    pub const fn end(self) -> usize {
        self.at + self.len
    }

    /// Its byte range in the block.
    pub const fn range(self) -> Range<usize> {
        self.at..self.end()
    }

    /// Its bytes in `block` (a whole block; panics if shorter).
    #[inline(always)]
    pub fn of(self, block: &[u8]) -> &[u8] {
        &block[self.at..self.end()]
    }
}

/// One GGUF block type (a row of ggml's type-traits table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockType {
    /// The registry format whose payload is these blocks.
    pub format: Format,
    /// ggml's name (`"Q4_K"`).
    pub name: &'static str,
    /// ggml's type id (`ggml_type`, the GGUF tensor type field).
    pub ggml_type: u32,
    /// Values per block.
    pub values: usize,
    /// Bytes per block (`sizeof(block_*)`): the end of the last field.
    pub bytes: usize,
    /// The fields in struct order; they tile `0..bytes`.
    pub fields: &'static [Field],
}

impl BlockType {
    const fn new(
        format: Format,
        name: &'static str,
        ggml_type: u32,
        values: usize,
        fields: &'static [Field],
    ) -> BlockType {
        BlockType {
            format,
            name,
            ggml_type,
            values,
            bytes: fields[fields.len() - 1].end(),
            fields,
        }
    }

    /// Its plain binary16 fields (`d`, `dmin`; none for IQ1_M, whose super-scale is spread
    /// over its scales words: [`iq1_m::super_scale_bits`]).
    pub fn f16_fields(&self) -> impl Iterator<Item = Field> + '_ {
        self.fields.iter().copied().filter(|f| f.elem == Elem::F16)
    }
}

/// Every GGUF block type, in registry ([`Format`]) order.
pub static BLOCK_TYPES: [BlockType; 18] = [
    q8_0::BLOCK,
    q4_0::BLOCK,
    q5_0::BLOCK,
    q2_0::BLOCK,
    q2_k::BLOCK,
    q3_k::BLOCK,
    q4_k::BLOCK,
    q5_k::BLOCK,
    q6_k::BLOCK,
    iq2_xxs::BLOCK,
    iq2_xs::BLOCK,
    iq3_xxs::BLOCK,
    iq1_s::BLOCK,
    iq4_nl::BLOCK,
    iq3_s::BLOCK,
    iq2_s::BLOCK,
    iq4_xs::BLOCK,
    iq1_m::BLOCK,
];

/// The descriptor of a gguf_* format (`None` for the other families).
pub fn block_type(format: Format) -> Option<&'static BlockType> {
    BLOCK_TYPES.iter().find(|b| b.format == format)
}

/// The descriptor of a ggml type id, if the library supports it.
pub fn from_ggml_type(ty: u32) -> Option<&'static BlockType> {
    BLOCK_TYPES.iter().find(|b| b.ggml_type == ty)
}

use Elem::{F16, I8, U8, U16};

/// `block_q8_0 { f16 d; i8 qs[32]; }`.
pub mod q8_0 {
    use super::*;
    /// Scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Signed codes.
    pub const QS: Field = D.then("qs", I8, 32);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(Format::GgufQ8_0, "Q8_0", 8, 32, &[D, QS]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_q4_0 { f16 d; u8 qs[16]; }`.
pub mod q4_0 {
    use super::*;
    /// Scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Nibbles: element j low, element j + 16 high.
    pub const QS: Field = D.then("qs", U8, 16);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(Format::GgufQ4_0, "Q4_0", 2, 32, &[D, QS]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_q5_0 { f16 d; u8 qh[4]; u8 qs[16]; }`.
pub mod q5_0 {
    use super::*;
    /// Scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Fifth bits, read as one little-endian u32: bit j belongs to element j.
    pub const QH: Field = D.then("qh", U8, 4);
    /// Low nibbles, as Q4_0.
    pub const QS: Field = QH.then("qs", U8, 16);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(Format::GgufQ5_0, "Q5_0", 6, 32, &[D, QH, QS]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_q2_0 { f16 d; u8 qs[16]; }`, 64 values.
pub mod q2_0 {
    use super::*;
    /// Scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// 2-bit codes, four per byte from the low bits up.
    pub const QS: Field = D.then("qs", U8, 16);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(Format::GgufQ2_0, "Q2_0", 42, 64, &[D, QS]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// The 6-bit scale and min of sub-block `j` (0..8) from the 12 packed scale bytes of
/// Q4_K/Q5_K: sub-blocks 0..4 keep theirs in the low 6 bits of bytes j and j+4; sub-blocks
/// 4..8 take their low 4 bits from byte j+4 and their high 2 bits from the top of bytes
/// j-4 and j (ggml's `get_scale_min_k4`).
#[inline(always)]
pub fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    }
}

/// `block_q2_K { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin; }`.
pub mod q2_k {
    use super::*;
    /// Per 16 values: 4-bit scale (low nibble), 4-bit min (high nibble).
    pub const SCALES: Field = Field::first("scales", U8, 16);
    /// 2-bit codes.
    pub const QS: Field = SCALES.then("qs", U8, 64);
    /// Super-scale of the scales.
    pub const D: Field = QS.then("d", F16, 1);
    /// Super-scale of the mins.
    pub const DMIN: Field = D.then("dmin", F16, 1);
    /// The descriptor.
    pub const BLOCK: BlockType =
        BlockType::new(Format::GgufQ2_K, "Q2_K", 10, 256, &[SCALES, QS, D, DMIN]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d; }`.
pub mod q3_k {
    use super::*;
    /// Third bits (a clear bit subtracts 4).
    pub const HMASK: Field = Field::first("hmask", U8, 32);
    /// Low 2 bits of the codes.
    pub const QS: Field = HMASK.then("qs", U8, 64);
    /// Sixteen packed 6-bit scales ([`scales`]).
    pub const SCALES: Field = QS.then("scales", U8, 12);
    /// Super-scale.
    pub const D: Field = SCALES.then("d", F16, 1);
    /// The descriptor.
    pub const BLOCK: BlockType =
        BlockType::new(Format::GgufQ3_K, "Q3_K", 11, 256, &[HMASK, QS, SCALES, D]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;

    /// The sixteen signed scales (6 bits, minus 32) from the 12 bytes of [`SCALES`]: the
    /// low nibble of scale s is nibble s / 8 of byte s % 8, its high 2 bits are bits
    /// 2·(s / 4) of byte 8 + s % 4.
    #[inline(always)]
    pub fn scales(s: &[u8]) -> [i8; 16] {
        let mut out = [0i8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            let lo = (s[i % 8] >> (4 * (i / 8))) & 0x0F;
            let hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
            *o = (lo | (hi << 4)) as i8 - 32;
        }
        out
    }
}

/// `block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }`.
pub mod q4_k {
    use super::*;
    /// Super-scale of the scales.
    pub const D: Field = Field::first("d", F16, 1);
    /// Super-scale of the mins.
    pub const DMIN: Field = D.then("dmin", F16, 1);
    /// Eight packed 6-bit scales and mins ([`scale_min_k4`]).
    pub const SCALES: Field = DMIN.then("scales", U8, 12);
    /// Nibbles.
    pub const QS: Field = SCALES.then("qs", U8, 128);
    /// The descriptor.
    pub const BLOCK: BlockType =
        BlockType::new(Format::GgufQ4_K, "Q4_K", 12, 256, &[D, DMIN, SCALES, QS]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_q5_K { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }`.
pub mod q5_k {
    use super::*;
    /// Super-scale of the scales.
    pub const D: Field = Field::first("d", F16, 1);
    /// Super-scale of the mins.
    pub const DMIN: Field = D.then("dmin", F16, 1);
    /// Eight packed 6-bit scales and mins ([`scale_min_k4`]).
    pub const SCALES: Field = DMIN.then("scales", U8, 12);
    /// Fifth bits.
    pub const QH: Field = SCALES.then("qh", U8, 32);
    /// Low nibbles.
    pub const QS: Field = QH.then("qs", U8, 128);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(
        Format::GgufQ5_K,
        "Q5_K",
        13,
        256,
        &[D, DMIN, SCALES, QH, QS],
    );
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }`.
pub mod q6_k {
    use super::*;
    /// Low nibbles.
    pub const QL: Field = Field::first("ql", U8, 128);
    /// High 2 bits.
    pub const QH: Field = QL.then("qh", U8, 64);
    /// Signed 8-bit scales, one per 16 values.
    pub const SCALES: Field = QH.then("scales", I8, 16);
    /// Super-scale.
    pub const D: Field = SCALES.then("d", F16, 1);
    /// The descriptor.
    pub const BLOCK: BlockType =
        BlockType::new(Format::GgufQ6_K, "Q6_K", 14, 256, &[QL, QH, SCALES, D]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_iq2_xxs { f16 d; u16 qs[32]; }`.
pub mod iq2_xxs {
    use super::*;
    /// Super-scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Per 32-value group, 8 bytes: four grid indices, then a u32 of scale and signs.
    pub const QS: Field = D.then("qs", U16, 32);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(Format::GgufIq2Xxs, "IQ2_XXS", 16, 256, &[D, QS]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_iq2_xs { f16 d; u16 qs[32]; u8 scales[8]; }`.
pub mod iq2_xs {
    use super::*;
    /// Super-scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Per 8-value run: 9-bit grid index, 7-bit sign index.
    pub const QS: Field = D.then("qs", U16, 32);
    /// Two 4-bit scales per 32-value group.
    pub const SCALES: Field = QS.then("scales", U8, 8);
    /// The descriptor.
    pub const BLOCK: BlockType =
        BlockType::new(Format::GgufIq2Xs, "IQ2_XS", 17, 256, &[D, QS, SCALES]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_iq3_xxs { f16 d; u8 qs[96]; }`: `qs` is 64 grid indices then eight u32.
pub mod iq3_xxs {
    use super::*;
    /// Super-scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Grid indices (the first 64 bytes of ggml's `qs`).
    pub const QS: Field = D.then("qs", U8, 64);
    /// Per 32-value group, a little-endian u32: scale in the top 4 bits, four 7-bit sign
    /// indices (the last 32 bytes of ggml's `qs`).
    pub const SCALES_AND_SIGNS: Field = QS.then("scales_and_signs", U8, 32);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(
        Format::GgufIq3Xxs,
        "IQ3_XXS",
        18,
        256,
        &[D, QS, SCALES_AND_SIGNS],
    );
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_iq1_s { f16 d; u8 qs[32]; u16 qh[8]; }`.
pub mod iq1_s {
    use super::*;
    /// Super-scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Low 8 bits of the grid indices.
    pub const QS: Field = D.then("qs", U8, 32);
    /// Per 32-value group: high index bits, 3-bit scale, delta sign.
    pub const QH: Field = QS.then("qh", U16, 8);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(Format::GgufIq1S, "IQ1_S", 19, 256, &[D, QS, QH]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_iq4_nl { f16 d; u8 qs[16]; }`.
pub mod iq4_nl {
    use super::*;
    /// Scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Codebook indices: element j low nibble, element j + 16 high.
    pub const QS: Field = D.then("qs", U8, 16);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(Format::GgufIq4Nl, "IQ4_NL", 20, 32, &[D, QS]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_iq3_s { f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]; }`.
pub mod iq3_s {
    use super::*;
    /// Super-scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Low 8 bits of the grid indices.
    pub const QS: Field = D.then("qs", U8, 64);
    /// Ninth index bits.
    pub const QH: Field = QS.then("qh", U8, 8);
    /// Sign bytes, one per 8-value run.
    pub const SIGNS: Field = QH.then("signs", U8, 32);
    /// 4-bit scales, one per 32-value group.
    pub const SCALES: Field = SIGNS.then("scales", U8, 4);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(
        Format::GgufIq3S,
        "IQ3_S",
        21,
        256,
        &[D, QS, QH, SIGNS, SCALES],
    );
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_iq2_s { f16 d; u8 qs[64]; u8 qh[8]; u8 scales[8]; }`: `qs` is 32 grid indices
/// then 32 sign bytes.
pub mod iq2_s {
    use super::*;
    /// Super-scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// Low 8 bits of the grid indices (the first half of ggml's `qs`).
    pub const QS: Field = D.then("qs", U8, 32);
    /// Sign bytes, one per 8-value run (the second half of ggml's `qs`).
    pub const SIGNS: Field = QS.then("signs", U8, 32);
    /// High 2 index bits.
    pub const QH: Field = SIGNS.then("qh", U8, 8);
    /// Two 4-bit scales per 32-value group.
    pub const SCALES: Field = QH.then("scales", U8, 8);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(
        Format::GgufIq2S,
        "IQ2_S",
        22,
        256,
        &[D, QS, SIGNS, QH, SCALES],
    );
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;
}

/// `block_iq4_xs { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]; }`.
pub mod iq4_xs {
    use super::*;
    /// Super-scale.
    pub const D: Field = Field::first("d", F16, 1);
    /// High 2 bits of the eight 6-bit scales.
    pub const SCALES_H: Field = D.then("scales_h", U16, 1);
    /// Low 4 bits of the eight 6-bit scales.
    pub const SCALES_L: Field = SCALES_H.then("scales_l", U8, 4);
    /// Codebook indices, 16 bytes per 32-value group, as IQ4_NL.
    pub const QS: Field = SCALES_L.then("qs", U8, 128);
    /// The descriptor.
    pub const BLOCK: BlockType = BlockType::new(
        Format::GgufIq4Xs,
        "IQ4_XS",
        23,
        256,
        &[D, SCALES_H, SCALES_L, QS],
    );
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;

    /// The 6-bit scale (0..64, before ggml's − 32) of 32-value group `g` of `block`: nibble
    /// g % 2 of `scales_l[g / 2]`, high bits at 2g of `scales_h`.
    #[inline(always)]
    pub fn scale(block: &[u8], g: usize) -> u8 {
        let lo = (block[SCALES_L.at + g / 2] >> (4 * (g % 2))) & 0x0F;
        let h = u16::from_le_bytes([block[SCALES_H.at], block[SCALES_H.at + 1]]);
        lo | ((((h >> (2 * g)) & 3) as u8) << 4)
    }
}

/// `block_iq1_m { u8 qs[32]; u8 qh[16]; u8 scales[8]; }`: no `d` field, the binary16
/// super-scale is spread over the scales words ([`iq1_m::super_scale_bits`]).
pub mod iq1_m {
    use super::*;
    /// Low 8 bits of the grid indices.
    pub const QS: Field = Field::first("qs", U8, 32);
    /// A nibble per 8-value run: 3 high index bits, delta sign.
    pub const QH: Field = QS.then("qh", U8, 16);
    /// Four little-endian u16 words (ggml declares bytes): 3-bit run scales in the low 12
    /// bits, a super-scale nibble on top.
    pub const SCALES: Field = QH.then("scales", U8, 8);
    /// The descriptor.
    pub const BLOCK: BlockType =
        BlockType::new(Format::GgufIq1M, "IQ1_M", 29, 256, &[QS, QH, SCALES]);
    /// Bytes per block.
    pub const BYTES: usize = BLOCK.bytes;

    /// The little-endian scales word `w` (0..4) of `block`.
    #[inline(always)]
    pub fn scale_word(block: &[u8], w: usize) -> u16 {
        let at = SCALES.at + 2 * w;
        u16::from_le_bytes([block[at], block[at + 1]])
    }

    /// The binary16 bits of the super-scale: nibble w is the top nibble of scales word w.
    #[inline(always)]
    pub fn super_scale_bits(block: &[u8]) -> u16 {
        let w = |i: usize| scale_word(block, i) >> 12;
        w(0) | (w(1) << 4) | (w(2) << 8) | (w(3) << 12)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Category;

    /// Independent facts: gguf-py 0.19.0's `GGML_QUANT_SIZES` (values, bytes per block) for
    /// the 17 types it knows, and ggml-common.h's `static_assert` on `block_q2_0` (Q2_0 is
    /// newer than gguf-py): (ggml name, type id, values, bytes).
    const GGML_QUANT_SIZES: [(&str, u32, usize, usize); 18] = [
        ("Q8_0", 8, 32, 34),
        ("Q4_0", 2, 32, 18),
        ("Q5_0", 6, 32, 22),
        ("Q2_0", 42, 64, 18),
        ("Q2_K", 10, 256, 84),
        ("Q3_K", 11, 256, 110),
        ("Q4_K", 12, 256, 144),
        ("Q5_K", 13, 256, 176),
        ("Q6_K", 14, 256, 210),
        ("IQ2_XXS", 16, 256, 66),
        ("IQ2_XS", 17, 256, 74),
        ("IQ3_XXS", 18, 256, 98),
        ("IQ1_S", 19, 256, 50),
        ("IQ4_NL", 20, 32, 18),
        ("IQ3_S", 21, 256, 110),
        ("IQ2_S", 22, 256, 82),
        ("IQ4_XS", 23, 256, 136),
        ("IQ1_M", 29, 256, 56),
    ];

    #[test]
    fn descriptors_match_ggml_quant_sizes() {
        for (b, &(name, ty, values, bytes)) in BLOCK_TYPES.iter().zip(&GGML_QUANT_SIZES) {
            assert_eq!(
                (b.name, b.ggml_type, b.values, b.bytes),
                (name, ty, values, bytes)
            );
            assert_eq!(from_ggml_type(ty), Some(b));
            assert_eq!(block_type(b.format), Some(b));
        }
        // Every gguf_* format has exactly one descriptor, named after its ggml type.
        let gguf: Vec<Format> = Format::all()
            .filter(|f| f.info().category == Category::GgufBlock)
            .collect();
        let described: Vec<Format> = BLOCK_TYPES.iter().map(|b| b.format).collect();
        assert_eq!(gguf, described);
        for b in &BLOCK_TYPES {
            assert_eq!(b.format.name(), format!("gguf_{}", b.name.to_lowercase()));
        }
    }

    #[test]
    fn fields_tile_each_block_exactly() {
        for b in &BLOCK_TYPES {
            let mut at = 0;
            for f in b.fields {
                assert_eq!(f.at, at, "{} {}: gap or overlap", b.name, f.name);
                assert!(f.len > 0 && f.len.is_multiple_of(f.elem.size()));
                // Words sit at multiples of their size (ggml's structs have no padding).
                assert!(f.at.is_multiple_of(f.elem.size()), "{} {}", b.name, f.name);
                at = f.end();
            }
            assert_eq!(at, b.bytes, "{}", b.name);
            let mut names: Vec<&str> = b.fields.iter().map(|f| f.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), b.fields.len(), "{}: duplicate names", b.name);
        }
    }

    /// Field offsets transcribed from ggml-common.h's structs (`name@offset`, the split
    /// arrays at ggml's decoders' sub-offsets).
    #[test]
    fn field_offsets_are_ggml_s() {
        let want = [
            "d@0 qs@2",
            "d@0 qs@2",
            "d@0 qh@2 qs@6",
            "d@0 qs@2",
            "scales@0 qs@16 d@80 dmin@82",
            "hmask@0 qs@32 scales@96 d@108",
            "d@0 dmin@2 scales@4 qs@16",
            "d@0 dmin@2 scales@4 qh@16 qs@48",
            "ql@0 qh@128 scales@192 d@208",
            "d@0 qs@2",
            "d@0 qs@2 scales@66",
            "d@0 qs@2 scales_and_signs@66",
            "d@0 qs@2 qh@34",
            "d@0 qs@2",
            "d@0 qs@2 qh@66 signs@74 scales@106",
            "d@0 qs@2 signs@34 qh@66 scales@74",
            "d@0 scales_h@2 scales_l@4 qs@8",
            "qs@0 qh@32 scales@48",
        ];
        for (b, want) in BLOCK_TYPES.iter().zip(want) {
            let got: Vec<String> = b
                .fields
                .iter()
                .map(|f| format!("{}@{}", f.name, f.at))
                .collect();
            assert_eq!(got.join(" "), want, "{}", b.name);
        }
    }

    #[test]
    fn shared_helpers_hand_worked() {
        // IQ1_M super-scale 0x3C00: nibble 3 on top of word 3, nibble C on top of word 2.
        let mut b = [0u8; iq1_m::BYTES];
        b[53] = 0xC0;
        b[55] = 0x3F; // low bits of word 3 are run scales, not the super-scale
        assert_eq!(iq1_m::super_scale_bits(&b), 0x3C00);
        // IQ4_XS group 3: nibble 1 of scales_l[1] = 0x5, bits 6..8 of scales_h = 0b10.
        let mut b = [0u8; iq4_xs::BYTES];
        b[2] = 0b10 << 6;
        b[5] = 0x50;
        assert_eq!(iq4_xs::scale(&b, 3), 0x25);
        assert_eq!(iq4_xs::scale(&b, 2), 0);
        // Q3_K: scale 0 = (1 | 2 << 4) − 32 = 1; scale 15 = (0xF | 3 << 4) − 32 = 31.
        let mut s = [0u8; 12];
        s[0] = 1;
        s[7] = 0xF0;
        s[8] = 2;
        s[11] = 0xC0;
        let sc = q3_k::scales(&s);
        assert_eq!((sc[0], sc[15], sc[1]), (1, 31, -32));
        // Q4_K: sub-block 5 low bits from byte 9, high bits from the tops of bytes 1 and 5.
        let mut s = [0u8; 12];
        s[9] = 0x3A;
        s[1] = 0xC0;
        s[5] = 0x40;
        assert_eq!(scale_min_k4(5, &s), (0x3A, 0x13));
    }
}
