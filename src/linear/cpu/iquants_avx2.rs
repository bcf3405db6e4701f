//! The x86 i-quant kernels, in exactly the order of [`super::iquants`]'s module docs: one
//! source ([`kernels!`]) compiled per tier — [`avx2`] (AVX2 + FMA + F16C), [`avxvnni`] and
//! [`avx512`] (256-bit `vpdpbusd` for every type's block sums; [`avx512`] also applies the
//! signs as a mask, and with one activation row on Zen 5 runs every type but IQ3_S two
//! groups per 512-bit `vpdpbusd`, [`Iq::WIDE`]) — each with BMI1 `bextr` for the bit fields
//! (detected at run time by the caller).
//!
//! Each 32-value group unpacks to three vectors: `a`, the 32 magnitudes as u8 (the grid
//! bytes); `s`, 32 non-zero i8 whose signs are the values' signs; `m`, 16 i16 factors (one
//! per 16-value half, the types with per-16 scales; else the constant 1, or 8 for IQ1_S).
//! Against activation codes x, on the AVX2 tier: `vpmaddubsw(a, sign(x, s))` (pair sums ≤
//! 2·62·127 < 2¹⁵: magnitudes ≤ 62, |x| ≤ 127 since q8_1 never writes −128), then
//! `vpmaddwd` with `m` gives 8 exact i32 partial sums; an unpack-and-add tree ([`halves`])
//! turns the eight groups' partials into per-half sums and one vector whose lane g is `T_g`
//! (scaled per group by [`Iq::finish`] where the scale was not in `m`), then one `cvt` + one
//! `fma` per super-block with the eight `(d·c)·dx_b`.
//!
//! The VNNI tiers form the same partials without the factors, `vpdpbusd(a, sign(x, s))`
//! (four exact products per i32 lane), and apply them after the tree: the per-half factors
//! by one `vpmulld` per half vector (a half sum ≤ 16·62·127 times ≤ 120), IQ1_S's 8 by a
//! shift. The AVX-512 tier takes each group's 32 sign bits as one word ([`Iq::sign_word`]:
//! IQ2_S and IQ3_S store them as four bytes; for the `KSIGNS_IQ2XS` types
//! [`Iq::sign_words`] forms a super-block's eight words at once, each 7-bit index with its
//! parity bit, [`ksigns_bytes`]) and negates x under that mask (`vpsubb` from zero), the
//! same signed codes as `vpsignb` with [`sign_bits`] / [`SIGNS64`] on the other tiers (the
//! AVX2 tier builds IQ2_XS's and IQ3_XXS's from the same stored words, [`Iq::SIGN_VEC`]).
//! All are exact integers, so every tier gives the same `T_g`, the same bits.
//!
//! The types whose grid index joins bit fields (IQ1_S, IQ1_M, IQ2_S, IQ3_S) build a
//! super-block's indices with vector code ([`Iq::indices`]: `vpshufb` spreads the high
//! bits to u16 lanes, `vpmullw` shifts each lane's field into place, one or with the code
//! bytes) into a buffer, one super-block ahead of its use (read right after the vector
//! store, the loads would wait for store-to-load forwarding, which failed and measured
//! slower on Zen 5): a group's four indices are then one u64 load and a `bextr` each
//! (IQ1_S, IQ1_M, IQ2_S; measured faster than four loads on both tiers). The sign words of
//! [`Iq::sign_words`] go through the same buffer.
//!
//! The compiler emits the broadcasts and blends of [`set4`] as `vmovq` / `vmovhps` +
//! `vinserti128` (three shuffle micro-ops per group); forcing broadcasts and blends with
//! inline assembly measured slower on Zen 5. The two-group form ([`Iq::WIDE`]) instead
//! halves the activation loads, the `vpdpbusd`s and the sign masks, and reduces the four
//! 512-bit partials by one unpack tree and one `vpermd` (measured on Zen 5 at M = 1: IQ2_S
//! and IQ2_XS +10 %, IQ2_XXS and IQ3_XXS +5 %, IQ1_S and IQ1_M within noise; IQ3_S slower,
//! it keeps the 256-bit form). On Intel's AVX-512 cores (512-bit work on two ports, the
//! shuffles of [`set4`] and the merge into 512 bits on one) it measured slower for every
//! type (Xeon with AMX, M = 1, one thread: IQ1_M −19 %, IQ3_XXS and IQ1_S −15 %, IQ2_XXS
//! −13 %, IQ2_S −6 %, IQ2_XS even), so the tier runs it only where
//! [`Cpu::wide_pipes`](crate::isa::Cpu::wide_pipes) holds (Zen 5), and for IQ2_XS on Zen 4
//! ([`Cpu::zen4`](crate::isa::Cpu::zen4): M = 1, 18.7 → 20.5 GMAC/s; the other types
//! 4–10% slower or even there), and the 256-bit form elsewhere; the tests run both.
//!
//! IQ1_S and IQ1_M take grid + 1 ([`IQ1S_GRID1`], unsigned, so no sign step) and remove
//! the added 8·Σx exactly in [`Iq::finish`]: through the block sums (IQ1_S) or the 8-value
//! sums of `Rows::sum8` weighted per run (IQ1_M): the same integers `T_g`.
//!
//! A `vpgatherdd` of the 8 grid words of an IQ3_XXS or IQ3_S group measured slower or no
//! faster than the broadcast loads and blends of [`set8`] on Zen 5; on an Intel Xeon with
//! AMX it measured faster, as did a `vpgatherdq` of the four grid entries of an IQ2_S,
//! IQ1_S or IQ1_M group from the index buffer (M = 1, one thread, 4096²: IQ3_XXS 12.9 →
//! 16.5 GMAC/s, IQ3_S 12.0 → 15.8, IQ2_S 17.3 → 19.1, IQ1_M 16.2 → 17.4, IQ1_S 18.7 →
//! 19.3; M = 8 up to 1.2×, M = 32 within ±4 %). For IQ2_XXS and IQ2_XS, whose indices
//! come straight from the block's bytes, it measured 7–28 % slower there; IQ2_XS instead
//! gains from [`set4_blend`] (blends the compiler cannot turn into shuffles: 15.1 → 15.6–16.3
//! GMAC/s, M = 4..32 even). So the AVX-512 tier has a gather form ([`Iq::GATHER`],
//! `Form::Gather`) that runs where [`Cpu::fast_gathers`](crate::isa::Cpu::fast_gathers)
//! holds; the tests run every form.
//!
//! Software prefetch of the next rows does not pay here (measured): each weight row is
//! read whole and in order, a stream the hardware prefetcher follows.
//!
//! M = 1 unpacks each group and uses it at once; with more activation rows each super-block
//! is unpacked once into a small buffer and then read by every row (same integers, same
//! bits). On a CPU with AMX-INT8, from 16 activation rows, the AVX-512 tier's
//! `dot_row_group_amx` instead writes 16 weight rows' groups as signed codes (the signs
//! applied to the magnitudes) into AMX tiles and forms every (weight row, activation row)
//! pair's exact group sums with `tdpbssd`, for the signed grids (IQ2_XXS, IQ2_XS, IQ2_S,
//! IQ3_XXS, IQ3_S; IQ1_S and IQ1_M keep the buffered kernel): the same `T_g`, the same
//! f32 steps.
//!
//! The opt-in q8_K profile (`dot_row_group_q8k`) runs the same unpacking and `T_g` against
//! q8_K codes and adds the eight `T_g` of a super-block exactly: the order of
//! [`super::gguf_q8k`], one conversion and one fma per super-block (IQ1_S and IQ1_M take
//! the q8_K rows' exact 32- and 8-code sums for their grid offset). IQ4_XS, a codebook
//! type, runs this driver too against q8_K ([`Iq4Xs`]; against q8_1 it takes the legacy
//! kernels).

use super::amx;
use super::iquants::{Form, IqKind};
use crate::formats::gguf::blocks::{iq1_m, iq1_s, iq2_s, iq2_xs, iq2_xxs, iq3_s, iq3_xxs, iq4_xs};
use crate::formats::gguf::grids::{
    IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS,
    KVALUES_IQ4NL,
};
use crate::linear::q8_1::Row;
use crate::linear::q8_k;
use std::arch::x86_64::*;

/// `KSIGNS_IQ2XS` spread to bytes: byte j of entry i is −1 (0xFF) where bit j of the sign
/// byte is set, else +1, ready for `vpsignb`.
static SIGNS64: [u64; 128] = {
    let mut t = [0u64; 128];
    let mut i = 0;
    while i < 128 {
        let s = KSIGNS_IQ2XS[i];
        let mut v = 0u64;
        let mut j = 0;
        while j < 8 {
            let byte: u64 = if s & (1 << j) != 0 { 0xFF } else { 0x01 };
            v |= byte << (8 * j);
            j += 1;
        }
        t[i] = v;
        i += 1;
    }
    t
};

/// `KSIGNS_IQ2XS[i]` for each byte i of `f` (7-bit sign indices): the index with its
/// parity in bit 7 (an odd number of negatives among the first seven values makes the
/// eighth negative: the table's definition).
///
/// # Safety
/// AVX2 (the callers' target features).
#[inline(always)]
unsafe fn ksigns_bytes(f: __m256i) -> __m256i {
    // SAFETY: the caller's contract.
    unsafe {
        let pop4 = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        );
        let m = _mm256_set1_epi8(0x0F);
        let n = _mm256_add_epi8(
            _mm256_shuffle_epi8(pop4, _mm256_and_si256(f, m)),
            _mm256_shuffle_epi8(pop4, _mm256_and_si256(_mm256_srli_epi16::<4>(f), m)),
        );
        // Bit 0 of each byte's count to its bit 7.
        let parity = _mm256_and_si256(_mm256_slli_epi16::<7>(n), _mm256_set1_epi8(i8::MIN));
        _mm256_or_si256(f, parity)
    }
}

/// [`ksigns_bytes`] of the four 7-bit fields at bits 7l of each i32 lane of `aux` (field l
/// to byte l): the sign words of eight groups.
///
/// # Safety
/// AVX2 (the callers' target features).
#[inline(always)]
unsafe fn ksigns_aux(aux: __m256i) -> __m256i {
    // SAFETY: the caller's contract.
    unsafe {
        let m = |v: __m256i, k: i32| _mm256_and_si256(v, _mm256_set1_epi32(k));
        let f = _mm256_or_si256(
            _mm256_or_si256(m(aux, 0x7F), m(_mm256_slli_epi32::<1>(aux), 0x7F00)),
            _mm256_or_si256(
                m(_mm256_slli_epi32::<2>(aux), 0x7F_0000),
                m(_mm256_slli_epi32::<3>(aux), 0x7F00_0000),
            ),
        );
        ksigns_bytes(f)
    }
}

/// Group g's sign word as [`Iq::sign_words`] stored it at `idx`.
///
/// # Safety
/// g < 8; `idx` as [`Iq::sign_words`] left it.
#[inline(always)]
unsafe fn stored_sign_word(idx: *const u16, g: usize) -> u32 {
    // SAFETY: the caller's contract.
    unsafe { idx.cast::<u32>().add(g).read_unaligned() }
}

/// Runs 4g .. 4g + 4 of the indices that [`Iq::indices`] stored at `idx`, as one u64
/// (index l in bits 16l..): one load instead of four.
///
/// # Safety
/// g < 8; `idx` as [`Iq::indices`] left it.
#[inline(always)]
unsafe fn idx4(idx: *const u16, g: usize) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { idx.add(4 * g).cast::<u64>().read_unaligned() }
}

/// `IQ1S_GRID` with 1 added to every byte (grid values −1, 0, 1 → 0, 1, 2): unsigned
/// magnitudes for `vpmaddubsw` directly against the activation codes; the kernels remove
/// the added Σx exactly through the activation sums.
static IQ1S_GRID1: [u64; 2048] = {
    let mut t = [0u64; 2048];
    let mut i = 0;
    while i < 2048 {
        let mut v = 0u64;
        let mut j = 0;
        while j < 8 {
            let byte = ((IQ1S_GRID[i] >> (8 * j)) as u8).wrapping_add(1) as u64;
            v |= byte << (8 * j);
            j += 1;
        }
        t[i] = v;
        i += 1;
    }
    t
};

/// The four u64 `v0..v3` as one vector (lane i = vi), by broadcast loads and blends: they
/// avoid the two shuffle pipes that `vpinsrq`/`vinserti128` compete for.
#[inline(always)]
fn set4(v0: &u64, v1: &u64, v2: &u64, v3: &u64) -> __m256i {
    // SAFETY: AVX2 (the callers' target features); each reference is 8 readable bytes.
    unsafe {
        let b =
            |v: &u64| _mm256_castpd_si256(_mm256_broadcast_sd(&*(v as *const u64).cast::<f64>()));
        let x = _mm256_blend_epi32(b(v0), b(v1), 0x0C);
        let y = _mm256_blend_epi32(b(v2), b(v3), 0xC0);
        _mm256_blend_epi32(x, y, 0xF0)
    }
}

/// [`set4`] with its blends as written: `vpblendd` in inline assembly, which the compiler
/// cannot turn into `vmovhps` + `vinserti128` (three shuffle micro-ops, and Intel's cores
/// run shuffles on one port, blends on three). Measured on an Intel Xeon with AMX at M = 1:
/// IQ2_XS 1.03–1.16× faster than [`set4`]; IQ2_XXS 5% slower, IQ2_S, IQ1_S and IQ1_M slower
/// than their gathers. (On Zen 5 a form like it measured slower than [`set4`].)
#[inline]
#[target_feature(enable = "avx2")]
fn set4_blend(v0: &u64, v1: &u64, v2: &u64, v3: &u64) -> __m256i {
    // SAFETY: each reference is 8 readable bytes.
    let b = |v: &u64| unsafe {
        _mm256_castpd_si256(_mm256_broadcast_sd(&*(v as *const u64).cast::<f64>()))
    };
    #[inline]
    #[target_feature(enable = "avx2")]
    fn blend<const IMM: u8>(a: __m256i, b: __m256i) -> __m256i {
        let r;
        // SAFETY: AVX2 (this function's target feature); registers only.
        unsafe {
            std::arch::asm!(
                "vpblendd {r}, {a}, {b}, {imm}",
                r = lateout(ymm_reg) r,
                a = in(ymm_reg) a,
                b = in(ymm_reg) b,
                imm = const IMM,
                options(pure, nomem, nostack, preserves_flags),
            )
        };
        r
    }
    let x = blend::<0x0C>(b(v0), b(v1));
    let y = blend::<0xC0>(b(v2), b(v3));
    blend::<0xF0>(x, y)
}

/// The eight u32 at `v[i]` as one vector, by broadcast loads and blends.
#[inline(always)]
fn set8(v: [&u32; 8]) -> __m256i {
    // SAFETY: AVX2 (the callers' target features); each reference is 4 readable bytes.
    unsafe {
        let b = |i: usize| {
            _mm256_castps_si256(_mm256_broadcast_ss(&*(v[i] as *const u32).cast::<f32>()))
        };
        let x01 = _mm256_blend_epi32(b(0), b(1), 0x02);
        let x23 = _mm256_blend_epi32(b(2), b(3), 0x08);
        let x45 = _mm256_blend_epi32(b(4), b(5), 0x20);
        let x67 = _mm256_blend_epi32(b(6), b(7), 0x80);
        _mm256_blend_epi32(
            _mm256_blend_epi32(x01, x23, 0x0C),
            _mm256_blend_epi32(x45, x67, 0xC0),
            0xF0,
        )
    }
}

/// The four u64 entries of `table` at the u16 indices `idx[4g .. 4g + 4]` (lane l: the
/// entry of index 4g + l), by one `vpgatherdq`.
///
/// # Safety
/// AVX2; `idx[4g .. 4g + 4]` readable, each index < `table.len()`.
#[inline(always)]
unsafe fn gather4(table: &[u64], idx: *const u16, g: usize) -> __m256i {
    // SAFETY: the caller's contract: 8 bytes at idx + 4g; every lane's entry in the table.
    unsafe {
        let ix = _mm_cvtepu16_epi32(_mm_loadl_epi64(idx.add(4 * g).cast()));
        _mm256_i32gather_epi64::<8>(table.as_ptr().cast(), ix)
    }
}

/// The eight u32 entries of `table` at the indices `ix` (lane i: the entry of index i), by
/// one `vpgatherdd`.
///
/// # Safety
/// AVX2; each lane of `ix` in `0 .. table.len()`.
#[inline(always)]
unsafe fn gather8(table: &[u32], ix: __m256i) -> __m256i {
    // SAFETY: the caller's contract: every lane's entry in the table.
    unsafe { _mm256_i32gather_epi32::<4>(table.as_ptr().cast(), ix) }
}

/// Bits `start .. start + len` of `v` (one BMI1 `bextr`: field extraction is the scalar
/// bottleneck of these kernels).
#[inline(always)]
fn bx(v: u64, start: u32, len: u32) -> usize {
    // SAFETY: BMI1 (the callers' target features).
    unsafe { _bextr_u64(v, start, len) as usize }
}

/// One unpacked group.
#[derive(Clone, Copy)]
struct Group {
    /// The 32 magnitudes (u8).
    a: __m256i,
    /// The sign sources (non-zero i8, [`Iq::SIGNED`] types).
    s: __m256i,
    /// The 32 sign bits (bit e set: value e negative), set where a tier applies the signs
    /// of [`Iq::SIGN_WORD`] types as a mask.
    bits: u32,
    /// The 16 i16 per-half factors ([`Iq::PER16`] types).
    m: __m256i,
}

impl Group {
    /// A group with sign-source vector `s` (zero where unused) and factors `m` (zero where
    /// [`Iq::M`] applies).
    #[inline(always)]
    fn new(a: __m256i, s: __m256i, m: __m256i) -> Group {
        Group { a, s, bits: 0, m }
    }
}

/// A type's super-block unpacker (monomorphized per type).
///
/// The methods of IQ3_XXS, IQ3_S, IQ1_S and IQ1_M are `#[inline(always)]` without target
/// features of their own (AVX2 and BMI1 come from the tier's kernel they are inlined into;
/// IQ1_M's `context` keeps them, since its closures would not inherit them), those of
/// IQ2_XXS, IQ2_XS and IQ2_S `#[inline]` with `#[target_feature]`: the code the compiler
/// then emits for the q8_1 kernels was measured per type on an AVX2-only Zen 3 (with the
/// q8_K kernels instantiating the same methods, the other form cost IQ1_S 8% at M = 1,
/// and IQ2_XXS 2–3%).
trait Iq {
    /// Bytes per super-block.
    const BB: usize;
    /// Reduce the groups with [`parts_hadd`] (else [`parts_unpack`]): code
    /// generation, measured per type.
    const HADD: bool = false;
    /// Whether the groups' sign sources apply (else the magnitudes are used as they are).
    const SIGNED: bool = true;
    /// Whether the signs are also available as one 32-bit word per group through
    /// [`Iq::sign_word`] (for a tier that applies them as a mask): the `KSIGNS_IQ2XS`
    /// indices of IQ2_XXS, IQ2_XS and IQ3_XXS, the explicit sign bytes of IQ2_S and IQ3_S.
    const SIGN_WORD: bool = false;
    /// Whether a factor per 16-value half applies ([`Group::m`], and [`Iq::factors16`]
    /// on the VNNI tiers), else the constant factor [`Iq::M`] (1 or 8) for every value.
    const PER16: bool = false;
    /// The constant factor of every value's product (when not [`Iq::PER16`]): 1 or 8.
    const M: i32 = 1;
    /// What a super-block's groups share.
    type Ctx: Copy;
    /// Whether [`Iq::indices`] writes the grid indices for [`Iq::group`].
    const IDX: bool = false;
    /// Whether the AVX-512 tier runs M = 1 two groups per 512-bit `vpdpbusd`
    /// (`row_wide`) on CPUs with [`Cpu::wide_pipes`](crate::isa::Cpu::wide_pipes): measured
    /// per type.
    const WIDE: bool = false;
    /// The super-block at `blk`: its `d·c` and context.
    ///
    /// # Safety
    /// AVX2 available; `blk` points at a whole super-block.
    unsafe fn context(blk: *const u8) -> (f32, Self::Ctx);
    /// Whether [`Iq::group`] has a form for the CPUs with
    /// [`Cpu::fast_gathers`](crate::isa::Cpu::fast_gathers) (`G`): the grid entries of a
    /// group by one gather, or for IQ2_XS by [`set4_blend`]; measured per type.
    const GATHER: bool = false;
    /// Group g of the super-block at `blk`; `idx` holds what [`Iq::indices`] wrote for it.
    /// With `G` (only where [`Iq::GATHER`]), the grid entries come from one gather (or
    /// [`set4_blend`]), else from broadcast loads and blends ([`set4`], [`set8`]): the same
    /// vector.
    ///
    /// # Safety
    /// As [`Iq::context`]; g < 8; `idx` as [`Iq::indices`] left it.
    unsafe fn group<const G: bool>(
        blk: *const u8,
        g: usize,
        ctx: &Self::Ctx,
        idx: *const u16,
    ) -> Group;
    /// [`Iq::IDX`] types: the super-block's grid indices, one u16 per grid lookup (at most
    /// [`IDX_MAX`]), written to `idx` by vector code (one scalar load per lookup after).
    ///
    /// # Safety
    /// As [`Iq::context`]; [`IDX_MAX`] writable u16 at `idx`.
    #[inline(always)]
    unsafe fn indices(_blk: *const u8, _idx: *mut u16) {}
    /// The per-group terms not applied through `m`: lane g of `t` → `T_g`, with `x` the
    /// activation row and `b` the super-block's first block (its exact code sums).
    ///
    /// # Safety
    /// AVX2 available; blocks b .. b + 8 lie in `x`.
    #[inline(always)]
    unsafe fn finish(t: __m256i, _ctx: &Self::Ctx, _x: X, _b: usize) -> __m256i {
        t
    }
    /// [`Iq::SIGN_WORD`] types: group g's 32 sign bits (bit e set: value e negative);
    /// `idx` as for [`Iq::group`].
    ///
    /// # Safety
    /// As [`Iq::group`].
    #[inline(always)]
    unsafe fn sign_word(_blk: *const u8, _g: usize, _idx: *const u16) -> u32 {
        unreachable!("sign_word of a type without sign indices")
    }
    /// Whether [`Iq::sign_words`] writes the groups' sign words that [`Iq::sign_word`]
    /// reads (where a tier applies the signs as a mask, or builds the sign vectors of
    /// [`Iq::SIGN_VEC`] types from them; not with [`Iq::IDX`]).
    const SIGN_BUF: bool = false;
    /// [`Iq::SIGN_BUF`] types whose sign vectors the AVX2 tier builds, at M = 1, from the
    /// stored sign words ([`sign_bits`]: one broadcast load, a `vpshufb` and three logic
    /// operations) rather than from four [`SIGNS64`] lookups blended together: measured
    /// per type on an AVX2-only Zen 3 at M = 1 (IQ2_XS 1.13–1.16× and IQ3_XXS 1.24× faster,
    /// IQ2_XXS, whose sign indices sit in the word already loaded for its grid indices,
    /// 15% slower).
    const SIGN_VEC: bool = false;
    /// Whether the AMX kernel serves the type (`avx512::dot_row_group_amx`): the signed
    /// types, whose `T_g` is the exact signed sum times the group's factor ([`Iq::factors`])
    /// or the two half sums times theirs ([`Iq::factors_lohi`]); not IQ1_S and IQ1_M, whose
    /// offsets need the activation sums.
    const AMX: bool = false;
    /// [`Iq::AMX`] types without per-16 factors: lane g = group g's factor (`T_g` = the
    /// group's exact signed sum times it, as [`Iq::finish`] computes).
    ///
    /// # Safety
    /// AVX2 available.
    #[inline(always)]
    unsafe fn factors(_ctx: &Self::Ctx) -> __m256i {
        unreachable!("factors of a type without one factor per group")
    }
    /// [`Iq::SIGN_BUF`] types: the eight groups' sign words, as u32 at `idx`.
    ///
    /// # Safety
    /// As [`Iq::indices`].
    #[inline(always)]
    unsafe fn sign_words(_blk: *const u8, _idx: *mut u16) {}
    /// [`Iq::PER16`] types: the 16 factors of the super-block's halves as bytes in the low
    /// 128 bits (byte h: half h = 2g + (value ≥ 16) of group g), those [`Group::m`] holds.
    ///
    /// # Safety
    /// AVX2 available.
    #[inline(always)]
    unsafe fn factors16(_ctx: &Self::Ctx) -> __m256i {
        unreachable!("factors16 of a type without per-16 factors")
    }
    /// [`Iq::PER16`] types: the factors of [`Iq::factors16`] as i32, lane g of the first
    /// the factor of group g's low half, of the second its high half's.
    ///
    /// # Safety
    /// AVX2 available.
    #[inline(always)]
    unsafe fn factors_lohi(ctx: &Self::Ctx) -> (__m256i, __m256i) {
        // SAFETY: the caller's contract.
        unsafe {
            // The low halves' factors are bytes 0, 2, .., 14, the high halves' 1, 3, .., 15.
            let f = _mm_shuffle_epi8(
                _mm256_castsi256_si128(Self::factors16(ctx)),
                _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15),
            );
            (
                _mm256_cvtepu8_epi32(f),
                _mm256_cvtepu8_epi32(_mm_srli_si128(f, 8)),
            )
        }
    }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c,bmi1")]
fn f16_to_f32(bits: u16) -> f32 {
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
}

/// # Safety
/// 2 readable bytes at `p`.
#[inline(always)]
unsafe fn u16_at(p: *const u8) -> u16 {
    // SAFETY: the caller's contract.
    unsafe { p.cast::<u16>().read_unaligned() }
}

/// # Safety
/// 8 readable bytes at `p`.
#[inline(always)]
unsafe fn u64_at(p: *const u8) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { p.cast::<u64>().read_unaligned() }
}

/// `(2s + 1)` per i32 lane for the 4-bit scales s in the top nibbles of `aux`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,bmi1")]
fn odd_top4(aux: __m256i) -> __m256i {
    _mm256_or_si256(
        _mm256_slli_epi32(_mm256_srli_epi32(aux, 28), 1),
        _mm256_set1_epi32(1),
    )
}

/// The most grid indices a super-block has (IQ3_S: 64 lookups of 4 values).
const IDX_MAX: usize = 64;

/// A super-block's grid indices ([`Iq::indices`]), aligned for vector stores.
#[repr(C, align(32))]
struct IdxBuf([u16; IDX_MAX]);

/// Stores `v` (16 u16) as indices `16k .. 16k + 16`.
///
/// # Safety
/// AVX2 (the callers' target features); `idx` as [`Iq::indices`]; k < 4.
#[inline(always)]
unsafe fn put_idx(idx: *mut u16, k: usize, v: __m256i) {
    // SAFETY: the caller's contract.
    unsafe { _mm256_storeu_si256(idx.add(16 * k).cast(), v) }
}

/// `(start + j) / div` for j < 16: which source byte (or word) u16 lane j of a
/// [`spread`] control takes.
const fn div_seq(start: usize, div: usize) -> [u8; 16] {
    let mut t = [0u8; 16];
    let mut j = 0;
    while j < 16 {
        t[j] = ((start + j) / div) as u8;
        j += 1;
    }
    t
}

/// A `vpshufb` control whose u16 lane j takes source byte `src[j]` into its low byte
/// (`hi` false) or its high byte, the other byte zero.
const fn spread(src: [u8; 16], hi: bool) -> [u8; 32] {
    let mut t = [0x80u8; 32];
    let mut j = 0;
    while j < 16 {
        t[2 * j + hi as usize] = src[j];
        j += 1;
    }
    t
}

/// A `vpshufb` control whose u16 lane j takes source u16 word `src[j]`.
const fn spread_words(src: [u8; 16]) -> [u8; 32] {
    let mut t = [0u8; 32];
    let mut j = 0;
    while j < 16 {
        t[2 * j] = 2 * src[j];
        t[2 * j + 1] = 2 * src[j] + 1;
        j += 1;
    }
    t
}

/// The control `c` (32 bytes) as a vector.
#[inline(always)]
fn ctl(c: &[u8; 32]) -> __m256i {
    // SAFETY: AVX2 (the callers' target features); 32 readable bytes.
    unsafe { _mm256_loadu_si256(c.as_ptr().cast()) }
}

/// Indices `16k .. 16k + 16` from their low bytes, the 16 code bytes at `qs`, and their
/// high bits `hi` (in bits 8.. of each u16 lane, low byte zero).
///
/// # Safety
/// AVX2 (the callers' target features); 16 readable bytes at `qs`; `idx` as `put_idx`.
#[inline(always)]
unsafe fn put_idx16(idx: *mut u16, k: usize, qs: *const u8, hi: __m256i) {
    // SAFETY: the caller's contract.
    unsafe {
        let lo = _mm256_cvtepu8_epi16(_mm_loadu_si128(qs.cast()));
        put_idx(idx, k, _mm256_or_si256(lo, hi));
    }
}

/// The eight aux words of the IQ2_XXS super-block at `blk` (the u32 at 6 + 8g, lane g).
///
/// # Safety
/// AVX2; 66 readable bytes at `blk`.
#[inline(always)]
unsafe fn iq2_xxs_aux(blk: *const u8) -> __m256i {
    // SAFETY: the caller's contract (2 + 64 loaded).
    unsafe {
        let lo = _mm256_loadu_si256(blk.add(iq2_xxs::QS.at).cast());
        let hi = _mm256_loadu_si256(blk.add(iq2_xxs::QS.at + 32).cast());
        // The u32 words 1, 3, 5, 7 of each half are the groups' aux words.
        let odd = _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7);
        _mm256_blend_epi32(
            _mm256_permutevar8x32_epi32(lo, odd),
            _mm256_permutevar8x32_epi32(hi, odd),
            0xF0,
        )
    }
}

/// `block_iq2_xxs { f16 d; u16 qs[32]; }`: group g is 8 bytes at 2 + 8g, four grid indices
/// and a u32 with four 7-bit sign indices and the scale in its top 4 bits.
struct Iq2Xxs;
impl Iq for Iq2Xxs {
    const AMX: bool = true;
    #[inline(always)]
    unsafe fn factors(sc: &__m256i) -> __m256i {
        *sc
    }
    const WIDE: bool = true;
    const BB: usize = iq2_xxs::BYTES;
    const SIGN_WORD: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn sign_word(_: *const u8, g: usize, idx: *const u16) -> u32 {
        // SAFETY: the caller's contract.
        unsafe { stored_sign_word(idx, g) }
    }
    const SIGN_BUF: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn sign_words(blk: *const u8, idx: *mut u16) {
        // SAFETY: the super-block's 66 bytes; the caller's buffer.
        unsafe { _mm256_storeu_si256(idx.cast(), ksigns_aux(iq2_xxs_aux(blk))) }
    }
    /// The eight groups' 2s + 1.
    type Ctx = __m256i;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn context(blk: *const u8) -> (f32, __m256i) {
        // SAFETY: 66 bytes at blk.
        unsafe { (f16_to_f32(u16_at(blk)) * 0.125, odd_top4(iq2_xxs_aux(blk))) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn group<const G: bool>(
        blk: *const u8,
        g: usize,
        _: &__m256i,
        _idx: *const u16,
    ) -> Group {
        // SAFETY: 8 bytes at 2 + 8g < 66.
        let v = unsafe { u64_at(blk.add(iq2_xxs::QS.at + 8 * g)) };
        let grid = |i: u32| &IQ2XXS_GRID[((v >> (8 * i)) & 255) as usize];
        let sign = |l: u32| &SIGNS64[bx(v, 32 + 7 * l, 7) & 127];
        Group::new(
            set4(grid(0), grid(1), grid(2), grid(3)),
            set4(sign(0), sign(1), sign(2), sign(3)),
            _mm256_setzero_si256(),
        )
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn finish(t: __m256i, sc: &__m256i, _: X, _: usize) -> __m256i {
        _mm256_mullo_epi32(t, *sc)
    }
}

/// `block_iq3_xxs { f16 d; u8 qs[96]; }`: group g has 8 grid indices (4 magnitudes each)
/// at 2 + 8g and a u32 at 66 + 4g with four 7-bit sign indices and the scale on top.
struct Iq3Xxs;
impl Iq for Iq3Xxs {
    const AMX: bool = true;
    #[inline(always)]
    unsafe fn factors(sc: &__m256i) -> __m256i {
        *sc
    }
    const GATHER: bool = true;
    const WIDE: bool = true;
    const BB: usize = iq3_xxs::BYTES;
    const SIGN_WORD: bool = true;
    #[inline(always)]
    unsafe fn sign_word(_: *const u8, g: usize, idx: *const u16) -> u32 {
        // SAFETY: the caller's contract.
        unsafe { stored_sign_word(idx, g) }
    }
    const SIGN_BUF: bool = true;
    const SIGN_VEC: bool = true;
    #[inline(always)]
    unsafe fn sign_words(blk: *const u8, idx: *mut u16) {
        // SAFETY: the 8 aux words at 66..98; the caller's buffer.
        unsafe {
            let aux = _mm256_loadu_si256(blk.add(iq3_xxs::SCALES_AND_SIGNS.at).cast());
            _mm256_storeu_si256(idx.cast(), ksigns_aux(aux));
        }
    }
    /// The eight groups' 2s + 1.
    type Ctx = __m256i;
    #[inline(always)]
    unsafe fn context(blk: *const u8) -> (f32, __m256i) {
        // SAFETY: 98 bytes at blk: the 8 aux words at 66..98.
        unsafe {
            let aux = _mm256_loadu_si256(blk.add(iq3_xxs::SCALES_AND_SIGNS.at).cast());
            (f16_to_f32(u16_at(blk)) * 0.25, odd_top4(aux))
        }
    }
    #[inline(always)]
    unsafe fn group<const G: bool>(
        blk: *const u8,
        g: usize,
        _: &__m256i,
        _idx: *const u16,
    ) -> Group {
        // SAFETY: 8 bytes at 2 + 8g and 4 at 66 + 4g, inside the 98.
        let (v, aux) = unsafe {
            (
                u64_at(blk.add(iq3_xxs::QS.at + 8 * g)),
                blk.add(iq3_xxs::SCALES_AND_SIGNS.at + 4 * g)
                    .cast::<u32>()
                    .read_unaligned(),
            )
        };
        let grid = |i: u32| &IQ3XXS_GRID[((v >> (8 * i)) & 255) as usize];
        let sign = |l: u32| &SIGNS64[bx(aux as u64, 7 * l, 7) & 127];
        // SAFETY: AVX2 (the caller's contract); byte indices < 256 entries.
        let (zero, a) = unsafe {
            let a = if G {
                gather8(
                    &IQ3XXS_GRID,
                    _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v as i64)),
                )
            } else {
                set8([0, 1, 2, 3, 4, 5, 6, 7].map(grid))
            };
            (_mm256_setzero_si256(), a)
        };
        Group::new(a, set4(sign(0), sign(1), sign(2), sign(3)), zero)
    }
    #[inline(always)]
    unsafe fn finish(t: __m256i, sc: &__m256i, _: X, _: usize) -> __m256i {
        // SAFETY: AVX2 (the caller's contract).
        unsafe { _mm256_mullo_epi32(t, *sc) }
    }
}

/// The 16 factors 2s + 1 of 16 4-bit scales (byte i of the 8 bytes at `p`: nibble 0 is
/// scale 2i, nibble 1 scale 2i + 1), as bytes, in both 128-bit lanes.
///
/// # Safety
/// AVX2; 8 readable bytes at `p`.
#[inline(always)]
unsafe fn nibble_factors(p: *const u8) -> __m256i {
    // SAFETY: the caller's contract.
    unsafe {
        let v = _mm_loadl_epi64(p.cast());
        let m = _mm_set1_epi8(0x0F);
        let s = _mm_unpacklo_epi8(_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m));
        let f = _mm_or_si128(_mm_add_epi8(s, s), _mm_set1_epi8(1));
        _mm256_broadcastsi128_si256(f)
    }
}

/// Group g's i16 factors from [`nibble_factors`]: factor 2g for values 0..16, 2g + 1 for
/// 16..32.
///
/// # Safety
/// AVX2.
#[inline(always)]
unsafe fn half_factors(f: __m256i, g: usize) -> __m256i {
    let (lo, hi) = (2 * g as i64, 2 * g as i64 + 1);
    // Bytes (2g, zero) repeated in the low lane, (2g + 1, zero) in the high lane.
    let ctrl = |i: i64| {
        i | (i << 16)
            | (i << 32)
            | (i << 48)
            | (0x8080_8080_8080_8080u64 as i64 & !0x00FF_00FF_00FF_00FFi64)
    };
    // SAFETY: AVX2 (the callers' target features).
    unsafe { _mm256_shuffle_epi8(f, _mm256_set_epi64x(ctrl(hi), ctrl(hi), ctrl(lo), ctrl(lo))) }
}

/// `block_iq2_xs { f16 d; u16 qs[32]; u8 scales[8]; }`: u16 per 8 values, a 9-bit grid
/// index and a 7-bit sign index; a 4-bit scale per 16 values.
struct Iq2Xs;
impl Iq for Iq2Xs {
    const AMX: bool = true;
    const GATHER: bool = true;
    const WIDE: bool = true;
    const BB: usize = iq2_xs::BYTES;
    const SIGN_WORD: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn sign_word(_: *const u8, g: usize, idx: *const u16) -> u32 {
        // SAFETY: the caller's contract.
        unsafe { stored_sign_word(idx, g) }
    }
    const SIGN_BUF: bool = true;
    const SIGN_VEC: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn sign_words(blk: *const u8, idx: *mut u16) {
        // SAFETY: qs at 2..66; the caller's buffer.
        unsafe {
            // The 7-bit sign index of run r (bits 9.. of its u16) to byte r.
            let s0 = _mm256_srli_epi16::<9>(_mm256_loadu_si256(blk.add(iq2_xs::QS.at).cast()));
            let s1 = _mm256_srli_epi16::<9>(_mm256_loadu_si256(blk.add(iq2_xs::QS.at + 32).cast()));
            let f = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(s0, s1));
            _mm256_storeu_si256(idx.cast(), ksigns_bytes(f));
        }
    }
    const HADD: bool = true;
    const PER16: bool = true;
    /// [`nibble_factors`] of the scales.
    type Ctx = __m256i;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn context(blk: *const u8) -> (f32, __m256i) {
        // SAFETY: scales at 66..74.
        unsafe {
            (
                f16_to_f32(u16_at(blk)) * 0.125,
                nibble_factors(blk.add(iq2_xs::SCALES.at)),
            )
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn group<const G: bool>(
        blk: *const u8,
        g: usize,
        f: &__m256i,
        _idx: *const u16,
    ) -> Group {
        // SAFETY: 8 bytes at 2 + 8g < 66.
        let v = unsafe { u64_at(blk.add(iq2_xs::QS.at + 8 * g)) };
        let grid = |l: u32| &IQ2XS_GRID[((v >> (16 * l)) & 511) as usize];
        let sign = |l: u32| &SIGNS64[((v >> (16 * l + 9)) & 127) as usize];
        let a = if G {
            set4_blend(grid(0), grid(1), grid(2), grid(3))
        } else {
            set4(grid(0), grid(1), grid(2), grid(3))
        };
        Group::new(
            a,
            set4(sign(0), sign(1), sign(2), sign(3)),
            // SAFETY: AVX2.
            unsafe { half_factors(*f, g) },
        )
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn factors16(f: &__m256i) -> __m256i {
        *f
    }
}

/// Bit e of `bits` → byte e = −1 if set, else +1 (e = 0..32), for `vpsignb`.
#[inline(always)]
unsafe fn sign_bits(bits: u32) -> __m256i {
    // SAFETY: AVX2 (the callers' target features).
    unsafe {
        let v = _mm256_set1_epi32(bits as i32);
        // Byte e takes source byte e/8, then tests bit e%8.
        let spread = _mm256_shuffle_epi8(
            v,
            _mm256_set_epi64x(
                0x0303030303030303,
                0x0202020202020202,
                0x0101010101010101,
                0x0000000000000000,
            ),
        );
        let sel = _mm256_set1_epi64x(0x8040201008040201u64 as i64);
        let set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
        _mm256_or_si256(set, _mm256_set1_epi8(1))
    }
}

/// `block_iq2_s { f16 d; u8 qs[64]; u8 qh[8]; u8 scales[8]; }`: run r = 4g + l has grid
/// index qs[r] | 2 bits of qh[g] << 8 and explicit sign byte qs[32 + r].
struct Iq2S;
impl Iq for Iq2S {
    const AMX: bool = true;
    const GATHER: bool = true;
    const WIDE: bool = true;
    const BB: usize = iq2_s::BYTES;
    const PER16: bool = true;
    /// [`nibble_factors`] of the scales, and the same factors as i32 per group (low
    /// halves, high halves: [`Iq::factors_lohi`]); each tier computes the ones it uses.
    type Ctx = (__m256i, __m256i, __m256i);
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn context(blk: *const u8) -> (f32, (__m256i, __m256i, __m256i)) {
        // SAFETY: scales at 74..82.
        unsafe {
            let p = blk.add(iq2_s::SCALES.at);
            // Byte g: the low half's scale in its low nibble, the high half's on top.
            let s = _mm256_cvtepu8_epi32(_mm_loadl_epi64(p.cast()));
            let odd = |v: __m256i| _mm256_or_si256(_mm256_add_epi32(v, v), _mm256_set1_epi32(1));
            let fl = odd(_mm256_and_si256(s, _mm256_set1_epi32(0x0F)));
            let fh = odd(_mm256_srli_epi32::<4>(s));
            (f16_to_f32(u16_at(blk)) * 0.125, (nibble_factors(p), fl, fh))
        }
    }
    const SIGN_WORD: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn sign_word(blk: *const u8, g: usize, _: *const u16) -> u32 {
        // SAFETY: signs at 34 + 4g, inside the 82 bytes.
        unsafe {
            blk.add(iq2_s::SIGNS.at + 4 * g)
                .cast::<u32>()
                .read_unaligned()
        }
    }
    const IDX: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn indices(blk: *const u8, idx: *mut u16) {
        // SAFETY: qs at 2..34, qh at 66..74; the caller's buffer.
        unsafe {
            let qh = _mm256_set1_epi64x(u64_at(blk.add(iq2_s::QH.at)) as i64);
            const CTL: [[u8; 32]; 2] =
                [spread(div_seq(0, 4), false), spread(div_seq(16, 4), false)];
            // Run r = 4g + l: ((qh[g] >> 2l) & 3) << 8 = qh[g]·2^(8 − 2l), masked.
            let mul = _mm256_setr_epi16(
                256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4,
            );
            for (k, c) in CTL.iter().enumerate() {
                let w = _mm256_shuffle_epi8(qh, ctl(c));
                let hi = _mm256_and_si256(_mm256_mullo_epi16(w, mul), _mm256_set1_epi16(0x0300));
                put_idx16(idx, k, blk.add(iq2_s::QS.at + 16 * k), hi);
            }
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn group<const G: bool>(
        blk: *const u8,
        g: usize,
        f: &(__m256i, __m256i, __m256i),
        idx: *const u16,
    ) -> Group {
        // SAFETY: signs at 34 + 4g inside the 82 bytes; runs 4g .. 4g + 4 of `idx`,
        // 10-bit indices (`indices`) < 1024 entries.
        unsafe {
            let signs = blk
                .add(iq2_s::SIGNS.at + 4 * g)
                .cast::<u32>()
                .read_unaligned();
            let q = idx4(idx, g);
            let grid = |l: u32| &*IQ2S_GRID.as_ptr().add(bx(q, 16 * l, 16));
            let a = if G {
                gather4(&IQ2S_GRID, idx, g)
            } else {
                set4(grid(0), grid(1), grid(2), grid(3))
            };
            Group::new(a, sign_bits(signs), half_factors(f.0, g))
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn factors16(f: &(__m256i, __m256i, __m256i)) -> __m256i {
        f.0
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn factors_lohi(f: &(__m256i, __m256i, __m256i)) -> (__m256i, __m256i) {
        (f.1, f.2)
    }
}

/// `block_iq3_s { f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]; }`: value pair
/// k of group g (4 magnitudes) has grid index qs[8g + k] | bit k of qh[g] << 8; explicit
/// sign bytes; a 4-bit scale per group.
struct Iq3S;
impl Iq for Iq3S {
    const AMX: bool = true;
    #[inline(always)]
    unsafe fn factors(sc: &__m256i) -> __m256i {
        *sc
    }
    const GATHER: bool = true;
    const BB: usize = iq3_s::BYTES;
    /// The eight groups' 2s + 1.
    type Ctx = __m256i;
    #[inline(always)]
    unsafe fn context(blk: *const u8) -> (f32, __m256i) {
        // SAFETY: scales at 106..110.
        unsafe {
            let v = _mm_cvtsi32_si128(blk.add(iq3_s::SCALES.at).cast::<i32>().read_unaligned());
            let m = _mm_set1_epi8(0x0F);
            let s = _mm_unpacklo_epi8(_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m));
            let s = _mm256_cvtepu8_epi32(s);
            let f = _mm256_or_si256(_mm256_add_epi32(s, s), _mm256_set1_epi32(1));
            (f16_to_f32(u16_at(blk)), f)
        }
    }
    const SIGN_WORD: bool = true;
    #[inline(always)]
    unsafe fn sign_word(blk: *const u8, g: usize, _: *const u16) -> u32 {
        // SAFETY: signs at 74 + 4g, inside the 110 bytes.
        unsafe {
            blk.add(iq3_s::SIGNS.at + 4 * g)
                .cast::<u32>()
                .read_unaligned()
        }
    }
    const IDX: bool = true;
    #[inline(always)]
    unsafe fn indices(blk: *const u8, idx: *mut u16) {
        // SAFETY: qs at 2..66, qh at 66..74; the caller's buffer.
        unsafe {
            let qh = _mm256_set1_epi64x(u64_at(blk.add(iq3_s::QH.at)) as i64);
            const CTL: [[u8; 32]; 4] = [
                spread(div_seq(0, 8), false),
                spread(div_seq(16, 8), false),
                spread(div_seq(32, 8), false),
                spread(div_seq(48, 8), false),
            ];
            // Lookup 8g + k: ((qh[g] >> k) & 1) << 8 = qh[g]·2^(8 − k), masked.
            let mul =
                _mm256_setr_epi16(256, 128, 64, 32, 16, 8, 4, 2, 256, 128, 64, 32, 16, 8, 4, 2);
            for (k, c) in CTL.iter().enumerate() {
                let w = _mm256_shuffle_epi8(qh, ctl(c));
                let hi = _mm256_and_si256(_mm256_mullo_epi16(w, mul), _mm256_set1_epi16(0x0100));
                put_idx16(idx, k, blk.add(iq3_s::QS.at + 16 * k), hi);
            }
        }
    }
    #[inline(always)]
    unsafe fn group<const G: bool>(
        blk: *const u8,
        g: usize,
        _: &__m256i,
        idx: *const u16,
    ) -> Group {
        // SAFETY: signs at 74 + 4g inside the 110 bytes; lookups 8g .. 8g + 8 of `idx`,
        // 9-bit indices (`indices`) < 512 entries.
        unsafe {
            let grid = |k: usize| &*IQ3S_GRID.as_ptr().add(*idx.add(8 * g + k) as usize);
            let signs = blk
                .add(iq3_s::SIGNS.at + 4 * g)
                .cast::<u32>()
                .read_unaligned();
            let a = if G {
                gather8(
                    &IQ3S_GRID,
                    _mm256_cvtepu16_epi32(_mm_loadu_si128(idx.add(8 * g).cast())),
                )
            } else {
                set8([0, 1, 2, 3, 4, 5, 6, 7].map(grid))
            };
            Group::new(a, sign_bits(signs), _mm256_setzero_si256())
        }
    }
    #[inline(always)]
    unsafe fn finish(t: __m256i, sc: &__m256i, _: X, _: usize) -> __m256i {
        // SAFETY: AVX2 (the caller's contract).
        unsafe { _mm256_mullo_epi32(t, *sc) }
    }
}

/// `block_iq1_s { f16 d; u8 qs[32]; u16 qh[8]; }`: run l of group g has grid index
/// qs[4g + l] | 3 bits of qh[g] << 8 (grid values −1, 0, 1); qh[g] also holds the 3-bit
/// scale (bit 12) and the delta's sign (bit 15). Here `T_g = (2s+1)·(8·Σ grid·x ± Σx)`:
/// the groups compute 8·Σ (grid + 1)·x ([`IQ1S_GRID1`] by `vpmaddubsw`), and
/// [`Iq::finish`] adds (±1 − 8)·Σx through the exact block sum Σx and applies 2s + 1.
struct Iq1S;
impl Iq for Iq1S {
    const GATHER: bool = true;
    const WIDE: bool = true;
    const BB: usize = iq1_s::BYTES;
    const SIGNED: bool = false;
    const M: i32 = 8;
    /// (2s + 1, −1 where the delta is negative else 0) per group.
    type Ctx = (__m256i, __m256i);
    #[inline(always)]
    unsafe fn context(blk: *const u8) -> (f32, (__m256i, __m256i)) {
        // SAFETY: qh at 34..50.
        unsafe {
            let qh = _mm256_cvtepu16_epi32(_mm_loadu_si128(blk.add(iq1_s::QH.at).cast()));
            let s = _mm256_and_si256(_mm256_srli_epi32(qh, 12), _mm256_set1_epi32(7));
            let f = _mm256_or_si256(_mm256_add_epi32(s, s), _mm256_set1_epi32(1));
            let neg = _mm256_srai_epi32(_mm256_slli_epi32(qh, 16), 31);
            (f16_to_f32(u16_at(blk)) * 0.125, (f, neg))
        }
    }
    const IDX: bool = true;
    #[inline(always)]
    unsafe fn indices(blk: *const u8, idx: *mut u16) {
        // SAFETY: qs at 2..34, qh at 34..50; the caller's buffer.
        unsafe {
            let qh = _mm256_broadcastsi128_si256(_mm_loadu_si128(blk.add(iq1_s::QH.at).cast()));
            const CTL: [[u8; 32]; 2] = [spread_words(div_seq(0, 4)), spread_words(div_seq(16, 4))];
            // Run r = 4g + l: ((qh[g] >> 3l) & 7) << 8, as qh[g]·2^(8 − 3l) (l < 3) or
            // qh[g] >> 1 (l = 3), masked.
            let mul = _mm256_setr_epi16(256, 32, 4, 0, 256, 32, 4, 0, 256, 32, 4, 0, 256, 32, 4, 0);
            for (k, c) in CTL.iter().enumerate() {
                let w = _mm256_shuffle_epi8(qh, ctl(c));
                let v = _mm256_blend_epi16::<0x88>(
                    _mm256_mullo_epi16(w, mul),
                    _mm256_srli_epi16::<1>(w),
                );
                let hi = _mm256_and_si256(v, _mm256_set1_epi16(0x0700));
                put_idx16(idx, k, blk.add(iq1_s::QS.at + 16 * k), hi);
            }
        }
    }
    #[inline(always)]
    unsafe fn group<const G: bool>(
        _: *const u8,
        g: usize,
        _: &(__m256i, __m256i),
        idx: *const u16,
    ) -> Group {
        // SAFETY: runs 4g .. 4g + 4 of `idx`, 11-bit indices (`indices`) < 2048 entries.
        unsafe {
            let q = idx4(idx, g);
            let grid = |l: u32| &*IQ1S_GRID1.as_ptr().add(bx(q, 16 * l, 16));
            let a = if G {
                gather4(&IQ1S_GRID1, idx, g)
            } else {
                set4(grid(0), grid(1), grid(2), grid(3))
            };
            Group::new(a, _mm256_setzero_si256(), _mm256_setzero_si256())
        }
    }
    #[inline(always)]
    unsafe fn finish(t: __m256i, c: &(__m256i, __m256i), x: X, b: usize) -> __m256i {
        // SAFETY: AVX2 (the caller's contract); 8 sums of blocks b .. b + 8.
        unsafe {
            let sums = _mm256_loadu_si256(x.sum.add(b).cast());
            // ±Σx − 8·Σx: (sums ^ neg) − neg − 8·sums.
            let delta = _mm256_sub_epi32(
                _mm256_sub_epi32(_mm256_xor_si256(sums, c.1), c.1),
                _mm256_slli_epi32(sums, 3),
            );
            _mm256_mullo_epi32(_mm256_add_epi32(t, delta), c.0)
        }
    }
}

/// `block_iq4_xs { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]; }`, for its q8_K
/// products only (against q8_1 it runs the legacy kernels, one factor per block): group g's
/// 16 code bytes hold values 0..16 in their low nibbles and 16..32 in their high ones, each
/// the index of a `kvalues_iq4nl` value v (non-zero, −127 ≤ v ≤ 113); the group's factor
/// is its 6-bit scale ls − 32 ([`iq4_xs::scale`]). Two unpackings, one `vpshufb` of a
/// 16-entry table each, the same `T_g` of the `gguf_q8k` order (|T_g| ≤ 32·32·127·127 <
/// 2³¹ with |x| ≤ 127):
/// - `Iq4Xs<false>` (the AVX2 tier): |v| against x carrying v's sign, `vpmaddubsw` pairs ≤
///   2·127·127 < 2¹⁵; [`Iq::finish`] multiplies `Σ v·x` by the factor;
/// - `Iq4Xs<true>` (the VNNI tiers): the unsigned v + 128 (1..241) against x as it is
///   (`vpdpbusd`, no sign step, no pair saturation), and [`Iq::finish`] takes away
///   128·Σx through the activation row's exact 32-code sums before the factor.
struct Iq4Xs<const OFFSET: bool>;

/// `kvalues_iq4nl` + 128 as u8, the table of `Iq4Xs<true>`.
static KVALUES_IQ4NL_U8: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        t[i] = (KVALUES_IQ4NL[i] as i16 + 128) as u8;
        i += 1;
    }
    t
};

impl<const OFFSET: bool> Iq for Iq4Xs<OFFSET> {
    const BB: usize = iq4_xs::BYTES;
    const SIGNED: bool = !OFFSET;
    /// The eight groups' ls − 32.
    type Ctx = __m256i;
    #[inline(always)]
    unsafe fn context(blk: *const u8) -> (f32, __m256i) {
        // SAFETY: scales_h at 2..4, scales_l at 4..8.
        unsafe {
            let h = i32::from(u16_at(blk.add(iq4_xs::SCALES_H.at)));
            let l = blk.add(iq4_xs::SCALES_L.at).cast::<i32>().read_unaligned();
            // Lane g: nibble g of the scales_l word, bits 2g..2g + 2 of scales_h above it.
            let lo = _mm256_and_si256(
                _mm256_srlv_epi32(
                    _mm256_set1_epi32(l),
                    _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28),
                ),
                _mm256_set1_epi32(0x0F),
            );
            let hi = _mm256_and_si256(
                _mm256_srlv_epi32(
                    _mm256_set1_epi32(h),
                    _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14),
                ),
                _mm256_set1_epi32(3),
            );
            let ls = _mm256_or_si256(lo, _mm256_slli_epi32::<4>(hi));
            (
                f16_to_f32(u16_at(blk.add(iq4_xs::D.at))),
                _mm256_sub_epi32(ls, _mm256_set1_epi32(32)),
            )
        }
    }
    #[inline(always)]
    unsafe fn group<const G: bool>(blk: *const u8, g: usize, _: &__m256i, _: *const u16) -> Group {
        // SAFETY: qs at 8 + 16g .. 24 + 16g, inside the 136 bytes; each table is 16 bytes.
        unsafe {
            let q = _mm_loadu_si128(blk.add(iq4_xs::QS.at + 16 * g).cast());
            let m = _mm_set1_epi8(0x0F);
            let idx = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
            let table = if OFFSET {
                KVALUES_IQ4NL_U8.as_ptr()
            } else {
                KVALUES_IQ4NL.as_ptr().cast::<u8>()
            };
            let v = _mm256_shuffle_epi8(
                _mm256_broadcastsi128_si256(_mm_loadu_si128(table.cast())),
                idx,
            );
            if OFFSET {
                Group::new(v, _mm256_setzero_si256(), _mm256_setzero_si256())
            } else {
                Group::new(_mm256_abs_epi8(v), v, _mm256_setzero_si256())
            }
        }
    }
    #[inline(always)]
    unsafe fn finish(t: __m256i, sc: &__m256i, x: X, b: usize) -> __m256i {
        // SAFETY: AVX2 (the caller's contract); with OFFSET, the 8 sums of blocks b .. b + 8.
        unsafe {
            let t = if OFFSET {
                let sums = _mm256_loadu_si256(x.sum.add(b).cast());
                _mm256_sub_epi32(t, _mm256_slli_epi32::<7>(sums))
            } else {
                t
            };
            _mm256_mullo_epi32(t, *sc)
        }
    }
}

/// `block_iq1_m { u8 qs[32]; u8 qh[16]; u8 scales[8]; }` (binary16 d in the top nibbles of
/// the four scales words): run r = 4g + l (8 values) has grid index qs[r] | (nibble r%2 of
/// qh[r/2] & 7) << 8 and delta δ_r = −1 if bit 3 of that nibble is set, else +1; 3-bit
/// scale h (the 16-value half h = r/2) at bits 3(h%4) of scales word h/4, factor
/// f_h = 2s + 1. Each value's code 8·grid + δ is written 8·(grid + 1) + c_r with
/// c_r = δ_r − 8, so `T_g = Σ_h f_h·(8·Σ (grid + 1)·x + Σ_{r in h} c_r·S8_r)`: the groups
/// compute the first term ([`IQ1S_GRID1`] by `vpmaddubsw`, 8·f_h by `vpmaddwd`), and
/// [`Iq::finish`] adds the second through the activation row's exact 8-value sums S8
/// (the same integers as `Σ f_h·(8·grid + δ)·x`).
struct Iq1M;
impl Iq for Iq1M {
    const GATHER: bool = true;
    const WIDE: bool = true;
    const BB: usize = iq1_m::BYTES;
    const SIGNED: bool = false;
    const PER16: bool = true;
    /// The 16 factors 8·f_h as bytes in both lanes (as [`nibble_factors`]), and the 32
    /// i16 run weights f_{r/2}·c_r (runs 0..16, 16..32).
    type Ctx = (__m256i, __m256i, __m256i);
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1")]
    unsafe fn context(blk: *const u8) -> (f32, (__m256i, __m256i, __m256i)) {
        // SAFETY: qh at 32..48, scales at 48..56.
        unsafe {
            let words = u64_at(blk.add(iq1_m::SCALES.at));
            let d = ((words >> 12) & 0xF)
                | ((words >> 24) & 0xF0)
                | ((words >> 36) & 0xF00)
                | ((words >> 48) & 0xF000);
            // i16 lane i = word i/4, then the field at 3(i%4) moved to the top 3 bits by
            // a multiplication (a left shift) and brought down.
            let v = _mm256_set1_epi64x(words as i64);
            let spread = _mm256_shuffle_epi8(
                v,
                _mm256_setr_epi8(
                    0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7,
                    6, 7, 6, 7, 6, 7,
                ),
            );
            let shl = _mm256_setr_epi16(
                8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16,
            );
            let s = _mm256_srli_epi16(_mm256_mullo_epi16(spread, shl), 13);
            // f_h = 2s + 1 ≤ 15 per i16 lane h.
            let f = _mm256_or_si256(_mm256_add_epi16(s, s), _mm256_set1_epi16(1));
            // As bytes (16 factors f_h in both lanes).
            let fb = _mm256_broadcastsi128_si256(_mm_packus_epi16(
                _mm256_castsi256_si128(f),
                _mm256_extracti128_si256(f, 1),
            ));
            // 8·f_h ≤ 120 still fits a byte.
            let f8 = _mm256_slli_epi16(fb, 3);
            // Run r's byte r/2 (of qh, of the factors) into i16 lane r (high byte zero).
            let dup = |base: i8| {
                let z = -128i8;
                let b = |j: i8| base + j;
                _mm256_setr_epi8(
                    b(0),
                    z,
                    b(0),
                    z,
                    b(1),
                    z,
                    b(1),
                    z,
                    b(2),
                    z,
                    b(2),
                    z,
                    b(3),
                    z,
                    b(3),
                    z,
                    b(4),
                    z,
                    b(4),
                    z,
                    b(5),
                    z,
                    b(5),
                    z,
                    b(6),
                    z,
                    b(6),
                    z,
                    b(7),
                    z,
                    b(7),
                    z,
                )
            };
            let qh = _mm256_broadcastsi128_si256(_mm_loadu_si128(blk.add(iq1_m::QH.at).cast()));
            // Even runs test bit 3, odd runs bit 7 of their qh byte.
            let sel = _mm256_set1_epi32(0x0080_0008);
            let weights = |base: i8| {
                let q = _mm256_shuffle_epi8(qh, dup(base));
                let set = _mm256_cmpeq_epi16(_mm256_and_si256(q, sel), sel);
                // c_r = −7 − 2·[set] ∈ {−7, −9}.
                let c = _mm256_add_epi16(_mm256_set1_epi16(-7), _mm256_add_epi16(set, set));
                _mm256_mullo_epi16(c, _mm256_shuffle_epi8(fb, dup(base)))
            };
            let ctx = (f8, weights(0), weights(8));
            (f16_to_f32(d as u16) * 0.125, ctx)
        }
    }
    const IDX: bool = true;
    #[inline(always)]
    unsafe fn indices(blk: *const u8, idx: *mut u16) {
        // SAFETY: qs at 0..32, qh at 32..48; the caller's buffer.
        unsafe {
            let qh = _mm256_broadcastsi128_si256(_mm_loadu_si128(blk.add(iq1_m::QH.at).cast()));
            // Run r's grid index: qs[r] | (nibble r%2 of qh[r/2] & 7) << 8.
            const CTL: [[u8; 32]; 2] = [spread(div_seq(0, 2), true), spread(div_seq(16, 2), true)];
            for (k, c) in CTL.iter().enumerate() {
                // Lane j: qh[r/2] << 8 (r = 16k + j), odd runs its high nibble.
                let v = _mm256_shuffle_epi8(qh, ctl(c));
                let nib = _mm256_blend_epi16::<0xAA>(v, _mm256_srli_epi16::<4>(v));
                let hi = _mm256_and_si256(nib, _mm256_set1_epi16(0x0700));
                put_idx16(idx, k, blk.add(iq1_m::QS.at + 16 * k), hi);
            }
        }
    }
    #[inline(always)]
    unsafe fn group<const G: bool>(
        _: *const u8,
        g: usize,
        c: &(__m256i, __m256i, __m256i),
        idx: *const u16,
    ) -> Group {
        // SAFETY: AVX2 (`set4`, `half_factors`).
        unsafe {
            // SAFETY: an 11-bit index (`indices`) < 2048 entries.
            let q = idx4(idx, g);
            let grid = |l: u32| &*IQ1S_GRID1.as_ptr().add(bx(q, 16 * l, 16));
            let a = if G {
                gather4(&IQ1S_GRID1, idx, g)
            } else {
                set4(grid(0), grid(1), grid(2), grid(3))
            };
            Group::new(a, _mm256_setzero_si256(), half_factors(c.0, g))
        }
    }
    #[inline(always)]
    unsafe fn factors16(c: &(__m256i, __m256i, __m256i)) -> __m256i {
        c.0
    }
    #[inline(always)]
    unsafe fn finish(t: __m256i, c: &(__m256i, __m256i, __m256i), x: X, b: usize) -> __m256i {
        // SAFETY: the 32 8-value sums of blocks b .. b + 8.
        unsafe {
            let s_lo = _mm256_loadu_si256(x.sum8.add(4 * b).cast());
            let s_hi = _mm256_loadu_si256(x.sum8.add(4 * b + 16).cast());
            // Lane h of each: Σ over runs 2h, 2h + 1 of S8·f·c (|S8| ≤ 1016, |f·c| ≤ 135).
            let p = _mm256_hadd_epi32(_mm256_madd_epi16(s_lo, c.1), _mm256_madd_epi16(s_hi, c.2));
            // hadd leaves groups in the order 0 1 4 5 2 3 6 7.
            _mm256_add_epi32(t, _mm256_permute4x64_epi64(p, 0xD8))
        }
    }
}

/// One activation row's planes as raw pointers: its codes, scales (q8_1: one per 32
/// values; q8_K: one per super-block), 32-code sums and 8-code sums.
#[derive(Clone, Copy)]
struct X {
    qs: *const i8,
    d: *const f32,
    sum: *const i32,
    sum8: *const i16,
}

impl X {
    /// The planes of q8_1 row `x` of `nb` blocks, checked to hold whole super-blocks: every
    /// pointer read of the kernels stays in bounds.
    fn of(x: &Row<'_>, nb: usize) -> X {
        assert!(
            nb.is_multiple_of(8)
                && x.qs.len() >= 32 * nb
                && x.d.len() >= nb
                && x.sum.len() >= nb
                && x.sum8.len() >= 4 * nb
        );
        X {
            qs: x.qs.as_ptr(),
            d: x.d.as_ptr(),
            sum: x.sum.as_ptr(),
            sum8: x.sum8.as_ptr(),
        }
    }

    /// The planes of q8_K row `x` of `nsb` super-blocks, checked as [`X::of`].
    fn of_q8k(x: &q8_k::Row<'_>, nsb: usize) -> X {
        assert!(
            x.qs.len() >= 256 * nsb
                && x.d.len() >= nsb
                && x.sum32.len() >= 8 * nsb
                && x.sum8.len() >= 32 * nsb
        );
        X {
            qs: x.qs.as_ptr(),
            d: x.d.as_ptr(),
            sum: x.sum32.as_ptr(),
            sum8: x.sum8.as_ptr(),
        }
    }
}

/// The exact sum of the eight i32 lanes of `v` (|Σ| < 2³¹ where used).
///
/// # Safety
/// AVX2 available.
#[inline(always)]
pub(super) unsafe fn hsum_i32(v: __m256i) -> i32 {
    // SAFETY: the caller's contract.
    unsafe {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        _mm_cvtsi128_si32(s)
    }
}

/// The eight groups' i32 partials `v[g]` summed per 128-bit half, by unpacks and adds
/// (fewer micro-ops than [`parts_hadd`] on Zen 3: measured faster for all types but
/// IQ2_XS, see [`Iq::HADD`]): `q0` = [Σ low half of v0..v3 | Σ high half of v0..v3], `q1`
/// likewise for v4..v7 (exact integers).
#[inline(always)]
unsafe fn parts_unpack(v: [__m256i; 8]) -> (__m256i, __m256i) {
    // SAFETY: AVX2 (the callers' target features).
    unsafe {
        // Per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3].
        let pair =
            |a, b| _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
        // Per 128-bit lane: [Σa, Σb, Σc, Σd] of that lane's four values.
        let quad =
            |ab, cd| _mm256_add_epi32(_mm256_unpacklo_epi64(ab, cd), _mm256_unpackhi_epi64(ab, cd));
        (
            quad(pair(v[0], v[1]), pair(v[2], v[3])),
            quad(pair(v[4], v[5]), pair(v[6], v[7])),
        )
    }
}

/// As [`parts_unpack`], by a `vphaddd` tree.
#[inline(always)]
unsafe fn parts_hadd(v: [__m256i; 8]) -> (__m256i, __m256i) {
    // SAFETY: AVX2 (the callers' target features).
    unsafe {
        let h01 = _mm256_hadd_epi32(v[0], v[1]);
        let h23 = _mm256_hadd_epi32(v[2], v[3]);
        let h45 = _mm256_hadd_epi32(v[4], v[5]);
        let h67 = _mm256_hadd_epi32(v[6], v[7]);
        (_mm256_hadd_epi32(h01, h23), _mm256_hadd_epi32(h45, h67))
    }
}

/// The per-half sums of [`parts_unpack`] in group order: lane g of the first result is the
/// low half of group g, of the second its high half.
#[inline(always)]
unsafe fn halves<U: Iq>(v: [__m256i; 8]) -> (__m256i, __m256i) {
    // SAFETY: AVX2 (the callers' target features).
    unsafe {
        let (q0, q1) = if U::HADD {
            parts_hadd(v)
        } else {
            parts_unpack(v)
        };
        (
            _mm256_permute2x128_si256(q0, q1, 0x20),
            _mm256_permute2x128_si256(q0, q1, 0x31),
        )
    }
}

/// `acc ← fma((d·c)·dx[8sb..8sb+8], T, acc)`.
///
/// # Safety
/// AVX2/FMA; 8 scales of super-block sb in the row.
#[inline(always)]
unsafe fn accumulate(acc: __m256, dc: f32, x: X, sb: usize, t: __m256i) -> __m256 {
    // SAFETY: the caller's contract.
    unsafe {
        let ds = _mm256_mul_ps(_mm256_set1_ps(dc), _mm256_loadu_ps(x.d.add(8 * sb)));
        _mm256_fmadd_ps(ds, _mm256_cvtepi32_ps(t), acc)
    }
}

#[inline]
#[target_feature(enable = "avx2")]
fn finish8(acc: __m256) -> f32 {
    super::tree8_m256(acc)
}

/// The kernels of one tier, compiled for its features `$feat` (a string literal); the
/// calling module defines `VNNI` (whether `dot4` is `vpdpbusd`), `MASK` (whether
/// `neg_bits` applies the sign bits as an AVX-512 mask, else as a [`sign_bits`] vector),
/// `dot4(a, s)` (the exact i32 sums of each 4-byte group of u8 × i8 products) and
/// `neg_bits(x, bits)` (byte e negated where bit e is set).
macro_rules! kernels {
    ($feat:tt) => {
        /// `form`: the two-group 512-bit form at M = 1 where the tier and type have one
        /// ([`Iq::WIDE`]), the gathered grid entries where the type has them
        /// ([`Iq::GATHER`]); same bits in every form.
        ///
        /// # Safety
        /// The features `$feat` and BMI1 available; every row of `ws` holds whole
        /// super-blocks for the activation rows' length.
        #[target_feature(enable = $feat)]
        pub(in crate::linear::cpu) unsafe fn dot_row_group(
            kind: IqKind,
            ws: &[&[u8]],
            xs: &[Row<'_>],
            out: &mut [f32],
            form: Form,
        ) {
            // SAFETY (all calls): the caller's contract.
            unsafe {
                match kind {
                    IqKind::Iq2Xxs => rows::<Iq2Xxs>(ws, xs, out, form),
                    IqKind::Iq3Xxs => rows::<Iq3Xxs>(ws, xs, out, form),
                    IqKind::Iq2Xs => rows::<Iq2Xs>(ws, xs, out, form),
                    IqKind::Iq3S => rows::<Iq3S>(ws, xs, out, form),
                    IqKind::Iq2S => rows::<Iq2S>(ws, xs, out, form),
                    IqKind::Iq1S => rows::<Iq1S>(ws, xs, out, form),
                    IqKind::Iq1M => rows::<Iq1M>(ws, xs, out, form),
                }
            }
        }

        /// # Safety
        /// As [`dot_row_group`].
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn rows<U: Iq>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32], form: Form) {
            let m = xs.len();
            if m == 0 {
                return;
            }
            let nb = xs[0].d.len();
            let nsb = nb / 8;
            assert!(ws.iter().all(|w| w.len() >= nsb * U::BB));
            let gather = U::GATHER && form == Form::Gather;
            if m == 1 {
                // One row (the decoding step): no pointer records to allocate.
                let x = X::of(&xs[0], nb);
                for (w, o) in ws.iter().zip(out.iter_mut()) {
                    // SAFETY: nsb super-blocks in w and in the activation row (asserted).
                    *o = unsafe {
                        if WIDE && U::WIDE && form == Form::Wide {
                            row_wide::<U>(w.as_ptr(), nsb, x)
                        } else if gather {
                            row_fused::<U, true>(w.as_ptr(), nsb, x)
                        } else {
                            row_fused::<U, false>(w.as_ptr(), nsb, x)
                        }
                    };
                }
                return;
            }
            // Bounded, not sized by input: xs is a slice of the engine's fixed array of TILE_M
            // (64) activation rows (one tile), so this is at most 64 pointer records.
            let px: Vec<X> = xs.iter().map(|x| X::of(x, nb)).collect();
            let mut acc = vec![_mm256_setzero_ps(); m];
            for (w, o) in ws.iter().zip(out.chunks_exact_mut(m)) {
                // SAFETY: nsb super-blocks in w and in every activation row (asserted).
                unsafe {
                    if gather {
                        row_buffered::<U, true>(w.as_ptr(), nsb, &px, &mut acc, o)
                    } else {
                        row_buffered::<U, false>(w.as_ptr(), nsb, &px, &mut acc, o)
                    }
                };
            }
        }

        /// Weight rows against every q8_K activation row (`out` row of W major):
        /// the q8_K order of `gguf_q8k` with S_sb = Σ_g T_g, the same `T_g` as against q8_1
        /// (exact integers, so the same bits as that module's reference).
        ///
        /// # Safety
        /// The features `$feat` and BMI1 available; every row of `ws` holds whole
        /// super-blocks for the activation rows' length.
        #[target_feature(enable = $feat)]
        pub(in crate::linear::cpu) unsafe fn dot_row_group_q8k(
            kind: IqKind,
            ws: &[&[u8]],
            xs: &[q8_k::Row<'_>],
            out: &mut [f32],
            form: Form,
        ) {
            // SAFETY (all calls): the caller's contract.
            unsafe {
                match kind {
                    IqKind::Iq2Xxs => rows_q8k::<Iq2Xxs>(ws, xs, out, form),
                    IqKind::Iq3Xxs => rows_q8k::<Iq3Xxs>(ws, xs, out, form),
                    IqKind::Iq2Xs => rows_q8k::<Iq2Xs>(ws, xs, out, form),
                    IqKind::Iq3S => rows_q8k::<Iq3S>(ws, xs, out, form),
                    IqKind::Iq2S => rows_q8k::<Iq2S>(ws, xs, out, form),
                    IqKind::Iq1S => rows_q8k::<Iq1S>(ws, xs, out, form),
                    IqKind::Iq1M => rows_q8k::<Iq1M>(ws, xs, out, form),
                }
            }
        }

        /// IQ4_XS against q8_K rows, as [`dot_row_group_q8k`] ([`Iq4Xs`], its offset form
        /// on the VNNI tiers).
        ///
        /// # Safety
        /// As [`dot_row_group_q8k`].
        #[target_feature(enable = $feat)]
        pub(in crate::linear::cpu) unsafe fn dot_row_group_q8k_iq4_xs(
            ws: &[&[u8]],
            xs: &[q8_k::Row<'_>],
            out: &mut [f32],
        ) {
            // SAFETY: the caller's contract.
            unsafe {
                if VNNI {
                    rows_q8k::<Iq4Xs<true>>(ws, xs, out, Form::Blend)
                } else {
                    rows_q8k::<Iq4Xs<false>>(ws, xs, out, Form::Blend)
                }
            }
        }

        /// # Safety
        /// As [`dot_row_group_q8k`].
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn rows_q8k<U: Iq>(ws: &[&[u8]], xs: &[q8_k::Row<'_>], out: &mut [f32], form: Form) {
            let m = xs.len();
            if m == 0 {
                return;
            }
            let nsb = xs[0].d.len();
            assert!(ws.iter().all(|w| w.len() >= nsb * U::BB));
            let gather = U::GATHER && form == Form::Gather;
            if m == 1 {
                let x = X::of_q8k(&xs[0], nsb);
                for (w, o) in ws.iter().zip(out.iter_mut()) {
                    // SAFETY: nsb super-blocks in w and in the activation row (asserted).
                    *o = unsafe {
                        if gather {
                            row_fused_q8k::<U, true>(w.as_ptr(), nsb, x)
                        } else {
                            row_fused_q8k::<U, false>(w.as_ptr(), nsb, x)
                        }
                    };
                }
                return;
            }
            // Bounded, not sized by input: at most one tile's (64) pointer records.
            let px: Vec<X> = xs.iter().map(|x| X::of_q8k(x, nsb)).collect();
            for (w, o) in ws.iter().zip(out.chunks_exact_mut(m)) {
                // SAFETY: nsb super-blocks in w and in every activation row (asserted).
                unsafe {
                    if gather {
                        row_buffered_q8k::<U, true>(w.as_ptr(), nsb, &px, o)
                    } else {
                        row_buffered_q8k::<U, false>(w.as_ptr(), nsb, &px, o)
                    }
                };
            }
        }

        /// Group `g` of the super-block at `blk`, its signs ready for [`group_dot`]; with
        /// `vec`, a [`Iq::SIGN_BUF`] type's sign vector comes from its stored sign word.
        ///
        /// # Safety
        /// As [`Iq::group`].
        #[inline(always)]
        unsafe fn unpack<U: Iq, const G: bool>(
            blk: *const u8,
            g: usize,
            ctx: &U::Ctx,
            idx: *const u16,
            vec: bool,
        ) -> Group {
            // SAFETY: the caller's contract.
            unsafe {
                let mut grp = U::group::<G>(blk, g, ctx, idx);
                if U::SIGN_WORD && MASK {
                    grp.bits = U::sign_word(blk, g, idx);
                } else if U::SIGN_BUF && vec {
                    grp.s = sign_bits(U::sign_word(blk, g, idx));
                }
                grp
            }
        }

        /// The grid indices of the super-block at `blk` in `buf` ([`Iq::indices`]), or its
        /// sign words ([`Iq::sign_words`], where the tier masks or `vec` asks for them), and
        /// the pointer [`Iq::group`] and [`Iq::sign_word`] read them through.
        ///
        /// # Safety
        /// As [`Iq::context`].
        #[inline(always)]
        unsafe fn indices<U: Iq>(blk: *const u8, buf: &mut IdxBuf, vec: bool) -> *const u16 {
            const { assert!(!(U::IDX && U::SIGN_BUF)) };
            let signs = U::SIGN_BUF && (MASK || vec);
            if !U::IDX && !signs {
                return buf.0.as_ptr();
            }
            // SAFETY: the caller's contract; `buf` holds IDX_MAX indices.
            unsafe {
                if U::IDX {
                    U::indices(blk, buf.0.as_mut_ptr());
                } else {
                    U::sign_words(blk, buf.0.as_mut_ptr());
                }
            }
            // Opaque to the optimizer: the vector stores stay stores and each run's index
            // one scalar load (else the compiler extracts the words from the vectors).
            std::hint::black_box(buf.0.as_ptr())
        }

        /// Block b of an activation row against an unpacked group: 8 i32 lanes, each the
        /// exact sum of four products (times the factors [`Group::m`] or [`Iq::M`] on the
        /// tiers without VNNI; [`reduce`] applies them on the others).
        ///
        /// # Safety
        /// The tier's features; block b lies in the row.
        #[inline(always)]
        unsafe fn group_dot<U: Iq>(x: X, b: usize, grp: Group) -> __m256i {
            // SAFETY: 32 codes of block b.
            unsafe {
                let xv = _mm256_loadu_si256(x.qs.add(32 * b).cast());
                let xv = if U::SIGN_WORD && MASK {
                    neg_bits(xv, grp.bits)
                } else if U::SIGNED {
                    _mm256_sign_epi8(xv, grp.s)
                } else {
                    xv
                };
                if VNNI {
                    dot4(grp.a, xv)
                } else {
                    let m = if U::PER16 {
                        grp.m
                    } else {
                        _mm256_set1_epi16(U::M as i16)
                    };
                    _mm256_madd_epi16(_mm256_maddubs_epi16(grp.a, xv), m)
                }
            }
        }

        /// Lane g = `T_g` from the eight groups' partials.
        ///
        /// # Safety
        /// The tier's features; blocks b .. b + 8 lie in `x`.
        #[inline(always)]
        unsafe fn reduce<U: Iq>(v: [__m256i; 8], ctx: &U::Ctx, x: X, b: usize) -> __m256i {
            // SAFETY: the caller's contract.
            unsafe {
                let (lo, hi) = halves::<U>(v);
                reduce_halves::<U>(lo, hi, ctx, x, b)
            }
        }

        /// Lane g = `T_g` from the per-half sums of [`halves`].
        ///
        /// # Safety
        /// As [`reduce`].
        #[inline(always)]
        unsafe fn reduce_halves<U: Iq>(
            lo: __m256i,
            hi: __m256i,
            ctx: &U::Ctx,
            x: X,
            b: usize,
        ) -> __m256i {
            // SAFETY: the caller's contract.
            unsafe {
                let t = if VNNI && U::PER16 {
                    // The factors of the low halves (bytes 0, 2, .., 14) and of the high
                    // halves (1, 3, .., 15) as i32: ≤ 120 times a half sum ≤ 16·62·127.
                    let (fl, fh) = U::factors_lohi(ctx);
                    _mm256_add_epi32(_mm256_mullo_epi32(lo, fl), _mm256_mullo_epi32(hi, fh))
                } else {
                    let t = _mm256_add_epi32(lo, hi);
                    if VNNI && U::M == 8 {
                        _mm256_slli_epi32(t, 3)
                    } else {
                        t
                    }
                };
                U::finish(t, ctx, x, b)
            }
        }

        /// One weight row against one activation row, each group unpacked and used at once.
        /// (The loop of [`fused`] written again: through its closure, IQ1_M and IQ3_S
        /// measured 4–8% slower at M = 1 on an Intel Xeon.)
        ///
        /// # Safety
        /// The tier's features; nsb super-blocks at `w` and in `x`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn row_fused<U: Iq, const G: bool>(w: *const u8, nsb: usize, x: X) -> f32 {
            const { assert!(U::PER16 || U::M == 1 || U::M == 8) };
            let mut acc = _mm256_setzero_ps();
            // The sign vectors from the stored sign words (a constant per type and tier).
            let vec = U::SIGN_VEC && WORDS;
            // The indices of super-block sb + 1 are written while sb runs (its loads then
            // read stores that have long completed).
            let mut bufs = [IdxBuf([0; IDX_MAX]), IdxBuf([0; IDX_MAX])];
            // SAFETY: nsb ≥ 1 super-blocks at w (else the loop does not run, and neither
            // does this write: indices are only read for sb < nsb).
            let mut ip_next = if nsb > 0 {
                unsafe { indices::<U>(w, &mut bufs[0], vec) }
            } else {
                bufs[0].0.as_ptr()
            };
            for sb in 0..nsb {
                // SAFETY: super-blocks sb and sb + 1 < nsb lie in w and x; each buffer
                // holds IDX_MAX indices.
                unsafe {
                    let blk = w.add(sb * U::BB);
                    let (dc, ctx) = U::context(blk);
                    let ip = ip_next;
                    if sb + 1 < nsb {
                        ip_next = indices::<U>(blk.add(U::BB), &mut bufs[(sb + 1) % 2], vec);
                    }
                    let b = 8 * sb;
                    // Written out so that the eight groups stay in registers.
                    let v = [
                        group_dot::<U>(x, b, unpack::<U, G>(blk, 0, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 1, unpack::<U, G>(blk, 1, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 2, unpack::<U, G>(blk, 2, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 3, unpack::<U, G>(blk, 3, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 4, unpack::<U, G>(blk, 4, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 5, unpack::<U, G>(blk, 5, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 6, unpack::<U, G>(blk, 6, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 7, unpack::<U, G>(blk, 7, &ctx, ip, vec)),
                    ];
                    let t = reduce::<U>(v, &ctx, x, b);
                    acc = accumulate(acc, dc, x, sb, t);
                }
            }
            finish8(acc)
        }

        /// One weight row against one q8_K activation row (`x.d`: one scale per super-block),
        /// as [`row_fused`]: `acc ← fma((d·c)·dx_sb, f32(Σ_g T_g), acc)` per super-block.
        ///
        /// # Safety
        /// As [`row_fused`].
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn row_fused_q8k<U: Iq, const G: bool>(w: *const u8, nsb: usize, x: X) -> f32 {
            let mut acc = 0f32;
            // SAFETY: the caller's contract; nsb scales at `x.d`.
            unsafe {
                fused::<U, G>(w, nsb, x, |sb, dc, t| {
                    acc = (dc * *x.d.add(sb)).mul_add(hsum_i32(t) as f32, acc)
                })
            };
            acc
        }

        /// The driver of [`row_fused`] and [`row_fused_q8k`]: `f(sb, d·c, t)` for each
        /// super-block sb in order, lane g of `t` the group's `T_g`.
        ///
        /// # Safety
        /// As [`row_fused`].
        #[inline(always)]
        unsafe fn fused<U: Iq, const G: bool>(
            w: *const u8,
            nsb: usize,
            x: X,
            mut f: impl FnMut(usize, f32, __m256i),
        ) {
            const { assert!(U::PER16 || U::M == 1 || U::M == 8) };
            // The sign vectors from the stored sign words (a constant per type and tier).
            let vec = U::SIGN_VEC && WORDS;
            // The indices of super-block sb + 1 are written while sb runs (its loads then
            // read stores that have long completed).
            let mut bufs = [IdxBuf([0; IDX_MAX]), IdxBuf([0; IDX_MAX])];
            // SAFETY: nsb ≥ 1 super-blocks at w (else the loop does not run, and neither
            // does this write: indices are only read for sb < nsb).
            let mut ip_next = if nsb > 0 {
                unsafe { indices::<U>(w, &mut bufs[0], vec) }
            } else {
                bufs[0].0.as_ptr()
            };
            for sb in 0..nsb {
                // SAFETY: super-blocks sb and sb + 1 < nsb lie in w and x; each buffer
                // holds IDX_MAX indices.
                unsafe {
                    let blk = w.add(sb * U::BB);
                    let (dc, ctx) = U::context(blk);
                    let ip = ip_next;
                    if sb + 1 < nsb {
                        ip_next = indices::<U>(blk.add(U::BB), &mut bufs[(sb + 1) % 2], vec);
                    }
                    let b = 8 * sb;
                    // Written out so that the eight groups stay in registers.
                    let v = [
                        group_dot::<U>(x, b, unpack::<U, G>(blk, 0, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 1, unpack::<U, G>(blk, 1, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 2, unpack::<U, G>(blk, 2, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 3, unpack::<U, G>(blk, 3, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 4, unpack::<U, G>(blk, 4, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 5, unpack::<U, G>(blk, 5, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 6, unpack::<U, G>(blk, 6, &ctx, ip, vec)),
                        group_dot::<U>(x, b + 7, unpack::<U, G>(blk, 7, &ctx, ip, vec)),
                    ];
                    f(sb, dc, reduce::<U>(v, &ctx, x, b));
                }
            }
        }

        /// One weight row against every activation row: each super-block unpacked once;
        /// `acc` holds one accumulator per activation row (the caller's, reused row after
        /// row).
        ///
        /// # Safety
        /// The tier's features; nsb super-blocks at `w` and in every row of `xs`;
        /// `out.len() == acc.len() == xs.len()`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn row_buffered<U: Iq, const G: bool>(
            w: *const u8,
            nsb: usize,
            xs: &[X],
            acc: &mut [__m256],
            out: &mut [f32],
        ) {
            acc.fill(_mm256_setzero_ps());
            let zero = _mm256_setzero_si256();
            let mut buf = [Group::new(zero, zero, zero); 8];
            let mut ibuf = IdxBuf([0; IDX_MAX]);
            for sb in 0..nsb {
                // SAFETY: super-block sb lies in w and every row; `ibuf` holds IDX_MAX indices.
                unsafe {
                    let blk = w.add(sb * U::BB);
                    let (dc, ctx) = U::context(blk);
                    let ip = indices::<U>(blk, &mut ibuf, false);
                    for (g, b) in buf.iter_mut().enumerate() {
                        *b = unpack::<U, G>(blk, g, &ctx, ip, false);
                    }
                    for (a, &x) in acc.iter_mut().zip(xs) {
                        let mut v = [zero; 8];
                        for (g, vg) in v.iter_mut().enumerate() {
                            *vg = group_dot::<U>(x, 8 * sb + g, buf[g]);
                        }
                        let t = reduce::<U>(v, &ctx, x, 8 * sb);
                        *a = accumulate(*a, dc, x, sb, t);
                    }
                }
            }
            for (o, a) in out.iter_mut().zip(acc.iter()) {
                *o = finish8(*a);
            }
        }
        /// [`row_buffered`] against q8_K activation rows (as [`row_fused_q8k`]).
        ///
        /// # Safety
        /// As [`row_buffered`].
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn row_buffered_q8k<U: Iq, const G: bool>(
            w: *const u8,
            nsb: usize,
            xs: &[X],
            out: &mut [f32],
        ) {
            out.fill(0.0);
            // SAFETY: the caller's contract; nsb scales at each `x.d`.
            unsafe {
                buffered::<U, G>(w, nsb, xs, |r, sb, dc, t| {
                    out[r] = (dc * *xs[r].d.add(sb)).mul_add(hsum_i32(t) as f32, out[r])
                })
            };
        }

        /// The driver of [`row_buffered`] and [`row_buffered_q8k`]: `f(r, sb, d·c, t)` for
        /// each super-block sb in order and each activation row r.
        ///
        /// # Safety
        /// As [`row_buffered`].
        #[inline(always)]
        unsafe fn buffered<U: Iq, const G: bool>(
            w: *const u8,
            nsb: usize,
            xs: &[X],
            mut f: impl FnMut(usize, usize, f32, __m256i),
        ) {
            // SAFETY: the caller's contract (the tier's features).
            let zero = unsafe { _mm256_setzero_si256() };
            let mut buf = [Group::new(zero, zero, zero); 8];
            let mut ibuf = IdxBuf([0; IDX_MAX]);
            for sb in 0..nsb {
                // SAFETY: super-block sb lies in w and every row; `ibuf` holds IDX_MAX indices.
                unsafe {
                    let blk = w.add(sb * U::BB);
                    let (dc, ctx) = U::context(blk);
                    let ip = indices::<U>(blk, &mut ibuf, false);
                    for (g, b) in buf.iter_mut().enumerate() {
                        *b = unpack::<U, G>(blk, g, &ctx, ip, false);
                    }
                    for (r, &x) in xs.iter().enumerate() {
                        let mut v = [zero; 8];
                        for (g, vg) in v.iter_mut().enumerate() {
                            *vg = group_dot::<U>(x, 8 * sb + g, buf[g]);
                        }
                        f(r, sb, dc, reduce::<U>(v, &ctx, x, 8 * sb));
                    }
                }
            }
        }
    };
}

/// The AVX2 tier: `vpmaddubsw` + `vpmaddwd` with the factors, `vpsignb` for the signs.
pub(super) mod avx2 {
    use super::*;

    const VNNI: bool = false;
    const MASK: bool = false;
    const WIDE: bool = false;
    /// The [`Iq::SIGN_VEC`] types' sign vectors from their stored sign words.
    const WORDS: bool = true;

    /// Not used: this tier has no 512-bit kernel.
    unsafe fn row_wide<U: Iq>(_w: *const u8, _nsb: usize, _x: X) -> f32 {
        unreachable!("row_wide on a 256-bit tier")
    }

    #[inline(always)]
    fn dot4(_a: __m256i, _s: __m256i) -> __m256i {
        unreachable!("the AVX2 tier applies its factors in vpmaddwd")
    }

    #[inline(always)]
    fn neg_bits(_x: __m256i, _bits: u32) -> __m256i {
        unreachable!("the AVX2 tier applies sign bits as a vector")
    }

    kernels!("avx2,fma,f16c,bmi1");
}

/// The AVX-512 tier: 256-bit EVEX `vpdpbusd` (512-bit, two groups at once, for the
/// [`Iq::WIDE`] types at M = 1 where the CPU has four 512-bit pipes), the explicit sign bits as a mask (`vpsubb` from zero under
/// it).
pub(super) mod avx512 {
    use super::*;

    const VNNI: bool = true;
    const MASK: bool = true;
    const WIDE: bool = true;
    /// Not used: this tier applies the sign words as masks.
    const WORDS: bool = false;

    /// Groups `b - b0` and `b - b0 + 1` (blocks b, b + 1) in one 512-bit `vpdpbusd`: 16
    /// i32 lanes, each the exact sum of four products (lanes 0..8 group b, 8..16 b + 1).
    ///
    /// # Safety
    /// The tier's features; blocks b, b + 1 lie in the row.
    #[inline(always)]
    unsafe fn pair_dot<U: Iq>(x: X, b: usize, g0: Group, g1: Group) -> __m512i {
        const { assert!(U::SIGN_WORD || !U::SIGNED) };
        // SAFETY: 64 codes of blocks b, b + 1.
        unsafe {
            let a = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(g0.a), g1.a);
            let xv = _mm512_loadu_si512(x.qs.add(32 * b).cast());
            let xv = if U::SIGN_WORD {
                let k = g0.bits as u64 | (g1.bits as u64) << 32;
                _mm512_mask_sub_epi8(xv, k, _mm512_setzero_si512(), xv)
            } else {
                xv
            };
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), a, xv)
        }
    }

    /// The per-half sums of [`halves`] from the four pairs of [`pair_dot`]: an unpack-and-add
    /// tree per 128-bit lane, then one `vpermd` to group order.
    #[inline(always)]
    unsafe fn halves512(w: [__m512i; 4]) -> (__m256i, __m256i) {
        // SAFETY: AVX-512 F (the callers' target features).
        unsafe {
            let pair =
                |a, b| _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
            let quad = |ab, cd| {
                _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd))
            };
            // 128-bit lane L of pair j: group 2j + L/2, half L%2; of q: [Σ over that
            // lane of pairs 0..4], i.e. lanes 0..4 the low halves of groups 0, 2, 4, 6,
            // 4..8 their high halves, 8..16 the same for groups 1, 3, 5, 7.
            let q = quad(pair(w[0], w[1]), pair(w[2], w[3]));
            let order = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
            let v = _mm512_permutexvar_epi32(order, q);
            (_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v))
        }
    }

    /// As `row_fused`, two groups per 512-bit `vpdpbusd` (the same exact sums `T_g`).
    ///
    /// # Safety
    /// The tier's features; nsb super-blocks at `w` and in `x`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn row_wide<U: Iq>(w: *const u8, nsb: usize, x: X) -> f32 {
        let mut acc = _mm256_setzero_ps();
        let mut bufs = [IdxBuf([0; IDX_MAX]), IdxBuf([0; IDX_MAX])];
        // SAFETY: as in `row_fused`.
        let mut ip_next = if nsb > 0 {
            unsafe { indices::<U>(w, &mut bufs[0], false) }
        } else {
            bufs[0].0.as_ptr()
        };
        for sb in 0..nsb {
            // SAFETY: super-blocks sb and sb + 1 < nsb lie in w and x; each buffer holds
            // IDX_MAX indices.
            unsafe {
                let blk = w.add(sb * U::BB);
                let (dc, ctx) = U::context(blk);
                let ip = ip_next;
                if sb + 1 < nsb {
                    ip_next = indices::<U>(blk.add(U::BB), &mut bufs[(sb + 1) % 2], false);
                }
                let b = 8 * sb;
                let v = [
                    pair_dot::<U>(
                        x,
                        b,
                        unpack::<U, false>(blk, 0, &ctx, ip, false),
                        unpack::<U, false>(blk, 1, &ctx, ip, false),
                    ),
                    pair_dot::<U>(
                        x,
                        b + 2,
                        unpack::<U, false>(blk, 2, &ctx, ip, false),
                        unpack::<U, false>(blk, 3, &ctx, ip, false),
                    ),
                    pair_dot::<U>(
                        x,
                        b + 4,
                        unpack::<U, false>(blk, 4, &ctx, ip, false),
                        unpack::<U, false>(blk, 5, &ctx, ip, false),
                    ),
                    pair_dot::<U>(
                        x,
                        b + 6,
                        unpack::<U, false>(blk, 6, &ctx, ip, false),
                        unpack::<U, false>(blk, 7, &ctx, ip, false),
                    ),
                ];
                let (lo, hi) = halves512(v);
                let t = reduce_halves::<U>(lo, hi, &ctx, x, b);
                acc = accumulate(acc, dc, x, sb, t);
            }
        }
        finish8(acc)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1,avx512f,avx512bw,avx512vl,avx512vnni")]
    fn dot4(a: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, s)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1,avx512f,avx512bw,avx512vl,avx512vnni")]
    fn neg_bits(x: __m256i, bits: u32) -> __m256i {
        _mm256_mask_sub_epi8(x, bits, _mm256_setzero_si256(), x)
    }

    kernels!("avx2,fma,f16c,bmi1,avx512f,avx512bw,avx512vl,avx512vnni");

    /// Whether the AMX kernel serves `kind` against `xs` ([`dot_row_group_amx`]): a type
    /// with one ([`Iq::AMX`]), AMX there, at least `iquants::AMX_MIN_M` rows, at most 64,
    /// interleaved in groups of 16 ([`amx::rows_ready`]).
    pub(in crate::linear::cpu) fn amx_applies(kind: IqKind, xs: &[Row<'_>]) -> bool {
        kind.amx() && amx::rows_ready(super::super::iquants::AMX_MIN_M, xs)
    }

    /// Up to 16 weight rows `ws` of `kind` against the rows `xs` ([`amx_applies`] holds):
    /// `out[i·M + r]`, the bits of `dot_row_group`. Per super-block the 16 rows' groups are
    /// unpacked as for the other forms (`form`) and their signs applied to the magnitudes
    /// (signed codes, |w| ≤ 62), 256 bytes per row: tile A of group g is 16 rows × 32
    /// signed codes (the per-16 types: two tiles of 16), tile B the group's block of the
    /// interleaved activation rows (16 per group, [`Rows::arrange_groups`]); `tdpbssd`
    /// gives every (weight row, activation row) pair's exact signed sum, times the group's
    /// factor ([`Iq::factors`]; the per-16 types: the two half sums times theirs,
    /// [`Iq::factors_lohi`]) it is `T_g`; then with the 16 activation rows in the lanes of
    /// one 512-bit vector the reference's steps, `acc[g] ← fma((d·c)·dx_b, T_g, acc[g])`,
    /// and the shared tree.
    ///
    /// [`Rows::arrange_groups`]: crate::linear::q8_1::Rows::arrange_groups
    ///
    /// # Safety
    /// The tier's features and BMI1 available; [`amx_applies`] holds (AMX usable; the
    /// interleaved planes read through each group's first row are there); every row of `ws`
    /// holds whole super-blocks for the activation rows' length.
    #[target_feature(enable = "avx2,fma,f16c,bmi1,avx512f,avx512bw,avx512vl,avx512vnni")]
    pub(in crate::linear::cpu) unsafe fn dot_row_group_amx(
        kind: IqKind,
        ws: &[&[u8]],
        xs: &[Row<'_>],
        out: &mut [f32],
        form: Form,
    ) {
        debug_assert!(amx_applies(kind, xs));
        let g = form == Form::Gather;
        // SAFETY (all calls): the caller's contract.
        unsafe {
            match (kind, g) {
                (IqKind::Iq2Xxs, _) => amx_rows::<Iq2Xxs, false>(ws, xs, out),
                (IqKind::Iq2Xs, true) => amx_rows::<Iq2Xs, true>(ws, xs, out),
                (IqKind::Iq2Xs, false) => amx_rows::<Iq2Xs, false>(ws, xs, out),
                (IqKind::Iq3Xxs, true) => amx_rows::<Iq3Xxs, true>(ws, xs, out),
                (IqKind::Iq3Xxs, false) => amx_rows::<Iq3Xxs, false>(ws, xs, out),
                (IqKind::Iq3S, true) => amx_rows::<Iq3S, true>(ws, xs, out),
                (IqKind::Iq3S, false) => amx_rows::<Iq3S, false>(ws, xs, out),
                (IqKind::Iq2S, true) => amx_rows::<Iq2S, true>(ws, xs, out),
                (IqKind::Iq2S, false) => amx_rows::<Iq2S, false>(ws, xs, out),
                (IqKind::Iq1S | IqKind::Iq1M, _) => unreachable!("no AMX kernel (amx_applies)"),
            }
        }
    }

    /// [`dot_row_group_amx`] for the type `U` in form `G`.
    ///
    /// # Safety
    /// As [`dot_row_group_amx`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn amx_rows<U: Iq, const G: bool>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
        const { assert!(U::AMX && U::SIGN_WORD) };
        let (m, nb) = (xs.len(), xs[0].d.len());
        let (nsb, rows) = (nb / 8, ws.len());
        assert!((1..=amx::MAX_ROWS).contains(&rows) && m <= amx::MAX_M);
        assert!(nb.is_multiple_of(8) && out.len() >= rows * m);
        assert!(ws.iter().all(|w| w.len() >= nsb * U::BB));
        // A super-block's signed codes, 256 bytes per row (rows past `ws.len()` stay zero:
        // their outputs are never stored); the sums C of its groups (the per-16 types: of
        // its 16 halves).
        let mut buf = amx::Aligned([0i8; amx::MAX_ROWS * 256]);
        let mut c = amx::Aligned([[0i32; amx::WIDTH * amx::MAX_ROWS]; 16]);
        // Per weight row: d·c, and the factors of its groups (low halves first for the
        // per-16 types, then the high halves).
        let mut dc = [0f32; amx::MAX_ROWS];
        let mut fac = [[0i32; 16]; amx::MAX_ROWS];
        let mut ibuf = IdxBuf([0; IDX_MAX]);
        // SAFETY: AMX usable (the caller's contract).
        let tiles = unsafe { amx::Tiles::configure(if U::PER16 { 16 } else { 32 }) };
        let zero = _mm256_setzero_si256();
        // Each super-block is unpacked once for every group of 16 activation rows; the
        // accumulators of all groups (at most four) stay in this frame.
        let groups = m.div_ceil(amx::WIDTH);
        let planes = amx::group_planes(xs);
        let mut accs = [[[_mm512_setzero_ps(); 8]; amx::MAX_ROWS]; amx::MAX_M / amx::WIDTH];
        for sb in 0..nsb {
            // SAFETY (all): super-block sb of every weight row (asserted) and blocks
            // 8sb .. 8sb + 8 of each group's 512·nb codes and 16·nb scales (`amx_applies`);
            // the buffers are the sizes the tiles read and write.
            unsafe {
                for (n, w) in ws.iter().enumerate() {
                    let blk = w.as_ptr().add(sb * U::BB);
                    // The super-block two ahead, to L2.
                    crate::linear::cpu::prefetch_l2(blk.wrapping_add(2 * U::BB), U::BB);
                    let (d, ctx) = U::context(blk);
                    let ip = indices::<U>(blk, &mut ibuf, false);
                    for gi in 0..8 {
                        let u = unpack::<U, G>(blk, gi, &ctx, ip, false);
                        let v = _mm256_mask_sub_epi8(u.a, u.bits, zero, u.a);
                        let at = buf.0.as_mut_ptr().add(256 * n + 32 * gi);
                        _mm256_store_si256(at.cast(), v);
                    }
                    dc[n] = d;
                    let f = fac[n].as_mut_ptr().cast::<__m256i>();
                    if U::PER16 {
                        let (lo, hi) = U::factors_lohi(&ctx);
                        _mm256_storeu_si256(f, lo);
                        _mm256_storeu_si256(f.add(1), hi);
                    } else {
                        _mm256_storeu_si256(f, U::factors(&ctx));
                    }
                }
                for (&(xc, xd, _), acc) in planes.iter().zip(accs.iter_mut()).take(groups) {
                    let a = buf.0.as_ptr();
                    let b = xc.add(512 * 8 * sb);
                    for i in 0..8 {
                        let (c0, c1) = c.0.split_at_mut(2 * i + 1);
                        let cc = [c0[2 * i].as_mut_ptr(), c1[0].as_mut_ptr()];
                        if U::PER16 {
                            // Group i's halves: tiles 2i (low) and 2i + 1 (high).
                            let (ai, bi) = (a.add(32 * i), b.add(512 * i));
                            tiles.signed_block_sums2([ai, ai.add(16)], 256, [bi, bi.add(256)], cc);
                        } else if i < 4 {
                            // Groups 2i, 2i + 1: tiles 2i, 2i + 1.
                            let (ai, bi) = (a.add(64 * i), b.add(1024 * i));
                            tiles.signed_block_sums2([ai, ai.add(32)], 256, [bi, bi.add(512)], cc);
                        }
                    }
                    for (n, acc) in acc.iter_mut().enumerate().take(rows) {
                        let ds = _mm512_set1_ps(dc[n]);
                        for gi in 0..8 {
                            let row = |t: usize| {
                                _mm512_load_si512(c.0[t].as_ptr().add(amx::WIDTH * n).cast())
                            };
                            let t = if U::PER16 {
                                let lo =
                                    _mm512_mullo_epi32(row(2 * gi), _mm512_set1_epi32(fac[n][gi]));
                                let hi = _mm512_mullo_epi32(
                                    row(2 * gi + 1),
                                    _mm512_set1_epi32(fac[n][8 + gi]),
                                );
                                _mm512_add_epi32(lo, hi)
                            } else {
                                _mm512_mullo_epi32(row(gi), _mm512_set1_epi32(fac[n][gi]))
                            };
                            let dx = _mm512_loadu_ps(xd.add(amx::WIDTH * (8 * sb + gi)));
                            let d = _mm512_mul_ps(ds, dx);
                            acc[gi] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(t), acc[gi]);
                        }
                    }
                }
            }
        }
        for (grp, acc) in accs.iter().enumerate().take(groups) {
            for (n, a) in acc.iter().enumerate().take(rows) {
                amx::store_lanes(out, &super::super::tile_avx512::tree(a, None), n, m, grp);
            }
        }
        drop(tiles);
    }
}

/// The AVX-VNNI tier: 256-bit VEX `vpdpbusd`, `vpsignb` for the signs.
pub(super) mod avxvnni {
    use super::*;

    const VNNI: bool = true;
    const MASK: bool = false;
    const WIDE: bool = false;
    /// The sign vectors from [`SIGNS64`] for every type (the stored-word form was measured
    /// on an AVX2-only CPU only).
    const WORDS: bool = false;

    /// Not used: this tier has no 512-bit kernel.
    unsafe fn row_wide<U: Iq>(_w: *const u8, _nsb: usize, _x: X) -> f32 {
        unreachable!("row_wide on a 256-bit tier")
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,bmi1,avxvnni")]
    fn dot4(a: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), a, s)
    }

    #[inline(always)]
    fn neg_bits(_x: __m256i, _bits: u32) -> __m256i {
        unreachable!("the AVX-VNNI tier applies sign bits as a vector")
    }

    kernels!("avx2,fma,f16c,bmi1,avxvnni");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`ksigns_bytes`] and [`ksigns_aux`] reproduce the `KSIGNS_IQ2XS` table for every
    /// 7-bit index, in every byte and field position.
    #[test]
    fn ksigns_by_parity_equal_the_table() {
        if !crate::isa::Isa::Avx2.available() {
            eprintln!("note: no AVX2 on this machine, the sign-byte vector code is not tested");
            return;
        }
        for i0 in (0..128u32).step_by(32) {
            let bytes: [u8; 32] = std::array::from_fn(|j| ((i0 + j as u32) % 128) as u8);
            // Four 7-bit fields per u32 (lane g: indices 4g .. 4g + 4 of `bytes`).
            let aux: [u32; 8] = std::array::from_fn(|g| {
                (0..4).fold(0, |a, l| a | (bytes[4 * g + l] as u32) << (7 * l)) | 0xF000_0000
            });
            let (mut got, mut got_aux) = ([0u8; 32], [0u8; 32]);
            // SAFETY: AVX2 checked above; 32-byte buffers.
            unsafe {
                #[target_feature(enable = "avx2")]
                unsafe fn run(b: &[u8; 32], a: &[u32; 8], o: &mut [u8; 32], oa: &mut [u8; 32]) {
                    // SAFETY: AVX2 (the caller); 32-byte buffers.
                    unsafe {
                        let v = ksigns_bytes(_mm256_loadu_si256(b.as_ptr().cast()));
                        _mm256_storeu_si256(o.as_mut_ptr().cast(), v);
                        let v = ksigns_aux(_mm256_loadu_si256(a.as_ptr().cast()));
                        _mm256_storeu_si256(oa.as_mut_ptr().cast(), v);
                    }
                }
                run(&bytes, &aux, &mut got, &mut got_aux);
            }
            let want = bytes.map(|b| KSIGNS_IQ2XS[b as usize]);
            assert_eq!(got, want, "bytes from {i0}");
            assert_eq!(got_aux, want, "fields from {i0}");
        }
    }
}
