//! GGUF block formats (the gguf_* rows of spec §1 and the paragraph after §3.4).
//!
//! A gguf_* weight is a row-major [N, K] matrix whose rows are K / block_values consecutive
//! ggml blocks, each the byte image of ggml's `block_*` struct (little-endian fields). The
//! value of every element is what ggml's `dequantize_row_*` computes: every function here
//! reproduces its f32 results bit for bit (tests compare against PyPI `gguf`, an
//! independent implementation; Q2_0, absent from it, against its equation). Block facts:
//! ggml's `ggml-common.h` (docs/formats.md, "GGUF blocks"), held once in [`blocks`].
//!
//! - `legacy`, `kquants`, `iquants`: one portable scalar dequantizer per block type.
//! - `x86`: the x86-64 vector kernel of every type, one source expanded per tier: `avx2`
//!   (256-bit) and `avx512` (512-bit widening and stores). The tier is [`Isa::detect`]'s;
//!   each kernel is bit-identical to its scalar kernel.
//! - [`blocks`]: one descriptor per block type (name, ggml id, sizes, named fields).
//! - [`grids`]: ggml's i-quant tables, carried as generated data.
//! - [`validate()`]: the encoding rule (every binary16 scale field finite).

#[cfg(target_arch = "x86_64")]
#[macro_use]
mod x86;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
/// cbindgen:ignore
pub mod blocks;
pub mod grids;
mod iquants;
mod kquants;
mod legacy;
mod validate;

pub use validate::validate;

use crate::error::{Error, Result};
use crate::isa::Isa;
use crate::registry::{Category, Format};

/// Reads the little-endian binary16 at `b[at..at + 2]` as f32 (exact).
#[inline(always)]
pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    half::f16::from_bits(u16_at(b, at)).to_f32()
}

/// The little-endian 16-bit word at `b[at..at + 2]` (block fields are little-endian).
#[inline(always)]
pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The little-endian 32-bit word at `b[at..at + 4]`.
#[inline(always)]
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// One block type's row dequantizer: `blocks` holds whole blocks, `out` their values.
type DequantizeFn = fn(blocks: &[u8], out: &mut [f32]);

fn dequantizer(format: Format) -> Option<DequantizeFn> {
    Some(match format {
        Format::GgufQ8_0 => legacy::dequantize_q8_0,
        Format::GgufQ4_0 => legacy::dequantize_q4_0,
        Format::GgufQ5_0 => legacy::dequantize_q5_0,
        Format::GgufQ2_0 => legacy::dequantize_q2_0,
        Format::GgufQ2_K => kquants::dequantize_q2_k,
        Format::GgufQ3_K => kquants::dequantize_q3_k,
        Format::GgufQ4_K => kquants::dequantize_q4_k,
        Format::GgufQ5_K => kquants::dequantize_q5_k,
        Format::GgufQ6_K => kquants::dequantize_q6_k,
        Format::GgufIq2Xxs => iquants::dequantize_iq2_xxs,
        Format::GgufIq2Xs => iquants::dequantize_iq2_xs,
        Format::GgufIq3Xxs => iquants::dequantize_iq3_xxs,
        Format::GgufIq1S => iquants::dequantize_iq1_s,
        Format::GgufIq4Nl => iquants::dequantize_iq4_nl,
        Format::GgufIq3S => iquants::dequantize_iq3_s,
        Format::GgufIq2S => iquants::dequantize_iq2_s,
        Format::GgufIq4Xs => iquants::dequantize_iq4_xs,
        Format::GgufIq1M => iquants::dequantize_iq1_m,
        _ => return None,
    })
}

/// The code path of `format` on tier `isa` (AVX-VNNI runs the AVX2 kernels: decoding has
/// no dot products). `None` when this machine lacks `isa`.
fn kernel_fn(format: Format, isa: Isa) -> Option<DequantizeFn> {
    if !isa.available() {
        return None;
    }
    match isa {
        Isa::Scalar => dequantizer(format),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if avx2_on_avx512(format, crate::isa::Cpu::get()) => avx2::dequantizer(format),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => avx512::dequantizer(format),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::AvxVnni => avx2::dequantizer(format),
        #[cfg(not(target_arch = "x86_64"))]
        _ => None,
    }
}

/// Whether the AVX-512 tier decodes `format` with the AVX2 code on `cpu`: IQ3_S and IQ1_S,
/// whose 512-bit decoders measured slower than the AVX2 ones on an Intel Xeon with AMX
/// (one thread, 4096², `cargo bench --bench decode`: IQ3_S 3.7 against 4.8–5.0 Gvalues/s,
/// IQ1_S 6.0 against 7.0–7.3), on every AVX-512 CPU but those with four 512-bit pipes
/// ([`Cpu::wide_pipes`](crate::isa::Cpu::wide_pipes), where the 512-bit decoders were
/// written; Intel and AMD Zen 4 take the AVX2 code; on Zen 4 the two measured even: IQ3_S
/// 4.5–4.8 against 4.9, IQ1_S 6.6–6.7 against 6.4–6.5 Gvalues/s). On Zen 4
/// ([`Cpu::zen4`](crate::isa::Cpu::zen4)) Q4_K and IQ1_M too, whose AVX2 decoders measured
/// faster there (Q4_K 16.1 against 14.6 Gvalues/s, IQ1_M 6.5 against 6.1; the other
/// types' 512-bit decoders 1.03–1.3× faster than their AVX2 ones). The same values either
/// way.
#[cfg(target_arch = "x86_64")]
fn avx2_on_avx512(format: Format, cpu: &crate::isa::Cpu) -> bool {
    (matches!(format, Format::GgufIq3S | Format::GgufIq1S) && !cpu.wide_pipes)
        || (matches!(format, Format::GgufQ4_K | Format::GgufIq1M) && cpu.zen4)
}

/// Whether this build decodes `format` (a gguf_* format).
pub fn is_decodable(format: Format) -> bool {
    dequantizer(format).is_some()
}

/// Dequantizes whole blocks of a gguf_* format into f32, bit-exactly as ggml (for finite
/// scale fields, i.e. every valid payload), on this machine's best tier ([`Isa::detect`]).
///
/// `blocks.len()` must be `out.len() / block_values * block_bytes` and `out.len()` a
/// multiple of block_values (the view guarantees both). Decoding is a pure function of the
/// bytes: a NaN/Inf scale field gives non-finite values in its block (the sign and payload
/// of such a NaN are not specified); `validate` reports such fields.
pub fn dequantize(format: Format, blocks: &[u8], out: &mut [f32]) -> Result<()> {
    dequantize_with(Isa::detect(), format, blocks, out)
}

/// [`dequantize`] on a chosen tier (for tests and benchmarks): every tier gives the same
/// f32 words.
///
/// Errors: [`Error::Unsupported`] when this machine lacks `isa`; [`Error::Internal`] for a
/// non-GGUF format or inconsistent lengths.
pub fn dequantize_with(isa: Isa, format: Format, blocks: &[u8], out: &mut [f32]) -> Result<()> {
    let info = format.info();
    if info.category != Category::GgufBlock {
        return Err(Error::Internal(format!("{format} is not a GGUF format")));
    }
    let (bv, bb) = (info.block_values as usize, info.block_bytes as usize);
    if !out.len().is_multiple_of(bv) || blocks.len() != out.len() / bv * bb {
        return Err(Error::Internal(format!(
            "{format}: {} bytes for {} values",
            blocks.len(),
            out.len()
        )));
    }
    let f = kernel_fn(format, isa).ok_or_else(|| {
        Error::Unsupported(format!("no {} tier for {format} on this CPU", isa.name()))
    })?;
    f(blocks, out);
    Ok(())
}

/// Hand-worked blocks: each expected value is computed by hand from the block's equation
/// (the fixtures of `tests/gguf_decode.rs` cover the general case against gguf-py).
#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes one block on every tier this CPU runs (the AVX-512 tier also with its
    /// 512-bit decoder where [`avx2_on_avx512`] picks the AVX2 one); all must agree bit for
    /// bit.
    fn decode(format: Format, block: &[u8]) -> Vec<f32> {
        let n = format.info().block_values as usize;
        let mut scalar = vec![f32::NAN; n];
        dequantize_with(Isa::Scalar, format, block, &mut scalar).unwrap();
        let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for isa in Isa::tested() {
            let mut y = vec![f32::NAN; n];
            dequantize_with(isa, format, block, &mut y).unwrap();
            assert_eq!(
                bits(&scalar),
                bits(&y),
                "{format}: {} differs from scalar",
                isa.name()
            );
            #[cfg(target_arch = "x86_64")]
            if isa == Isa::Avx512 {
                avx512::dequantizer(format).unwrap()(block, &mut y);
                assert_eq!(bits(&scalar), bits(&y), "{format}: 512-bit decoder");
            }
        }
        scalar
    }

    fn block(format: Format, fill: &[(usize, u8)]) -> Vec<u8> {
        let mut b = vec![0u8; format.info().block_bytes as usize];
        for &(at, v) in fill {
            b[at] = v;
        }
        b
    }

    #[test]
    fn q8_0_q4_0_q5_0_q2_0() {
        // Q8_0, d = 0.5: codes −128, −1, 0, 1, 127.
        let b = block(
            Format::GgufQ8_0,
            &[(1, 0x38), (2, 0x80), (3, 0xFF), (5, 1), (6, 127)],
        );
        let y = decode(Format::GgufQ8_0, &b);
        assert_eq!(&y[..5], &[-64.0, -0.5, 0.0, 0.5, 63.5]);
        // Q4_0, d = 2: qs[0] = 0x0F → element 0 = (15 − 8)·2, element 16 = (0 − 8)·2.
        let y = decode(
            Format::GgufQ4_0,
            &block(Format::GgufQ4_0, &[(1, 0x40), (2, 0x0F)]),
        );
        assert_eq!((y[0], y[16], y[1]), (14.0, -16.0, -16.0));
        // Q5_0, d = 1: qh bits 0 and 16 set, qs[0] = 0x21 → (1|16) − 16, (2|16) − 16.
        let b = block(
            Format::GgufQ5_0,
            &[(1, 0x3C), (2, 0x01), (4, 0x01), (6, 0x21)],
        );
        let y = decode(Format::GgufQ5_0, &b);
        assert_eq!((y[0], y[16], y[1], y[17]), (1.0, 2.0, -16.0, -16.0));
        // Q2_0, d = −1.5: byte 0xE4 holds codes 0, 1, 2, 3 from the low bits up.
        let y = decode(
            Format::GgufQ2_0,
            &block(Format::GgufQ2_0, &[(1, 0xBE), (2, 0xE4)]),
        );
        assert_eq!(&y[..5], &[1.5, -0.0, -1.5, -3.0, 1.5]);
    }

    #[test]
    fn k_quants() {
        // Q2_K, d = 1, dmin = 0.5, scales[0] = 0x21 (scale 1, min 2), qs[0] = 0b11_10_01_11:
        // element 0 = 1·3 − 1; elements 32, 64, 96 take shifts 2, 4, 6 with scales[2,4,6]=0.
        let b = block(
            Format::GgufQ2_K,
            &[(0, 0x21), (16, 0b1110_0111), (81, 0x3C), (83, 0x38)],
        );
        let y = decode(Format::GgufQ2_K, &b);
        assert_eq!((y[0], y[1], y[32]), (2.0, -1.0, -0.0));
        // Q3_K, d = 1, scale 0 = (1 | 2 << 4) − 32 = 1: qs[32] = 3; hmask bit 0 of byte 0 set
        // → element 0 = 3; element 1 (hmask clear, code 0) = 0 − 4.
        let b = block(
            Format::GgufQ3_K,
            &[(0, 1), (32, 3), (96, 1), (104, 2), (109, 0x3C)],
        );
        let y = decode(Format::GgufQ3_K, &b);
        assert_eq!((y[0], y[1]), (3.0, -4.0));
        // Q4_K, d = 1, dmin = 1: sub-block 0 scale 2 min 3, sub-block 1 scale 4 min 5;
        // qs[0] = 0x95 → element 0 = 2·5 − 3, element 32 = 4·9 − 5.
        let b = block(
            Format::GgufQ4_K,
            &[
                (1, 0x3C),
                (3, 0x3C),
                (4, 2),
                (5, 4),
                (8, 3),
                (9, 5),
                (16, 0x95),
            ],
        );
        let y = decode(Format::GgufQ4_K, &b);
        assert_eq!((y[0], y[32], y[1]), (7.0, 31.0, -3.0));
        // Q5_K: as Q4_K plus qh[0] = 0b10 → element 32 gets +16: 4·25 − 5.
        let b = block(
            Format::GgufQ5_K,
            &[
                (1, 0x3C),
                (3, 0x3C),
                (4, 2),
                (5, 4),
                (8, 3),
                (9, 5),
                (16, 2),
                (48, 0x95),
            ],
        );
        let y = decode(Format::GgufQ5_K, &b);
        assert_eq!((y[0], y[32]), (7.0, 95.0));
        // Q6_K, d = 0.5, scales[0] = −2: ql[0] = 0x0F, qh[0] = 0b11 → q = 63 − 32 = 31.
        let b = block(
            Format::GgufQ6_K,
            &[(0, 0x0F), (128, 3), (192, 0xFE), (209, 0x38)],
        );
        let y = decode(Format::GgufQ6_K, &b);
        assert_eq!((y[0], y[1]), (-31.0, 32.0));
    }

    #[test]
    fn i_quants() {
        // IQ4_NL, d = 1: qs[0] = 0xF0 → kvalues[0], kvalues[15].
        let y = decode(
            Format::GgufIq4Nl,
            &block(Format::GgufIq4Nl, &[(1, 0x3C), (2, 0xF0)]),
        );
        assert_eq!((y[0], y[16]), (-127.0, 113.0));
        // IQ4_XS, d = 1, group 0 scale (0 | 2 << 4) − 32 = 0 → zeros; group 1 scale
        // (1 | 2 << 4) − 32 = 1 → kvalues.
        let b = block(
            Format::GgufIq4Xs,
            &[(1, 0x3C), (2, 0b1010), (4, 0x10), (24, 0x0F)],
        );
        let y = decode(Format::GgufIq4Xs, &b);
        assert_eq!((y[0], y[32], y[48]), (0.0, 113.0, -127.0));
        // IQ2_XXS, d = 1, group 0 scale 1 → db = (0.5 + 1)·0.25; grid 0 = all 0x08;
        // sign index 1 → ksigns 0x81: elements 0 and 7 negative.
        let b = block(Format::GgufIq2Xxs, &[(1, 0x3C), (6, 1), (9, 0x10)]);
        let y = decode(Format::GgufIq2Xxs, &b);
        assert_eq!(&y[..8], &[-3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, -3.0]);
        // IQ1_S, d = 1, qh[0] = 0 → dl = 1, delta +1/8; grid 0 = all −1.
        let y = decode(Format::GgufIq1S, &block(Format::GgufIq1S, &[(1, 0x3C)]));
        assert_eq!(y[0], -0.875);
        // IQ1_S with qh[0] = 0x9000: scale 1 → dl = 3, delta −1/8 → 3·(−1.125).
        let b = block(Format::GgufIq1S, &[(1, 0x3C), (35, 0x90)]);
        assert_eq!(decode(Format::GgufIq1S, &b)[0], -3.375);
        // IQ1_M, super-scale 0x3C00 (1.0): nibble 3 of it (0x3) in word 3's top, nibble 2
        // (0xC) in word 2's top; scales 0 → dl = 1; qh[0] = 0x08 → delta −1/8 for run 0.
        let b = block(Format::GgufIq1M, &[(32, 0x08), (53, 0xC0), (55, 0x30)]);
        let y = decode(Format::GgufIq1M, &b);
        assert_eq!((y[0], y[8]), (-1.125, -0.875));
    }

    /// The 512-bit decoders that [`avx2_on_avx512`] sets aside on some CPUs, on random
    /// blocks (finite scales: each binary16 field set to a small value of either sign, IQ1_M's
    /// super-scale, whose exponent's top bit is bit 14 of its fourth scale word, kept below
    /// Inf by clearing that bit): the scalar decoder's words.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn set_aside_512_bit_decoders_equal_scalar() {
        if !Isa::Avx512.available() {
            eprintln!("note: no AVX-512 on this machine, its decoders are not tested");
            return;
        }
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for (format, f16_at) in [
            (Format::GgufIq3S, &[blocks::iq3_s::D.at][..]),
            (Format::GgufIq1S, &[blocks::iq1_s::D.at][..]),
            (
                Format::GgufQ4_K,
                &[blocks::q4_k::D.at, blocks::q4_k::DMIN.at][..],
            ),
            (Format::GgufIq1M, &[][..]),
        ] {
            let bb = format.info().block_bytes as usize;
            let mut b: Vec<u8> = (0..64 * bb)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    s as u8
                })
                .collect();
            for (i, blk) in b.chunks_exact_mut(bb).enumerate() {
                let d = half::f16::from_f32(0.01 * (i as f32 - 31.5)).to_bits();
                for &at in f16_at {
                    blk[at..at + 2].copy_from_slice(&d.to_le_bytes());
                }
                if format == Format::GgufIq1M {
                    blk[blocks::iq1_m::SCALES.at + 7] &= !0x40;
                }
            }
            let (mut want, mut got) = (vec![0f32; 64 * 256], vec![0f32; 64 * 256]);
            dequantize_with(Isa::Scalar, format, &b, &mut want).unwrap();
            avx512::dequantizer(format).unwrap()(&b, &mut got);
            let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&want), bits(&got), "{format}");
        }
    }
}
