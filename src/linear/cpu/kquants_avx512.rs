//! The AVX-512 k-quant kernels (F/BW/VL/VNNI), in exactly the order of
//! [`super::kquants`]'s module docs, with 512-bit registers.
//!
//! Per super-block and weight row the codes are four registers `C_p` (p = 0..4), each the
//! UNSIGNED codes of blocks 2p (low 256 bits) and 2p+1 (high 256 bits), the activation's
//! natural order (Q2_K 0..3, Q3_K 0..7 = q + 4, Q4_K 0..15, Q5_K 0..31, Q6_K 0..63 =
//! q + 32; the offsets come back through the half-block sums Σx16 as on the AVX2 tier):
//!
//! - `V_p = vpdpbusd(0, C_p, X_p)` (X_p = activation bytes 64p..64p+64): i32 lanes of four
//!   products, ≤ 4·63·127 = 32004 in magnitude;
//! - a transpose-reduce (two `vpackssdw`, since each lane fits 16 bits, two `vpmaddwd` by
//!   ones, two `vshufps` and an add, [`group_sums`]):
//!   lane 4c + p of `W` = the sum of 128-bit chunk c of `V_p`, one 16-value group
//!   (group 4p + c of the super-block), ≤ 16·63·127 = 128016;
//! - the per-16 scales (Q2_K, Q3_K, Q6_K) as ONE `vpmulld` of `W` by the 16 scales in that
//!   order (|sc| ≤ 128: < 2²⁴; Q2_K, whose sums and scales fit 16 bits, as one `vpmaddwd`,
//!   a single µop on Intel cores: M = 1 1.02–1.05× there, q8_K and M = 4 1.03–1.09×);
//! - the two groups of each block added (`vshufi64x2` + `vpaddd`) and ONE `vpermd` to
//!   lane j = block j; Q4_K/Q5_K then multiply lane j by the 6-bit per-32 scale;
//! - from there as the AVX2 tier: the offsets and mins through `vpmaddwd(c16, Σx16)`, one
//!   convert and one fma per super-block and activation row (`acc ← fma(d·dx, S, acc)`,
//!   `accm ← fma(dmin·dx, M, accm)`). Q3_K's and Q6_K's offsets instead come off the
//!   per-16 sums before the scales, as one `vpsubd` of the activation's offset terms
//!   ([`Row::offsets`]: 4·Σx16 or 32·Σx16, arranged once per forward in the lane order of
//!   those sums, [`K::OFFSETS`]): Σ(u − o)·x, the same exact integers (M = 1 1.02–1.03× on
//!   Zen 4).
//!
//! Every S_j and M_j is the exact integer of the module docs (no intermediate leaves i32 or
//! exceeds 2²⁴), so the bits equal the scalar reference's.
//!
//! **Chunk-major form** (Q4_K, Q5_K below the tile kernel's row count): the activation
//! codes of each super-block are arranged once per forward ([`CHUNKS`]) so that 64-byte
//! vector c holds values 8c..8c+8 of every block j in its 64-bit slot j, and the weight
//! codes `D_c` take the same slots (one `vpermt2q` of the two 64-byte halves of qs, a
//! per-slot shift to the block's nibble; Q5_K's fifth bits rotated from qh word c). Then
//! `V = Σ_c vpdpbusd(D_c, X_c)` holds block j in lanes 2j, 2j + 1 with no transpose: one
//! 64-bit shift and add, and one `vpermt2d` that also brings in the blocks' exact Σx from
//! [`Row::sum`] (the mins' factor). The same integers, so the same bits, with fewer
//! vector instructions per super-block (measured +7–10% at M = 1 on an Intel Xeon, whose
//! cores run 512-bit vectors on two ports). Where the CPU has GFNI, [`Gfni`]`<Q4K>` and
//! `Gfni<Q5K>` take each slot's nibbles out of `vpermt2q`'s bytes by one `vgf2p8affineqb` (a
//! bit matrix per 64-bit slot) where a shift and a mask were two (Q4_K M = 1 +8–10% there),
//! and `Gfni<Q2K>` and `Gfni<Q3K>` their 2-bit fields (Q3_K its hmask bits too: +7–10%);
//! [`Q6KGfni`] takes Q6_K's 2-bit fields from qh the same way (natural order, where a
//! rotation and a mask were two: M = 1 1.13× on an AMD EPYC, Zen 4); the passes of those
//! types are compiled with GFNI ([`pass_of`]).
//!
//! **Scales by word pairs** (the GFNI form of Q2_K, Q3_K and Q4_K, [`ArrangedGfni::WORDS`]):
//! their arranged 16-value sums fit 16 bits, so one `vpermt2w` packs them beside the
//! activation's per-16 sums Σx16 as 32 words ([`packed`]), and one `vpmaddwd` by the scales
//! and mins as words ([`Hdr::pw`], [`pair_words`]) gives every block's S_j (lanes 0..8) and
//! M_j (lanes 8..16): the multiply-add itself adds the two groups (Q2_K) or halves (Q4_K)
//! of a block, where the fold, a `vpmulld` and the blocks' Σx were four instructions more
//! (Q3_K, no mins: `vpmovdw` and a 256-bit `vpmaddwd` where `vpmulld` and the fold were
//! four). The same exact integers. Its passes are compiled with AVX-512 VBMI too, which
//! every CPU with GFNI and AVX-512 has (it is checked all the same). Measured on an AMD
//! EPYC (Zen 4, where every 512-bit instruction but adds and logic takes a cycle of one
//! shared pair of pipes), 4096², one thread, M = 1: Q2_K +8%, Q3_K +7%, Q4_K +5%; M = 4:
//! +7–15%.
//!
//! A pass is RW weight rows × RX ≤ 4 activation rows: the codes are unpacked once per
//! super-block and meet every activation row, and each activation load serves the RW
//! weight rows. M = 1 takes RW = 1 (two rows per pass measured equal with the matrix in L3
//! and 15–30% slower beyond it); M > 1 takes RW = 2 (the activation rows no longer fit L1:
//! measured up to ~20% faster at M = 32). Each super-block step prefetches the same
//! super-block [`PF_ROWS`] rows further on (as the AVX2 tier; without it the matrix beyond
//! L3 measured up to 25% slower), but the one-row passes of rows up to K = 8192 on Zen 4
//! ([`prefetches`]). With one weight row and one activation row (M = 1) the pass is
//! software-pipelined two deep: super-block sb + 2's codes and `vpdpbusd` sums are issued
//! before super-block sb's reduction and scaling, so that the long dependency chain of each
//! super-block does not hold the scheduler's entries while its operands arrive (the same
//! operations on the same values: the same bits; Zen 4, 4096², M = 1, one deep against
//! none: Q2_K +2%, Q3_K +4%, Q4_K +4%, Q5_K +8%, Q6_K +5%; two deep against one: +1–2%);
//! Q4_K and Q5_K only where that was measured ([`pipelines`]: elsewhere slower, and up to
//! 3× slower in builds that enable AVX-512 for the whole crate).

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::kquants::{Kq, finish_m256};
use super::kquants_avx2::{f16x8, q3_scales, scmn_k4};
use crate::formats::gguf::blocks::{q2_k, q3_k, q4_k, q5_k, q6_k};
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// How many weight rows ahead the kernel prefetches: beyond L3 (16384 × 4096, M = 1) 4
/// measured best for these faster kernels (2, the AVX2 tier's distance: Q6_K ~10% slower;
/// 3 and 6 equal or slower).
const PF_ROWS: usize = 4;

/// Whether a pass of `rw` weight rows of `nsb` super-blocks prefetches: always but in the
/// one-row passes of rows up to [`STREAM_SUPER_BLOCKS`] on a CPU whose hardware prefetcher
/// keeps one row's stream ahead by itself ([`Cpu::zen4`](crate::isa::Cpu::zen4),
/// where it measured faster without).
fn prefetches(rw: usize, nsb: usize) -> bool {
    rw > 1 || nsb > STREAM_SUPER_BLOCKS || !crate::isa::Cpu::get().zen4
}

/// The longest rows (in super-blocks: K = 8192) whose one-row passes leave the stream to
/// the hardware prefetcher where [`Cpu::zen4`](crate::isa::Cpu::zen4) holds.
/// Beyond, the activation row's planes and the weight stream no longer share L1 and the
/// passes without software prefetch fell off a cliff: on an AMD EPYC (Zen 4), one thread,
/// M = 1, 4096 rows, GMAC/s without / with prefetch: Q4_K 47.6 / 47.5 at K = 10240, 37.6 /
/// 46.2 at 12288, 26.1 / 45.3 at 14336, 24 / 45 at 16384; Q6_K 32.4 / 34.5, 21.5 / 32.3,
/// 14.6 / 30.5, 14 / 31; while up to K = 8192 the passes ran faster without (8192², Q6_K
/// 30.8 / 28.7, Q4_K 43–44 / 41–42; 16384 × 6144, Q4_K 42–43 / 36, Q2_K 55 / 49).
const STREAM_SUPER_BLOCKS: usize = 32;

/// Steps `0 .. n` software-pipelined two deep: `first(i + 2)` is issued before
/// `second(i, first(i))`, so that the long dependency chain of each step's second stage
/// finds its operands ready. The same calls with the same values as one step at a time.
#[inline(always)]
fn two_deep<T: Copy>(
    n: usize,
    mut first: impl FnMut(usize) -> T,
    mut second: impl FnMut(usize, &T),
) {
    if n == 0 {
        return;
    }
    let mut c0 = first(0);
    let mut c1 = if n > 1 { first(1) } else { c0 };
    for i in 0..n.saturating_sub(2) {
        let next = first(i + 2);
        second(i, &c0);
        c0 = c1;
        c1 = next;
    }
    second(n.saturating_sub(2), &c0);
    if n > 1 {
        second(n - 1, &c1);
    }
}

/// Whether `U`'s one-row passes are software-pipelined ([`pass`]): always but Q4_K's and
/// Q5_K's outside Zen 4 ([`Cpu::zen4`](crate::isa::Cpu::zen4)), or in a build that enables
/// AVX-512 for the whole crate (`-C target-cpu=native` and the like). Q4_K and Q5_K carry
/// the largest headers through the pipeline: on an Intel Xeon (4096², M = 1, one thread)
/// the two-deep loop measured 42.9 / 33.5 GMAC/s against 44.8 / 35.6 without it, and
/// built with AVX-512 for the whole crate 13.7 / 12.7 against 38.6 / 30.4 (its registers
/// spill), while on Zen 4 it measured 4–8% faster than none.
fn pipelines<U: K>() -> bool {
    !matches!(U::KQ, Kq::Q4K | Kq::Q5K)
        || (crate::isa::Cpu::get().zen4 && !cfg!(target_feature = "avx512f"))
}

/// Whether this CPU runs the GFNI form of the passes ([`Gfni`], [`Q6KGfni`]): it takes
/// GFNI and, for its scale words, AVX-512 VBMI.
pub(super) fn gfni_form() -> bool {
    let cpu = crate::isa::Cpu::get();
    cpu.gfni && cpu.avx512vbmi
}

/// A super-block's header, decoded once per weight row.
#[derive(Clone, Copy)]
pub(super) struct Hdr {
    /// Q3_K, Q6_K: d broadcast.
    pub(super) d: __m256,
    /// Q2_K, Q4_K, Q5_K: d in lanes 0..8, dmin in lanes 8..16.
    pub(super) dd: __m512,
    /// Q2_K, Q3_K, Q6_K: the per-16 scales, i32 lane 4c + p = sc[4p + c] (the order of
    /// `W`); Q4_K, Q5_K: the per-32 scales in lanes 0..8 and the mins in lanes 8..16.
    pub(super) sc: __m512i,
    /// Q2_K: the 16 per-16 mins (i16); Q3_K, Q6_K: k·sc, the coefficients of Σx16.
    pub(super) c16: __m256i,
    /// Q2_K, Q3_K, Q6_K: the per-16 scales as i32 in their natural order (the group-major
    /// form, the AMX kernel).
    pub(super) scn: __m512i,
    /// Q2_K: the 16 scale bytes (a per-16 scale in bits 0..4, its min in 4..8); Q3_K: the
    /// 16 signed per-16 scales; Q4_K, Q5_K: the block's first 16 bytes (d, dmin,
    /// scales[12]). The sources of [`Hdr::pw`] (and of Q5_K's [`Hdr::sc`] in the GFNI form).
    pub(super) sc8: __m128i,
    /// The GFNI form of Q2_K–Q4_K ([`Gfni`]): the scales as the i16 factors of one
    /// `vpmaddwd` that turns the packed group sums into block sums ([`pair_words`]).
    pub(super) pw: __m512i,
}

/// One k-quant type.
pub(super) trait K {
    const KQ: Kq;
    /// # Safety
    /// AVX-512 F/BW/VL/VNNI, AVX2/FMA/F16C available; `b` points at a whole super-block.
    unsafe fn header(b: *const u8) -> Hdr;
    /// The unsigned codes `C_p` of blocks 2p, 2p+1 (module docs).
    ///
    /// # Safety
    /// As [`K::header`].
    unsafe fn codes(b: *const u8) -> [__m512i; 4];
    /// The order in which [`K::arranged`] expects a super-block's activation codes
    /// (module docs: chunk-major [`CHUNKS`] or group-major [`GROUPS`]), if the type has
    /// that form.
    const ARRANGED: Option<&'static [u8; 256]> = None;
    /// For a type whose codes carry an offset (Q3_K: u = q + 4, Q6_K: u = q + 32), the lane
    /// order of its per-16 sums (Q6_K: `W`'s; Q3_K: the group-major `V`'s) and the offset:
    /// the pass then subtracts the activation's offset terms ([`Row::offsets`], arranged
    /// once per forward in that order) from those sums before the scales, where it would
    /// form them per super-block.
    const OFFSETS: Option<(&'static [u8; 16], i32)> = None;
    /// Whether [`K::arranged`] needs GFNI (the passes then run compiled with it, and with
    /// AVX-512 VBMI).
    const GFNI: bool = false;
    /// Whether the arranged pass scales its group sums by one `vpmaddwd` of [`Hdr::pw`]
    /// ([`ArrangedGfni::WORDS`]; the GFNI form only).
    const WORDS: bool = false;
    /// The unsigned codes `D_c` (c = 0..4) in the order of [`K::ARRANGED`].
    ///
    /// # Safety
    /// As [`K::header`], and GFNI available where [`K::GFNI`]; only called where
    /// [`K::ARRANGED`] is some.
    unsafe fn arranged(_b: *const u8) -> [__m512i; 4] {
        unreachable!("only the types with an arranged form are asked for it")
    }
}

/// Chunk-major order of a super-block's activation codes (Q4_K, Q5_K;
/// [`Rows::arrange_pairs`] with runs of 256): arranged byte 64c + 8j + e is code
/// 32j + 8c + e, so that 64-byte vector c meets `D_c` (64-bit slot j: values 8c..8c+8 of
/// block j).
///
/// [`Rows::arrange_pairs`]: crate::linear::q8_1::Rows::arrange_pairs
pub(super) const CHUNKS: [u8; 256] = {
    let mut p = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let (c, j, e) = (i / 64, (i / 8) % 8, i % 8);
        p[i] = (32 * j + 8 * c + e) as u8;
        i += 1;
    }
    p
};

/// Group-major order (Q2_K, Q3_K): arranged byte 64c + 4g + e is code 16g + 4c + e, so
/// that 64-byte vector c meets `D_c` (32-bit lane g: values 4c..4c+4 of 16-value group g).
pub(super) const GROUPS: [u8; 256] = {
    let mut p = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let (c, g, e) = (i / 64, (i / 4) % 16, i % 4);
        p[i] = (16 * g + 4 * c + e) as u8;
        i += 1;
    }
    p
};

/// The per-16 sums of `W` (module docs): lane 4c + p holds group 4p + c.
const W_GROUPS: [u8; 16] = {
    let mut o = [0u8; 16];
    let mut l = 0;
    while l < 16 {
        o[l] = (4 * (l % 4) + l / 4) as u8;
        l += 1;
    }
    o
};

/// The lane order and offset of `kq`'s offset terms ([`K::OFFSETS`]), if it has them.
pub(super) const fn offsets(kq: Kq) -> Option<(&'static [u8; 16], i32)> {
    match kq {
        Kq::Q3K => Q3K::OFFSETS,
        Kq::Q6K => Q6K::OFFSETS,
        _ => None,
    }
}

/// The per-16 sums in their natural order (the group-major `V`: lane g holds group g).
const GROUPS16: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// The order of `kq`'s arranged form ([`K::ARRANGED`]), if it has one.
pub(super) const fn arrangement(kq: Kq) -> Option<&'static [u8; 256]> {
    match kq {
        Kq::Q2K => Q2K::ARRANGED,
        Kq::Q3K => Q3K::ARRANGED,
        Kq::Q4K => Q4K::ARRANGED,
        Kq::Q5K => Q5K::ARRANGED,
        Kq::Q6K => Q6K::ARRANGED,
    }
}

/// Q2_K/Q3_K's two-bit fields group-major: lane g of vector c = field 2(j % 4) (j = g/2)
/// of qs[32(j/4) + 16(g % 2) + 4c ..][..4], moved to bits 0, 1 (the bits above not
/// cleared). `q`: qs[0..64].
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn field_groups(q: __m512i) -> [__m512i; 4] {
    let sh: [i32; 16] = std::array::from_fn(|g| 2 * ((g as i32 / 2) % 4));
    // SAFETY: 16 readable i32.
    let sh = unsafe { _mm512_loadu_si512(sh.as_ptr().cast()) };
    std::array::from_fn(|c| {
        let idx: [i32; 16] = std::array::from_fn(|g| 8 * (g as i32 / 8) + 4 * (g as i32 % 2));
        // SAFETY: 16 readable i32.
        let idx = unsafe { _mm512_loadu_si512(idx.as_ptr().cast()) };
        let idx = _mm512_add_epi32(idx, _mm512_set1_epi32(c as i32));
        _mm512_srlv_epi32(_mm512_permutexvar_epi32(idx, q), sh)
    })
}

/// [`field_groups`] with the bits above cleared, by one `vgf2p8affineqb` per vector in
/// place of the shift (and the caller's mask): the 64-bit slot q holds lanes 2q, 2q + 1,
/// whose field is 2(q % 4), so each slot's bit matrix takes that field to bits 0, 1.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
fn field_groups_gfni(q: __m512i) -> [__m512i; 4] {
    // Result bits 0, 1 take source bits s, s + 1: matrix bytes 7 and 6.
    let m = |s: i64| (1i64 << s) << 56 | (2i64 << s) << 48;
    let a = _mm512_set_epi64(m(6), m(4), m(2), m(0), m(6), m(4), m(2), m(0));
    std::array::from_fn(|c| {
        let idx: [i32; 16] = std::array::from_fn(|g| 8 * (g as i32 / 8) + 4 * (g as i32 % 2));
        // SAFETY: 16 readable i32.
        let idx = unsafe { _mm512_loadu_si512(idx.as_ptr().cast()) };
        let idx = _mm512_add_epi32(idx, _mm512_set1_epi32(c as i32));
        _mm512_gf2p8affine_epi64_epi8::<0>(_mm512_permutexvar_epi32(idx, q), a)
    })
}

/// Q4_K/Q5_K's nibbles chunk-major: slot j of vector c = the nibble (low for even j, high
/// for odd) of qs[32(j/2) + 8c ..][..8], moved to bits 0..4 (the bits above not cleared).
/// `z0`, `z1`: qs[0..64], qs[64..128].
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn nibble_chunks(z0: __m512i, z1: __m512i) -> [__m512i; 4] {
    let sh = _mm512_set_epi64(4, 0, 4, 0, 4, 0, 4, 0);
    std::array::from_fn(|c| {
        let c = c as i64;
        // Slot j takes 64-bit word c of qs row j/2: rows 0, 1 in z0 (words c, 4 + c),
        // rows 2, 3 in z1 (indexes 8 + c, 12 + c).
        let idx = _mm512_set_epi64(12 + c, 12 + c, 8 + c, 8 + c, 4 + c, 4 + c, c, c);
        _mm512_srlv_epi64(_mm512_permutex2var_epi64(z0, idx, z1), sh)
    })
}

/// [`nibble_chunks`] with the bits above cleared, by one `vgf2p8affineqb` per vector
/// where the shift and the mask were two: each 64-bit slot applies its own bit matrix to
/// its bytes, `LO` (bits 0..4 kept in place) in the even slots, `HI` (bits 4..8 moved to
/// 0..4) in the odd ones, bits 4..8 of the result zero. (Matrix byte 7 − i selects the
/// source bits that form result bit i.)
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
fn nibble_chunks_gfni(z0: __m512i, z1: __m512i) -> [__m512i; 4] {
    const LO: i64 = 0x0102_0408_0000_0000;
    const HI: i64 = 0x1020_4080_0000_0000;
    let a = _mm512_set_epi64(HI, LO, HI, LO, HI, LO, HI, LO);
    std::array::from_fn(|c| {
        let c = c as i64;
        // As in `nibble_chunks`.
        let idx = _mm512_set_epi64(12 + c, 12 + c, 8 + c, 8 + c, 4 + c, 4 + c, c, c);
        _mm512_gf2p8affine_epi64_epi8::<0>(_mm512_permutex2var_epi64(z0, idx, z1), a)
    })
}

/// Q4_K/Q5_K's 128 code bytes at `qs` as two vectors (`nibble_chunks`' `z0`, `z1`).
///
/// # Safety
/// 128 readable bytes at `qs`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn qs128(qs: *const u8) -> (__m512i, __m512i) {
    // SAFETY: the caller's 128 bytes.
    unsafe {
        (
            _mm512_loadu_si512(qs.cast()),
            _mm512_loadu_si512(qs.add(64).cast()),
        )
    }
}

/// The 32 bytes at `p` in both 256-bit halves.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn bcast(p: *const u8) -> __m512i {
    // SAFETY: the caller's 32 readable bytes.
    unsafe { _mm512_broadcast_i64x4(_mm256_loadu_si256(p.cast())) }
}

/// i64 `a` in every lane of the low 256 bits, `b` in the high.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn halves(a: i64, b: i64) -> __m512i {
    _mm512_set_epi64(b, b, b, b, a, a, a, a)
}

/// The binary16 pair d, dmin at `p` as f32: d in lanes 0..8, dmin in 8..16 (exact).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn d_dmin(p: *const u8) -> __m512 {
    // SAFETY: four readable bytes at p.
    let bits = unsafe { std::ptr::read_unaligned(p.cast::<i32>()) };
    let dd = _mm_cvtph_ps(_mm_cvtsi32_si128(bits));
    let idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(dd))
}

/// The 16 per-16 scale bytes (signed) as i32 in the order of `W`: lane 4c + p = sc[4p + c].
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn w_order(sc: __m128i) -> __m512i {
    let t = _mm_set_epi8(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    _mm512_cvtepi8_epi32(_mm_shuffle_epi8(sc, t))
}

/// Two-bit fields 2i, 2i+2 (blocks 2p, 2p+1 of half `h`, i = 2(p % 2)) of the 32 bytes at
/// `qs` (Q2_K, Q3_K) moved to bits 0, 1 (the bits above not cleared).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn two_bits(qs: *const u8) -> [__m512i; 4] {
    let mut c = [_mm512_setzero_si512(); 4];
    for p in 0..4 {
        let i = 2 * (p as i64 % 2);
        // SAFETY: qs[32h..32h+32] lies in the block (the caller's contract).
        let q = unsafe { bcast(qs.add(32 * (p / 2))) };
        // 64-bit shifts are safe: bits 0, 1 of each byte come from bits 2i, 2i+1 of it.
        c[p] = _mm512_srlv_epi64(q, halves(2 * i, 2 * i + 2));
    }
    c
}

/// `c[p] = (c[p] & low) | hb` where `hb` is bit 2p (low half) or 2p+1 (high half) of each
/// byte of `bits` moved to bit `to` (64-bit rotations are safe: the kept bit comes from the
/// same byte): the high code bit of Q3_K (`low` = 3, `to` = 2) and Q5_K (15, 4).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn high_bit(c: &mut [__m512i; 4], bits: __m512i, low: i8, to: i64) {
    for p in 0..4 {
        let j = 2 * p as i64;
        let r = halves((to - j).rem_euclid(64), (to - j - 1).rem_euclid(64));
        let hb = _mm512_and_si512(_mm512_rolv_epi64(bits, r), _mm512_set1_epi8(1 << to));
        // (a & c) | b: truth table 0xEC over (a, b, c).
        c[p] = _mm512_ternarylogic_epi32::<0xEC>(c[p], hb, _mm512_set1_epi8(low));
    }
}

/// `block_q2_K { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin; }`.
pub(super) struct Q2K;
impl K for Q2K {
    const KQ: Kq = Kq::Q2K;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: 84 bytes at b.
        unsafe {
            let s = _mm_loadu_si128(b.add(q2_k::SCALES.at).cast());
            let m = _mm_set1_epi8(0x0F);
            const { assert!(q2_k::DMIN.at == q2_k::D.at + 2) };
            Hdr {
                d: _mm256_setzero_ps(),
                dd: d_dmin(b.add(q2_k::D.at)),
                sc: w_order(_mm_and_si128(s, m)),
                c16: _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m)),
                scn: _mm512_cvtepu8_epi32(_mm_and_si128(s, m)),
                sc8: s,
                pw: _mm512_setzero_si512(),
            }
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn codes(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[64] lies in the block.
        let mut c = unsafe { two_bits(b.add(q2_k::QS.at)) };
        for c in &mut c {
            *c = _mm512_and_si512(*c, _mm512_set1_epi8(3));
        }
        c
    }
    const ARRANGED: Option<&'static [u8; 256]> = Some(&GROUPS);
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn arranged(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[64] lies in the block.
        let q = unsafe { _mm512_loadu_si512(b.add(q2_k::QS.at).cast()) };
        field_groups(q).map(|c| _mm512_and_si512(c, _mm512_set1_epi8(3)))
    }
}

/// `block_q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d; }`: u = q + 4.
pub(super) struct Q3K;
impl K for Q3K {
    const KQ: Kq = Kq::Q3K;
    const OFFSETS: Option<(&'static [u8; 16], i32)> = Some((&GROUPS16, 4));
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: 110 bytes at b.
        unsafe {
            let s = q3_scales(b);
            let d = f16x8(b.add(q3_k::D.at));
            Hdr {
                d,
                dd: _mm512_setzero_ps(),
                sc: w_order(s),
                c16: _mm256_slli_epi16(_mm256_cvtepi8_epi16(s), 2),
                scn: _mm512_cvtepi8_epi32(s),
                sc8: s,
                pw: _mm512_setzero_si512(),
            }
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn codes(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[64] and hmask[32] lie in the block.
        unsafe {
            let mut c = two_bits(b.add(q3_k::QS.at));
            high_bit(&mut c, bcast(b.add(q3_k::HMASK.at)), 3, 2);
            c
        }
    }
    const ARRANGED: Option<&'static [u8; 256]> = Some(&GROUPS);
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn arranged(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[64] and hmask[32] lie in the block.
        let (q, hm) = unsafe {
            (
                _mm512_loadu_si512(b.add(q3_k::QS.at).cast()),
                _mm512_castsi256_si512(_mm256_loadu_si256(b.add(q3_k::HMASK.at).cast())),
            )
        };
        // Lane g (block j = g/2) of vector c: hmask[16(g % 2) + 4c ..][..4], bit j rotated
        // to bit 2 (a 32-bit rotation by 2 − j mod 32 keeps it in its byte).
        let rot: [i32; 16] = std::array::from_fn(|g| (2 - g as i32 / 2).rem_euclid(32));
        let idx: [i32; 16] = std::array::from_fn(|g| 4 * (g as i32 % 2));
        // SAFETY: 16 readable i32 each.
        let (rot, idx) = unsafe {
            (
                _mm512_loadu_si512(rot.as_ptr().cast()),
                _mm512_loadu_si512(idx.as_ptr().cast()),
            )
        };
        let mut c = field_groups(q);
        for (i, c) in c.iter_mut().enumerate() {
            let h =
                _mm512_permutexvar_epi32(_mm512_add_epi32(idx, _mm512_set1_epi32(i as i32)), hm);
            let hb = _mm512_and_si512(_mm512_rolv_epi32(h, rot), _mm512_set1_epi8(4));
            // (a & c) | b: truth table 0xEC over (a, b, c).
            *c = _mm512_ternarylogic_epi32::<0xEC>(*c, hb, _mm512_set1_epi8(3));
        }
        c
    }
}

impl ArrangedGfni for Q2K {
    const WORDS: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn arranged_gfni(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[64] lies in the block.
        let q = unsafe { _mm512_loadu_si512(b.add(q2_k::QS.at).cast()) };
        field_groups_gfni(q)
    }
}

/// Q3_K's fields as [`field_groups_gfni`], each lane's hmask bit j (block j = g/2, the 64-bit
/// slot j) moved to bit 2 with the rest cleared by one more `vgf2p8affineqb` (matrix byte
/// 5 = 1 << j), in place of a rotation, a mask and a masking merge.
impl ArrangedGfni for Q3K {
    const WORDS: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn arranged_gfni(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[64] and hmask[32] lie in the block.
        let (q, hm) = unsafe {
            (
                _mm512_loadu_si512(b.add(q3_k::QS.at).cast()),
                _mm512_castsi256_si512(_mm256_loadu_si256(b.add(q3_k::HMASK.at).cast())),
            )
        };
        // Lane g of vector c: hmask[16(g % 2) + 4c ..][..4].
        let idx: [i32; 16] = std::array::from_fn(|g| 4 * (g as i32 % 2));
        // SAFETY: 16 readable i32.
        let idx = unsafe { _mm512_loadu_si512(idx.as_ptr().cast()) };
        let m: [i64; 8] = std::array::from_fn(|j| (1i64 << j) << 40);
        // SAFETY: 8 readable i64.
        let a = unsafe { _mm512_loadu_si512(m.as_ptr().cast()) };
        let mut c = field_groups_gfni(q);
        for (i, c) in c.iter_mut().enumerate() {
            let h =
                _mm512_permutexvar_epi32(_mm512_add_epi32(idx, _mm512_set1_epi32(i as i32)), hm);
            *c = _mm512_or_si512(*c, _mm512_gf2p8affine_epi64_epi8::<0>(h, a));
        }
        c
    }
}

/// Q4_K/Q5_K's low nibbles: block 2p is the low nibble of qs[32p..32p+32], block 2p+1 the
/// high (moved to bits 0..4, the bits above not cleared).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn nibbles(qs: *const u8) -> [__m512i; 4] {
    let mut c = [_mm512_setzero_si512(); 4];
    for p in 0..4 {
        // SAFETY: qs[32p..32p+32] lies in the block (the caller's contract).
        let q = unsafe { bcast(qs.add(32 * p)) };
        c[p] = _mm512_srlv_epi64(q, halves(0, 4));
    }
    c
}

/// Q4_K/Q5_K header (the AVX2 tier's scale decode).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn header_k45(b: *const u8) -> Hdr {
    // SAFETY: the 16 bytes d, dmin, scales[12] at b.
    let v = unsafe { _mm_loadu_si128(b.cast()) };
    let scmn = scmn_k4(v);
    Hdr {
        d: _mm256_setzero_ps(),
        // SAFETY: as above.
        dd: unsafe { d_dmin(b) },
        sc: _mm512_cvtepu8_epi32(scmn),
        c16: _mm256_setzero_si256(),
        scn: _mm512_setzero_si512(),
        sc8: v,
        pw: _mm512_setzero_si512(),
    }
}

/// `block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }`.
pub(super) struct Q4K;
impl K for Q4K {
    const KQ: Kq = Kq::Q4K;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: the caller's contract.
        unsafe { header_k45(b) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn codes(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[128] lies in the block.
        let mut c = unsafe { nibbles(b.add(q4_k::QS.at)) };
        for c in &mut c {
            *c = _mm512_and_si512(*c, _mm512_set1_epi8(0x0F));
        }
        c
    }
    const ARRANGED: Option<&'static [u8; 256]> = Some(&CHUNKS);
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn arranged(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[128] lies in the block.
        let (z0, z1) = unsafe { qs128(b.add(q4_k::QS.at)) };
        nibble_chunks(z0, z1).map(|c| _mm512_and_si512(c, _mm512_set1_epi8(0x0F)))
    }
}

/// `block_q5_K { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }`.
pub(super) struct Q5K;
impl K for Q5K {
    const KQ: Kq = Kq::Q5K;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: the caller's contract.
        unsafe { header_k45(b) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn codes(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[128] and qh[32] lie in the block.
        unsafe {
            let mut c = nibbles(b.add(q5_k::QS.at));
            high_bit(&mut c, bcast(b.add(q5_k::QH.at)), 0x0F, 4);
            c
        }
    }
    const ARRANGED: Option<&'static [u8; 256]> = Some(&CHUNKS);
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn arranged(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[128] lies in the block.
        let (z0, z1) = unsafe { qs128(b.add(q5_k::QS.at)) };
        // qh[32] lies in the block (read below).
        let qh = b.wrapping_add(q5_k::QH.at).cast::<i64>();
        let mut c = nibble_chunks(z0, z1);
        for (i, c) in c.iter_mut().enumerate() {
            // SAFETY: qh[8i..8i + 8] lies in the block.
            let hb = _mm512_and_si512(
                fifth_bits(unsafe { qh.add(i).read_unaligned() }),
                _mm512_set1_epi8(0x10),
            );
            // (a & c) | b: truth table 0xEC over (a, b, c).
            *c = _mm512_ternarylogic_epi32::<0xEC>(*c, hb, _mm512_set1_epi8(0x0F));
        }
        c
    }
}

/// Q5_K's chunk-major fifth bits from qh word c (`h`): slot j takes bit j of each byte
/// (block j's fifth bits) to bit 4 by a 64-bit rotation by 4 − j (mod 64), which keeps it
/// in its byte (the other bits not cleared).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn fifth_bits(h: i64) -> __m512i {
    let r = _mm512_set_epi64(61, 62, 63, 0, 1, 2, 3, 4);
    _mm512_rolv_epi64(_mm512_set1_epi64(h), r)
}

impl ArrangedGfni for Q4K {
    const WORDS: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn arranged_gfni(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[128] lies in the block.
        let (z0, z1) = unsafe { qs128(b.add(q4_k::QS.at)) };
        nibble_chunks_gfni(z0, z1)
    }
}

impl ArrangedGfni for Q5K {
    const WORDS: bool = false;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn arranged_gfni(b: *const u8) -> [__m512i; 4] {
        // SAFETY: qs[128] lies in the block.
        let (z0, z1) = unsafe { qs128(b.add(q5_k::QS.at)) };
        // qh[32] lies in the block (read below).
        let qh = b.wrapping_add(q5_k::QH.at).cast::<i64>();
        let mut c = nibble_chunks_gfni(z0, z1);
        for (i, c) in c.iter_mut().enumerate() {
            // SAFETY: qh[8i..8i + 8] lies in the block.
            let h = fifth_bits(unsafe { qh.add(i).read_unaligned() });
            // a | (b & c): truth table 0xF8 over (a, b, c); the nibbles' bit 4 is clear.
            *c = _mm512_ternarylogic_epi32::<0xF8>(*c, h, _mm512_set1_epi8(0x10));
        }
        c
    }
}

/// A k-quant type whose arranged codes can also be unpacked with GFNI (Q2_K–Q5_K).
pub(super) trait ArrangedGfni: K {
    /// Whether the arranged form's 16-value sums fit 16 bits (Q2_K: |Σ| ≤ 16·3·127 = 6096;
    /// Q3_K, its offset taken off: 16·4·127 = 8128; Q4_K, the two 16-value halves of each
    /// block: 16·15·127 = 30480; not Q5_K, 16·31·127 = 62992), so that one `vpmaddwd`
    /// ([`pair_words`]) scales them and adds the two of each block: the same exact integers.
    const WORDS: bool;
    /// [`K::arranged`] by `vgf2p8affineqb`: the same codes.
    ///
    /// # Safety
    /// As [`K::arranged`], and GFNI available.
    unsafe fn arranged_gfni(b: *const u8) -> [__m512i; 4];
}

/// `U` with its arranged codes unpacked by GFNI ([`ArrangedGfni`]); its passes are compiled
/// with GFNI ([`pass_of`]).
pub(super) struct Gfni<U>(std::marker::PhantomData<U>);
impl<U: ArrangedGfni> K for Gfni<U> {
    const KQ: Kq = U::KQ;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: the caller's contract.
        let mut h = unsafe { U::header(b) };
        if Self::WORDS {
            h.pw = pair_words(U::KQ, h.sc8);
        } else if U::KQ == Kq::Q5K {
            h.sc = _mm512_cvtepu16_epi32(k45_scales(h.sc8));
        }
        h
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn codes(b: *const u8) -> [__m512i; 4] {
        // SAFETY: the caller's contract.
        unsafe { U::codes(b) }
    }
    const ARRANGED: Option<&'static [u8; 256]> = U::ARRANGED;
    const OFFSETS: Option<(&'static [u8; 16], i32)> = U::OFFSETS;
    const GFNI: bool = true;
    const WORDS: bool = <U as ArrangedGfni>::WORDS;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn arranged(b: *const u8) -> [__m512i; 4] {
        // SAFETY: the caller's contract (GFNI: `Self::GFNI`).
        unsafe { U::arranged_gfni(b) }
    }
}

/// `block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }`: u = q + 32.
pub(super) struct Q6K;
impl K for Q6K {
    const KQ: Kq = Kq::Q6K;
    const OFFSETS: Option<(&'static [u8; 16], i32)> = Some((&W_GROUPS, 32));
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: 210 bytes at b.
        unsafe {
            let sc = _mm_loadu_si128(b.add(q6_k::SCALES.at).cast());
            let d = f16x8(b.add(q6_k::D.at));
            Hdr {
                d,
                dd: _mm512_setzero_ps(),
                sc: w_order(sc),
                c16: _mm256_slli_epi16(_mm256_cvtepi8_epi16(sc), 5),
                scn: _mm512_cvtepi8_epi32(sc),
                sc8: _mm_setzero_si128(),
                pw: _mm512_setzero_si512(),
            }
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn codes(b: *const u8) -> [__m512i; 4] {
        // Blocks 4h + i (i = 0..4): low nibble i/2 of ql[64h + 32(i%2) + l], high 2 bits
        // at bit 2i of qh[32h + l]. So C_{2h} takes the low nibbles of ql[64h..64h+64] and
        // C_{2h+1} the high ones; qh[32h..] (both halves) rotated to bits 4, 5.
        let mut c = [_mm512_setzero_si512(); 4];
        for h in 0..2 {
            // SAFETY: ql[64h..64h+64] and qh[32h..32h+32] lie in the block.
            let (ql, qh) = unsafe {
                (
                    _mm512_loadu_si512(b.add(q6_k::QL.at + 64 * h).cast()),
                    bcast(b.add(q6_k::QH.at + 32 * h)),
                )
            };
            let m = _mm512_set1_epi8(0x30);
            // 64-bit rotations are safe: bits 4, 5 of each byte come from the same byte.
            let h0 = _mm512_and_si512(_mm512_rolv_epi64(qh, halves(4, 2)), m);
            let h1 = _mm512_and_si512(_mm512_rolv_epi64(qh, halves(0, 62)), m);
            // (a & 0x0F) | b: truth table 0xEC over (a, b, c = 0x0F).
            let n = _mm512_set1_epi8(0x0F);
            c[2 * h] = _mm512_ternarylogic_epi32::<0xEC>(ql, h0, n);
            c[2 * h + 1] = _mm512_ternarylogic_epi32::<0xEC>(_mm512_srli_epi64(ql, 4), h1, n);
        }
        c
    }
}

/// [`Q6K`] with its codes unpacked by GFNI ([`Q6K::codes`]' rotations and masks of qh as
/// one `vgf2p8affineqb` per vector: each half's bit matrix takes its block's two-bit field
/// to bits 4, 5 and clears the rest; the same codes); its passes are compiled with GFNI
/// ([`pass_of`]).
pub(super) struct Q6KGfni;
impl K for Q6KGfni {
    const KQ: Kq = Kq::Q6K;
    const GFNI: bool = true;
    const OFFSETS: Option<(&'static [u8; 16], i32)> = Q6K::OFFSETS;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: the caller's contract.
        unsafe { Q6K::header(b) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn codes(b: *const u8) -> [__m512i; 4] {
        // Result bits 4, 5 take the field's bits 2f, 2f + 1: matrix bytes 3 and 2.
        let m = |f: i64| (1i64 << (2 * f)) << 24 | (2i64 << (2 * f)) << 16;
        // C_{2h}: fields 0 (low half, block 4h) and 1 (high half, 4h + 1); C_{2h+1}: 2, 3.
        let (a0, a1) = (halves(m(0), m(1)), halves(m(2), m(3)));
        let n = _mm512_set1_epi8(0x0F);
        let mut c = [_mm512_setzero_si512(); 4];
        for h in 0..2 {
            // SAFETY: ql[64h..64h+64] and qh[32h..32h+32] lie in the block.
            let (ql, qh) = unsafe {
                (
                    _mm512_loadu_si512(b.add(q6_k::QL.at + 64 * h).cast()),
                    bcast(b.add(q6_k::QH.at + 32 * h)),
                )
            };
            let h0 = _mm512_gf2p8affine_epi64_epi8::<0>(qh, a0);
            let h1 = _mm512_gf2p8affine_epi64_epi8::<0>(qh, a1);
            // (a & 0x0F) | b: truth table 0xEC over (a, b, c = 0x0F).
            c[2 * h] = _mm512_ternarylogic_epi32::<0xEC>(ql, h0, n);
            c[2 * h + 1] = _mm512_ternarylogic_epi32::<0xEC>(_mm512_srli_epi64(ql, 4), h1, n);
        }
        c
    }
}

/// `W` from the four `vpdpbusd` results (module docs): lane 4c + p = the sum of 128-bit
/// chunk c of `v[p]`, times its per-16 scale (Q2_K, Q3_K, Q6_K; Q4_K, Q5_K unscaled).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn reduce<U: K>(v: [__m512i; 4], sc: __m512i) -> __m512i {
    scaled::<U>(group_sums(v), sc)
}

/// `W` before the scales: lane 4c + p = the sum of 128-bit chunk c of `v[p]`. Every lane
/// of `v` fits 16 bits (four products of a code ≤ 63 and an activation code ≥ −128: ≤ 32256), so
/// `vpackssdw` packs two vectors exactly and one `vpmaddwd` by ones adds lane pairs; two
/// `vshufps` and an add finish the transpose (where four `vpunpck*dq`, two `vpunpck*qdq`
/// and three adds were: Zen 4, Q6_K M = 4 56.8 → 61.4 GMAC/s, M = 1 even).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn group_sums(v: [__m512i; 4]) -> __m512i {
    let ones = _mm512_set1_epi16(1);
    // Per 128-bit chunk c: lanes (v0[4c] + v0[4c+1], v0[4c+2] + v0[4c+3], the same of v1).
    let m01 = _mm512_castsi512_ps(_mm512_madd_epi16(_mm512_packs_epi32(v[0], v[1]), ones));
    let m23 = _mm512_castsi512_ps(_mm512_madd_epi16(_mm512_packs_epi32(v[2], v[3]), ones));
    // Chunk c: (first pairs of v0..v3) + (second pairs of v0..v3).
    _mm512_add_epi32(
        _mm512_castps_si512(_mm512_shuffle_ps::<0x88>(m01, m23)),
        _mm512_castps_si512(_mm512_shuffle_ps::<0xDD>(m01, m23)),
    )
}

/// The offsets of Q3_K's and Q6_K's codes (u = q + o) taken off: with `arranged` and
/// [`K::OFFSETS`], the per-16 sums `sums` less the activation's offset terms at `off` (16
/// i32 in the lane order of `sums`), Σ(u − o)·x per group, and zero; else `sums` as they
/// are and the scaled offsets per block, `vpmaddwd(c16, Σx16)` (`s16`), for the caller to
/// subtract from its block sums. The same exact integers either way.
///
/// # Safety
/// With `arranged` and [`K::OFFSETS`], 16 readable i32 at `off`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn less_offsets<U: K>(
    sums: __m512i,
    arranged: bool,
    off: *const i32,
    h: &Hdr,
    s16: __m256i,
) -> (__m512i, __m256i) {
    if arranged && U::OFFSETS.is_some() {
        // SAFETY: the caller's 16 i32.
        let o = unsafe { _mm512_loadu_si512(off.cast()) };
        (_mm512_sub_epi32(sums, o), _mm256_setzero_si256())
    } else {
        (sums, _mm256_madd_epi16(h.c16, s16))
    }
}

/// The per-16 sums `w` times their scales `sc` (Q2_K, Q3_K, Q6_K; Q4_K, Q5_K unscaled).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn scaled<U: K>(w: __m512i, sc: __m512i) -> __m512i {
    match U::KQ {
        Kq::Q4K | Kq::Q5K => w,
        Kq::Q2K => q2k_scaled(w, sc),
        _ => _mm512_mullo_epi32(w, sc),
    }
}

/// Q2_K's 16-value group sums `v` (|v| ≤ 16·3·127 < 2¹⁵) times their 4-bit scales `sc`
/// (i32 lanes 0..15, high 16 bits zero), lane by lane and exact: one `vpmaddwd`, whose
/// high-half products are zero (v's sign bits times 0), where `vpmulld` takes two µops
/// on Intel cores.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn q2k_scaled(v: __m512i, sc: __m512i) -> __m512i {
    _mm512_madd_epi16(v, sc)
}

/// Chunks (0, 1) and (2, 3) of `W` are the groups of blocks 2p and 2p+1: block j is lane
/// `FIRST[j]` = 8(j % 2) + j / 2 (its first group) plus the lane 4 further on.
const FIRST: [i32; 8] = [0, 8, 1, 9, 2, 10, 3, 11];

/// Lane j = block j's sum from `W`: lane l plus lane l + 4 (one `valignd`/`vshufi64x2` and
/// an add), then one `vpermd` to lane j. Left to itself the compiler turns this into two
/// permutes of `W` and two more to merge them (Zen 4: Q6_K M = 1 40.9 → 43.5 GMAC/s,
/// M = 4 +8%, in the form kept here).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn blocks(w: __m512i) -> __m256i {
    let f = FIRST;
    let pairs = opaque(_mm512_add_epi32(w, _mm512_alignr_epi32::<4>(w, w)));
    let i = _mm512_set_epi32(
        0, 0, 0, 0, 0, 0, 0, 0, f[7], f[6], f[5], f[4], f[3], f[2], f[1], f[0],
    );
    _mm512_castsi512_si256(_mm512_permutexvar_epi32(i, pairs))
}

/// `v` unchanged, through an empty inline-assembly template: the compiler cannot see
/// through it, so it keeps the shuffles on either side as written.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn opaque(mut v: __m512i) -> __m512i {
    // SAFETY: an empty template that reads and writes nothing but the register it is given.
    unsafe {
        std::arch::asm!(
            "/* {v} */",
            v = inout(zmm_reg) v,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    v
}

/// Lanes 0..8: block j's sum from `W` (as [`blocks`]); lanes 8..16: `hi`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn blocks_and(w: __m512i, hi: __m256i) -> __m512i {
    let f = FIRST;
    let i0 = _mm512_set_epi32(
        23, 22, 21, 20, 19, 18, 17, 16, f[7], f[6], f[5], f[4], f[3], f[2], f[1], f[0],
    );
    let i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(4));
    _mm512_add_epi32(
        _mm512_permutex2var_epi32(w, i0, _mm512_castsi256_si512(hi)),
        _mm512_maskz_permutexvar_epi32(0x00FF, i1, w),
    )
}

/// The factors of [`packed`]'s words, as i16 (`vpmaddwd` multiplies word pairs and adds
/// each pair): Q2_K, words g and 16 + g: the 4-bit scale and min of group g (dword j =
/// groups 2j, 2j + 1 of block j); Q4_K, words 2j, 2j + 1: the 6-bit scale of block j (its
/// two halves), 16 + 2j, 17 + 2j: its min; Q3_K, words g < 16: the signed scale of group g.
/// From [`Hdr::sc8`]: for Q2_K one `vpermb` spreads its bytes to words (their high bytes
/// zeroed) and one `vgf2p8affineqb` takes the scales' nibble (words 0..16) or the mins'
/// (16..32); Q3_K's widen by one `vpmovsxbw`; Q4_K's come from [`k45_scales`], each word
/// doubled by one `vpermw`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
fn pair_words(kq: Kq, sc8: __m128i) -> __m512i {
    match kq {
        Kq::Q3K => return _mm512_castsi256_si512(_mm256_cvtepi8_epi16(sc8)),
        Kq::Q4K => {
            let dup: [u16; 32] = std::array::from_fn(|t| t as u16 / 2);
            // SAFETY: 64 readable bytes.
            let dup = unsafe { _mm512_loadu_si512(dup.as_ptr().cast()) };
            return _mm512_permutexvar_epi16(dup, _mm512_castsi256_si512(k45_scales(sc8)));
        }
        _ => {}
    }
    // Q2_K: byte 2w of the result = byte w mod 16 of sc8, byte 2w + 1 = 0.
    let idx: [u8; 64] = std::array::from_fn(|b| (b / 2 % 16) as u8);
    // SAFETY: 64 readable bytes.
    let idx = unsafe { _mm512_loadu_si512(idx.as_ptr().cast()) };
    let t = _mm512_maskz_permutexvar_epi8(0x5555_5555_5555_5555, idx, _mm512_castsi128_si512(sc8));
    // Matrix byte 7 − i selects the source bits of result bit i: bits 0..4 kept (the
    // scales, 64-bit slots 0..4) or bits 4..8 moved to 0..4 (the mins, slots 4..8).
    const LO: i64 = 0x0102_0408_0000_0000;
    const HI: i64 = 0x1020_4080_0000_0000;
    let a = _mm512_set_epi64(HI, HI, HI, HI, LO, LO, LO, LO);
    _mm512_gf2p8affine_epi64_epi8::<0>(t, a)
}

/// Q4_K's and Q5_K's 6-bit scales and mins (the values of `scmn_k4`) as 16 words (w < 8:
/// the scale of sub-block w, 8 + j: the min of sub-block j) straight from the block's first
/// 16 bytes `v` (d, dmin, scales[12]), in four 256-bit instructions where `scmn_k4` took
/// eight 128-bit ones: one `vpermb` places, per word, the byte of its low field and the
/// byte of its top two bits (sub-blocks 4..8); one `vpmultishiftqb` moves each byte's
/// field to bit 0 (low field: shift 0 or 4; top bits: shift 6), one mask keeps it (6 or 4
/// bits; 2 bits or none), and one `vpmaddubsw` by (1, 16) forms low + 16·top per word.
/// Q4_K's GFNI form doubles each word into its [`pair_words`] pair (one `vpermw`), Q5_K's
/// widens them to its i32 lanes ([`Hdr::sc`]).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
fn k45_scales(v: __m128i) -> __m256i {
    // scales[k] is byte 4 + k of v.
    let mut idx = [0u8; 32];
    let mut ctl = [0u8; 32];
    let mut mask = [0u8; 32];
    for w in 0..16 {
        let (min, j) = (w >= 8, w % 8);
        // (low byte, its shift, its mask, top byte)
        let (lo, sh, m, top) = match (min, j < 4) {
            (false, true) => (4 + j, 0, 0x3F, None),
            (true, true) => (8 + j, 0, 0x3F, None),
            (false, false) => (8 + j, 0, 0x0F, Some(j)),
            (true, false) => (8 + j, 4, 0x0F, Some(4 + j)),
        };
        let at = 2 * (w % 4);
        idx[2 * w] = lo as u8;
        ctl[2 * w] = (8 * at + sh) as u8;
        mask[2 * w] = m;
        idx[2 * w + 1] = top.unwrap_or(lo) as u8;
        ctl[2 * w + 1] = (8 * (at + 1) + 6) as u8;
        mask[2 * w + 1] = if top.is_some() { 3 } else { 0 };
    }
    // SAFETY (the loads): 32 readable bytes each.
    let (idx, ctl, mask) = unsafe {
        (
            _mm256_loadu_si256(idx.as_ptr().cast()),
            _mm256_loadu_si256(ctl.as_ptr().cast()),
            _mm256_loadu_si256(mask.as_ptr().cast()),
        )
    };
    let t = _mm256_permutexvar_epi8(idx, _mm256_castsi128_si256(v));
    let f = _mm256_and_si256(_mm256_multishift_epi64_epi8(ctl, t), mask);
    _mm256_maddubs_epi16(f, _mm256_set1_epi16(0x1001))
}

/// The arranged `V` (lane L < 16: a 16-value sum that fits 16 bits, [`ArrangedGfni::WORDS`])
/// and the 16 per-16 sums Σx16 as 32 words: word L = the low word of lane L (the whole
/// sum), word 16 + g = Σx16[g]. One `vpermt2w`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn packed(v: __m512i, s16: __m256i) -> __m512i {
    let idx: [u16; 32] = std::array::from_fn(|w| if w < 16 { 2 * w as u16 } else { 16 + w as u16 });
    // SAFETY: 64 readable bytes.
    let idx = unsafe { _mm512_loadu_si512(idx.as_ptr().cast()) };
    _mm512_permutex2var_epi16(v, idx, _mm512_castsi256_si512(s16))
}

/// Lanes 0..8: block j's sum from the chunk-major `V` (lanes 2j and 2j + 1); lanes 8..16:
/// `hi`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn fold(v: __m512i, hi: __m256i) -> __m512i {
    let pairs = _mm512_add_epi32(v, _mm512_srli_epi64(v, 32));
    let i = _mm512_set_epi32(23, 22, 21, 20, 19, 18, 17, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    _mm512_permutex2var_epi32(pairs, i, _mm512_castsi256_si512(hi))
}

/// Weight rows `ws` against every q8_1 row `xs`: `out[i·M + r]`. `gfni`: Q2_K–Q5_K
/// unpack their arranged codes with GFNI ([`Gfni`]), Q6_K its codes ([`Q6KGfni`]); the
/// same bits.
///
/// # Safety
/// AVX-512 F/BW/VL/VNNI and AVX2/FMA/F16C available, and GFNI where `gfni`; every row of
/// `ws` holds the super-blocks of every row of `xs` (whole super-blocks, K a multiple of
/// 256); `out.len() == ws.len() · xs.len()`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group(
    kq: Kq,
    gfni: bool,
    ws: &[&[u8]],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    // SAFETY (all calls): the caller's contract.
    unsafe {
        match (kq, gfni) {
            (Kq::Q2K, false) => group::<Q2K>(ws, xs, out),
            (Kq::Q2K, true) => group::<Gfni<Q2K>>(ws, xs, out),
            (Kq::Q3K, false) => group::<Q3K>(ws, xs, out),
            (Kq::Q3K, true) => group::<Gfni<Q3K>>(ws, xs, out),
            (Kq::Q4K, false) => group::<Q4K>(ws, xs, out),
            (Kq::Q4K, true) => group::<Gfni<Q4K>>(ws, xs, out),
            (Kq::Q5K, false) => group::<Q5K>(ws, xs, out),
            (Kq::Q5K, true) => group::<Gfni<Q5K>>(ws, xs, out),
            (Kq::Q6K, false) => group::<Q6K>(ws, xs, out),
            (Kq::Q6K, true) => group::<Q6KGfni>(ws, xs, out),
        }
    }
}

/// The weight rows (in pairs where M > 1) against the activation rows in passes of at
/// most four. With one pass (M ≤ 4) a single call takes every row of the group, and where
/// there are more passes, each call takes one pair or row (whose codes then stay in L1
/// from pass to pass). One call per row measured 4–6% slower at M = 1 in L3, up to 30%
/// with K = 1024, on Zen 4.
///
/// # Safety
/// As [`dot_row_group`] (GFNI available where `U::GFNI`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn group<U: K>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    let m = xs.len();
    let pairs = if m > 1 { ws.len() / 2 * 2 } else { 0 };
    let mut i = 0;
    while i < ws.len() {
        let (rw, last) = if i < pairs { (2, pairs) } else { (1, ws.len()) };
        let end = if m <= 4 { last } else { i + rw };
        let (w, o) = (&ws[i..end], &mut out[i * m..end * m]);
        // SAFETY (both calls): the caller's contract; `w.len()` is a multiple of `rw`.
        unsafe {
            if rw == 2 {
                rows::<U, 2>(w, xs, o)
            } else {
                rows::<U, 1>(w, xs, o)
            }
        }
        i = end;
    }
}

/// Every weight row of `ws`, RW at a time, against every activation row, in passes of at
/// most four; chunk-major or group-major ([`K::ARRANGED`]) where the type has that form
/// and the rows are arranged for it.
///
/// # Safety
/// As [`dot_row_group`], with `ws.len()` a multiple of RW.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn rows<U: K, const RW: usize>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    // SAFETY: the caller's contract.
    unsafe {
        let arranged = (U::ARRANGED.is_some() || U::OFFSETS.is_some())
            && (U::ARRANGED.is_none() || xs.iter().all(|x| !x.pairs.is_empty()))
            && (U::OFFSETS.is_none() || xs.iter().all(|x| !x.offsets.is_empty()));
        if arranged {
            passes::<U, RW, true>(ws, xs, out)
        } else {
            passes::<U, RW, false>(ws, xs, out)
        }
    }
}

/// [`rows`] in one form.
///
/// # Safety
/// As [`rows`]; with `CH`, every row of `xs` arranged by [`K::ARRANGED`] and [`K::OFFSETS`]
/// (those the type has).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn passes<U: K, const RW: usize, const CH: bool>(
    ws: &[&[u8]],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    let m = xs.len();
    let mut r = 0;
    // SAFETY (all calls): the caller's contract.
    unsafe {
        while r + 4 <= m {
            pass_of::<U, RW, 4, CH>(ws, &xs[r..r + 4], &mut out[r..], m);
            r += 4;
        }
        match m - r {
            3 => pass_of::<U, RW, 3, CH>(ws, &xs[r..], &mut out[r..], m),
            2 => pass_of::<U, RW, 2, CH>(ws, &xs[r..], &mut out[r..], m),
            1 => pass_of::<U, RW, 1, CH>(ws, &xs[r..], &mut out[r..], m),
            _ => {}
        }
    }
}

/// [`pass`] as a function of its own, compiled with GFNI as well where `U` needs it
/// ([`K::GFNI`]: `pass` is then inlined into a caller with GFNI, where `U`'s GFNI code can
/// be inlined too).
///
/// # Safety
/// As [`pass`] but with `ws.len()` a multiple of RW; with [`K::GFNI`], the CPU has GFNI.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn pass_of<U: K, const RW: usize, const RX: usize, const CH: bool>(
    ws: &[&[u8]],
    xs: &[Row<'_>],
    out: &mut [f32],
    stride: usize,
) {
    /// [`pass`] over the rows, compiled with the tier's features.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn plain<U: K, const RW: usize, const RX: usize, const CH: bool>(
        ws: &[&[u8]],
        xs: &[Row<'_>],
        out: &mut [f32],
        stride: usize,
    ) {
        for (j, w) in ws.chunks_exact(RW).enumerate() {
            // SAFETY: the caller's contract.
            unsafe { pass::<U, RW, RX, CH>(w, xs, &mut out[j * RW * stride..], stride) }
        }
    }
    /// [`pass`] over the rows, compiled with the tier's features and GFNI.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
    unsafe fn gfni<U: K, const RW: usize, const RX: usize, const CH: bool>(
        ws: &[&[u8]],
        xs: &[Row<'_>],
        out: &mut [f32],
        stride: usize,
    ) {
        for (j, w) in ws.chunks_exact(RW).enumerate() {
            // SAFETY: the caller's contract.
            unsafe { pass::<U, RW, RX, CH>(w, xs, &mut out[j * RW * stride..], stride) }
        }
    }
    // SAFETY: the caller's contract.
    unsafe {
        if U::GFNI {
            gfni::<U, RW, RX, CH>(ws, xs, out, stride)
        } else {
            plain::<U, RW, RX, CH>(ws, xs, out, stride)
        }
    }
}

/// RW weight rows `ws` against RX activation rows: `out[i·stride + r]`; with `CH`, in the
/// arranged form where the type has one (the codes `D_c`, the activation codes from
/// [`Row::pairs`]) and with the offset terms where it has them ([`Row::offsets`]).
///
/// # Safety
/// As [`dot_row_group`], with `ws.len() == RW`, `xs.len() == RX`; with `CH`,
/// `U::ARRANGED` or `U::OFFSETS` is some (the lengths of what they read are checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn pass<U: K, const RW: usize, const RX: usize, const CH: bool>(
    ws: &[&[u8]],
    xs: &[Row<'_>],
    out: &mut [f32],
    stride: usize,
) {
    let bb = U::KQ.block_bytes();
    let nsb = xs[0].d.len() / 8;
    let pf = PF_ROWS * nsb * bb;
    let prefetch = prefetches(RW, nsb);
    // One up-front check per row: the pointer reads below stay in bounds.
    let wp: [*const u8; RW] = std::array::from_fn(|i| {
        assert!(ws[i].len() >= nsb * bb);
        ws[i].as_ptr()
    });
    for x in xs {
        assert!(x.qs.len() >= 256 * nsb && x.d.len() >= 8 * nsb && x.sum16.len() >= 16 * nsb);
        assert!(!CH || U::ARRANGED.is_none() || x.pairs.len() >= 256 * nsb);
        assert!(!CH || U::ARRANGED.is_none() || x.sum.len() >= 8 * nsb);
        assert!(!CH || U::OFFSETS.is_none() || x.offsets.len() >= 16 * nsb);
    }
    // With `CH`, the arranged codes, or the natural ones and the offset terms.
    let ch = CH && U::ARRANGED.is_some();
    let xq: [*const i8; RX] =
        std::array::from_fn(|r| if ch { xs[r].pairs } else { xs[r].qs }.as_ptr());
    let xoff: [*const i32; RX] = std::array::from_fn(|r| xs[r].offsets.as_ptr());
    let xsum: [*const i32; RX] = std::array::from_fn(|r| xs[r].sum.as_ptr());
    let xd: [*const f32; RX] = std::array::from_fn(|r| xs[r].d.as_ptr());
    let xs16: [*const i16; RX] = std::array::from_fn(|r| xs[r].sum16.as_ptr());
    // Q3_K, Q6_K: lane j of `acc`; Q2_K, Q4_K, Q5_K: acc[j] in lane j of `accz`, accm[j]
    // in lane 8 + j (the fmas are lane-wise: the same roundings).
    let mut acc = [[_mm256_setzero_ps(); RX]; RW];
    let mut accz = [[_mm512_setzero_ps(); RX]; RW];
    // Stage 1 of super-block sb: the headers, and the `vpdpbusd` sums of every (weight row,
    // activation row) pair (arranged: their one sum in `v[0]`; natural: the four `V_p`).
    let sums = |sb: usize, prefetch: bool| {
        // SAFETY (all): super-block sb lies in every weight row and every activation row.
        unsafe {
            if prefetch {
                for i in 0..RW {
                    super::prefetch_l2(wp[i].add(bb * sb).wrapping_add(pf), bb);
                }
            }
            let mut h = [U::header(wp[0].add(bb * sb)); RW];
            let mut c = [[_mm512_setzero_si512(); 4]; RW];
            for i in 0..RW {
                let b = wp[i].add(bb * sb);
                h[i] = U::header(b);
                c[i] = if ch { U::arranged(b) } else { U::codes(b) };
            }
            let mut v = [[[_mm512_setzero_si512(); 4]; RX]; RW];
            for r in 0..RX {
                let x = xq[r].add(256 * sb);
                let mut xv = [_mm512_setzero_si512(); 4];
                for p in 0..4 {
                    xv[p] = _mm512_loadu_si512(x.add(64 * p).cast());
                }
                for i in 0..RW {
                    let c = &c[i];
                    if ch {
                        // One sum over the four vectors: chunk-major, block j in lanes
                        // 2j, 2j + 1; group-major, 16-value group g in lane g.
                        for p in 0..4 {
                            v[i][r][0] = _mm512_dpbusd_epi32(v[i][r][0], c[p], xv[p]);
                        }
                    } else {
                        for p in 0..4 {
                            v[i][r][p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c[p], xv[p]);
                        }
                    }
                }
            }
            (h, v)
        }
    };
    // Stage 2: the sums to block sums, scaled, into the accumulators.
    let mut blocks_into = |sb: usize, h: &[Hdr; RW], v: &[[[__m512i; 4]; RX]; RW]| {
        // SAFETY (all): super-block sb lies in every activation row.
        unsafe {
            for r in 0..RX {
                let s16 = _mm256_loadu_si256(xs16[r].add(16 * sb).cast());
                let dx = xd[r].add(8 * sb);
                for i in 0..RW {
                    let h = &h[i];
                    if ch {
                        let v = v[i][r][0];
                        let dx2 = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(
                            _mm256_loadu_ps(dx),
                        )));
                        match U::KQ {
                            Kq::Q2K | Kq::Q4K if U::WORDS => {
                                // Lane j: S_j, lane 8 + j: M_j (Q2_K: Σ m·Σx16 over the
                                // block's two groups; Q4_K: m_j times Σx16[2j] + Σx16[2j+1]).
                                let z = _mm512_madd_epi16(packed(v, s16), h.pw);
                                let ds = _mm512_mul_ps(h.dd, dx2);
                                accz[i][r] = _mm512_fmadd_ps(ds, _mm512_cvtepi32_ps(z), accz[i][r]);
                            }
                            Kq::Q4K | Kq::Q5K => {
                                // Lanes 8..16: the blocks' Σx, times the mins.
                                let sums = _mm256_loadu_si256(xsum[r].add(8 * sb).cast());
                                let z = _mm512_mullo_epi32(fold(v, sums), h.sc);
                                let ds = _mm512_mul_ps(h.dd, dx2);
                                accz[i][r] = _mm512_fmadd_ps(ds, _mm512_cvtepi32_ps(z), accz[i][r]);
                            }
                            Kq::Q2K => {
                                let m = _mm256_madd_epi16(h.c16, s16);
                                let z = fold(q2k_scaled(v, h.scn), m);
                                let ds = _mm512_mul_ps(h.dd, dx2);
                                accz[i][r] = _mm512_fmadd_ps(ds, _mm512_cvtepi32_ps(z), accz[i][r]);
                            }
                            _ => {
                                // Q3_K: V less 4·Σx16 per group (group order).
                                let off = xoff[r].wrapping_add(16 * sb);
                                let (v, late) = less_offsets::<U>(v, true, off, h, s16);
                                let s = if U::WORDS {
                                    // The 16 sums as words (`vpmovdw`), times the scales,
                                    // the two groups of each block added.
                                    let w = _mm512_cvtepi32_epi16(v);
                                    _mm256_madd_epi16(w, _mm512_castsi512_si256(h.pw))
                                } else {
                                    let z =
                                        fold(_mm512_mullo_epi32(v, h.scn), _mm256_setzero_si256());
                                    _mm256_sub_epi32(_mm512_castsi512_si256(z), late)
                                };
                                let ds = _mm256_mul_ps(h.d, _mm512_castps512_ps256(dx2));
                                acc[i][r] = _mm256_fmadd_ps(ds, _mm256_cvtepi32_ps(s), acc[i][r]);
                            }
                        }
                        continue;
                    }
                    // With `CH`, Q6_K: W less 32·Σx16 per group (W's order).
                    let off = xoff[r].wrapping_add(16 * sb);
                    let (g, late) = less_offsets::<U>(group_sums(v[i][r]), CH, off, h, s16);
                    let w = scaled::<U>(g, h.sc);
                    if U::KQ.has_min() {
                        // Lanes 8..16: M_j (Q2_K: the per-16 mins against Σx16; Q4_K, Q5_K:
                        // the 32-value sums Σx16[2j] + Σx16[2j+1], times the min below).
                        let m = match U::KQ {
                            Kq::Q2K => _mm256_madd_epi16(h.c16, s16),
                            _ => _mm256_madd_epi16(s16, _mm256_set1_epi16(1)),
                        };
                        let z = blocks_and(w, m);
                        let z = match U::KQ {
                            Kq::Q2K => z,
                            _ => _mm512_mullo_epi32(z, h.sc),
                        };
                        let dx2 = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(
                            _mm256_loadu_ps(dx),
                        )));
                        let ds = _mm512_mul_ps(h.dd, dx2);
                        accz[i][r] = _mm512_fmadd_ps(ds, _mm512_cvtepi32_ps(z), accz[i][r]);
                    } else {
                        let s = _mm256_sub_epi32(blocks(w), late);
                        let ds = _mm256_mul_ps(h.d, _mm256_loadu_ps(dx));
                        acc[i][r] = _mm256_fmadd_ps(ds, _mm256_cvtepi32_ps(s), acc[i][r]);
                    }
                }
            }
        }
    };
    if RW * RX == 1 && pipelines::<U>() {
        // One pair: software-pipelined two deep, super-block sb + 2's sums issued before
        // sb's block sums, so that the long chain of each finds its operands ready. Two
        // copies of the loop, with and without the prefetch (a test in the loop measured
        // up to 2.5% slower).
        let into = |sb: usize, (h, v): &([Hdr; RW], _)| blocks_into(sb, h, v);
        if prefetch {
            two_deep(nsb, |sb| sums(sb, true), into)
        } else {
            two_deep(nsb, |sb| sums(sb, false), into)
        }
    } else {
        for sb in 0..nsb {
            let (h, v) = sums(sb, prefetch);
            blocks_into(sb, &h, &v);
        }
    }
    for i in 0..RW {
        for r in 0..RX {
            out[i * stride + r] = if U::KQ.has_min() {
                // Lanes 0..8 `acc`, 8..16 `accm`.
                let z = accz[i][r];
                let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(z)));
                finish_m256(U::KQ, _mm512_castps512_ps256(z), hi)
            } else {
                finish_m256(U::KQ, acc[i][r], acc[i][r])
            };
        }
    }
}

/// The q8_K profile (`gguf_q8k` module docs' order): weight rows `ws` against
/// every q8_K row `xs`, `out[i·M + r]`. Per super-block the arranged form's `V` (module
/// docs), times the scales lane by lane (Q4_K/Q5_K: sub-block j's scale in lanes 2j,
/// 2j + 1; Q2_K/Q3_K: group g's in lane g; the GFNI form of Q2_K–Q4_K by one `vpmaddwd`
/// of the word pairs [`Hdr::pw`], as the q8_1 pass: Zen 4, M = 1, Q2_K +8%, Q4_K +12%), or
/// Q6_K's `W` (natural order), is summed across lanes to the exact `S_sb` (Q3_K, Q6_K less the offset times Σ sc·Σx16 through
/// the 16-value sums), beside `M_sb = Σ m·Σx16` (Q2_K, Q4_K, Q5_K); lane 0 of the
/// accumulator takes `fma(d·dx, f32(S_sb), acc)` and lane 8 `fma(dmin·dx, f32(M_sb),
/// accm)`. Q2_K against one activation row is software-pipelined two super-blocks deep
/// ([`pass_q8k`]). `gfni` as for [`dot_row_group`].
///
/// # Safety
/// AVX-512 F/BW/VL/VNNI and AVX2/FMA/F16C available, and GFNI where `gfni`; where
/// [`arrangement`]`(kq)` is some,
/// every row of `xs` is arranged by it; every row of `ws` holds the super-blocks of every
/// row of `xs`; `out.len() == ws.len() · xs.len()`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group_q8k(
    kq: Kq,
    gfni: bool,
    ws: &[&[u8]],
    xs: &[crate::linear::q8_k::Row<'_>],
    out: &mut [f32],
) {
    // SAFETY (all calls): the caller's contract.
    unsafe {
        match (kq, gfni) {
            (Kq::Q2K, false) => group_q8k::<Q2K>(ws, xs, out),
            (Kq::Q2K, true) => group_q8k::<Gfni<Q2K>>(ws, xs, out),
            (Kq::Q3K, false) => group_q8k::<Q3K>(ws, xs, out),
            (Kq::Q3K, true) => group_q8k::<Gfni<Q3K>>(ws, xs, out),
            (Kq::Q4K, false) => group_q8k::<Q4K>(ws, xs, out),
            (Kq::Q4K, true) => group_q8k::<Gfni<Q4K>>(ws, xs, out),
            (Kq::Q5K, false) => group_q8k::<Q5K>(ws, xs, out),
            (Kq::Q5K, true) => group_q8k::<Gfni<Q5K>>(ws, xs, out),
            (Kq::Q6K, false) => group_q8k::<Q6K>(ws, xs, out),
            (Kq::Q6K, true) => group_q8k::<Q6KGfni>(ws, xs, out),
        }
    }
}

/// [`dot_row_group_q8k`] for the type `U`: the weight rows against the activation rows in
/// passes of at most four; with one pass (M ≤ 4) a single call takes every weight row (as
/// [`group`]), else each call one row, whose codes stay in L1 from pass to pass.
///
/// # Safety
/// As [`dot_row_group_q8k`] (GFNI available where `U::GFNI`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn group_q8k<U: K>(ws: &[&[u8]], xs: &[crate::linear::q8_k::Row<'_>], out: &mut [f32]) {
    let m = xs.len();
    // SAFETY (all calls): the caller's contract.
    unsafe {
        let one_pass =
            |ws: &[&[u8]], xs: &[crate::linear::q8_k::Row<'_>], out: &mut [f32]| match xs.len() {
                4 => pass_q8k_of::<U, 4>(ws, xs, out, m),
                3 => pass_q8k_of::<U, 3>(ws, xs, out, m),
                2 => pass_q8k_of::<U, 2>(ws, xs, out, m),
                1 => pass_q8k_of::<U, 1>(ws, xs, out, m),
                _ => {}
            };
        if m <= 4 {
            one_pass(ws, xs, out);
            return;
        }
        for (i, w) in ws.iter().enumerate() {
            let w = std::slice::from_ref(w);
            for (r, x) in xs.chunks(4).enumerate() {
                one_pass(w, x, &mut out[i * m + 4 * r..]);
            }
        }
    }
}

/// [`pass_q8k`] over the weight rows `ws` (`out[i·stride + r]`) as a function of its own,
/// compiled with GFNI as well where `U` needs it (as [`pass_of`]).
///
/// # Safety
/// As [`pass_q8k`] for each row of `ws`; with [`K::GFNI`], the CPU has GFNI.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn pass_q8k_of<U: K, const RX: usize>(
    ws: &[&[u8]],
    xs: &[crate::linear::q8_k::Row<'_>],
    out: &mut [f32],
    stride: usize,
) {
    /// [`pass_q8k`] over the rows, compiled with the tier's features.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn plain<U: K, const RX: usize>(
        ws: &[&[u8]],
        xs: &[crate::linear::q8_k::Row<'_>],
        out: &mut [f32],
        stride: usize,
    ) {
        for (i, w) in ws.iter().enumerate() {
            // SAFETY: the caller's contract.
            unsafe { pass_q8k::<U, RX>(w, xs, &mut out[i * stride..]) }
        }
    }
    /// [`pass_q8k`] over the rows, compiled with the tier's features and GFNI.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
    unsafe fn gfni<U: K, const RX: usize>(
        ws: &[&[u8]],
        xs: &[crate::linear::q8_k::Row<'_>],
        out: &mut [f32],
        stride: usize,
    ) {
        for (i, w) in ws.iter().enumerate() {
            // SAFETY: the caller's contract.
            unsafe { pass_q8k::<U, RX>(w, xs, &mut out[i * stride..]) }
        }
    }
    // SAFETY: the caller's contract.
    unsafe {
        if U::GFNI {
            gfni::<U, RX>(ws, xs, out, stride)
        } else {
            plain::<U, RX>(ws, xs, out, stride)
        }
    }
}

/// Super-block sb's `vpdpbusd` sums `v` of a weight row against q8_K row `x` (arranged:
/// their one sum in `v[0]`; natural: the four `V_p`) to its `S_sb` and `M_sb` terms, added
/// to the accumulator `acc` (lane 0: the S chain, lane 8: the M chain).
///
/// # Safety
/// Super-block sb lies in `x`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn q8k_into<U: K>(
    x: &crate::linear::q8_k::Row<'_>,
    sb: usize,
    h: &Hdr,
    v: &[__m512i; 4],
    acc: __m512,
) -> __m512 {
    let arranged = U::ARRANGED.is_some();
    // SAFETY (all): super-block sb lies in `x`.
    unsafe {
        let b16 = _mm256_loadu_si256(x.bsums.as_ptr().add(16 * sb).cast());
        // Sub-block j's scale to lanes 2j, 2j + 1; its min (lane 8 + j of `Hdr::sc`) to the
        // i16 pair 2j, 2j + 1.
        let dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
        let mdup = _mm256_set_epi16(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
        let t = if arranged && U::WORDS {
            // As the q8_1 pass's word pairs: the group sums fit 16 bits against
            // q8_K codes too (|x| ≤ 127: Q2_K ≤ 6096, Q3_K's unsigned codes ≤
            // 14224, Q4_K's halves ≤ 30480).
            let v = v[0];
            if U::KQ == Kq::Q3K {
                // Lane j: the block's two groups times their scales, less their
                // offsets 4·sc·Σx16.
                let w = _mm512_cvtepi32_epi16(v);
                let s8 = _mm256_madd_epi16(w, _mm512_castsi512_si256(h.pw));
                _mm512_zextsi256_si512(_mm256_sub_epi32(s8, _mm256_madd_epi16(h.c16, b16)))
            } else {
                // Lane j: S_j, lane 8 + j: M_j.
                _mm512_madd_epi16(packed(v, b16), h.pw)
            }
        } else {
            let (wv, m8) = if arranged {
                let v = v[0];
                match U::KQ {
                    Kq::Q4K | Kq::Q5K => {
                        let sc16 = _mm512_cvtepi32_epi16(h.sc);
                        let mins = _mm256_permutexvar_epi16(mdup, sc16);
                        (
                            _mm512_mullo_epi32(v, _mm512_permutexvar_epi32(dup, h.sc)),
                            _mm256_madd_epi16(mins, b16),
                        )
                    }
                    Kq::Q2K => (q2k_scaled(v, h.scn), _mm256_madd_epi16(h.c16, b16)),
                    _ => (_mm512_mullo_epi32(v, h.scn), _mm256_setzero_si256()),
                }
            } else {
                // Q6_K: the natural order's W, scaled (its lane order does not matter
                // for the total).
                (reduce::<U>(*v, h.sc), _mm256_setzero_si256())
            };
            let mut s8 = _mm256_add_epi32(
                _mm512_castsi512_si256(wv),
                _mm512_extracti64x4_epi64::<1>(wv),
            );
            if matches!(U::KQ, Kq::Q3K | Kq::Q6K) {
                s8 = _mm256_sub_epi32(s8, _mm256_madd_epi16(h.c16, b16));
            }
            _mm512_inserti64x4::<1>(_mm512_castsi256_si512(s8), m8)
        };
        // Lanes 0..8: the S terms, 8..16: the M terms; summed within each half.
        let mut t = t;
        t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_BADC));
        t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_CDAB));
        t = _mm512_add_epi32(t, _mm512_shuffle_i64x2(t, t, 0b10_11_00_01));
        let dd = match U::KQ {
            Kq::Q3K | Kq::Q6K => _mm512_zextps256_ps512(h.d),
            _ => h.dd,
        };
        let ds = _mm512_mul_ps(dd, _mm512_set1_ps(*x.d.as_ptr().add(sb)));
        _mm512_fmadd_ps(ds, _mm512_cvtepi32_ps(t), acc)
    }
}

/// Weight row `w` against RX arranged q8_K rows: `out[r]`. Q2_K with one activation row
/// issues super-block sb + 2's codes and sums before super-block sb's scaling (the same
/// operations on the same values: the same bits; Intel Xeon, 4096², M = 1: +13%); Q3_K–Q5_K
/// measured 2× slower in that form, Q6_K even, and they run one super-block at a time.
///
/// # Safety
/// As [`dot_row_group_q8k`], with `xs.len() == RX`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn pass_q8k<U: K, const RX: usize>(
    w: &[u8],
    xs: &[crate::linear::q8_k::Row<'_>],
    out: &mut [f32],
) {
    let bb = U::KQ.block_bytes();
    let nsb = xs[0].d.len();
    let pf = PF_ROWS * nsb * bb;
    let prefetch = prefetches(1, nsb);
    // One up-front check per row: the pointer reads below stay in bounds.
    assert!(w.len() >= nsb * bb);
    let arranged = U::ARRANGED.is_some();
    for x in xs {
        let codes = if arranged { x.arranged } else { x.qs };
        assert!(codes.len() >= 256 * nsb && x.d.len() >= nsb && x.bsums.len() >= 16 * nsb);
    }
    let wp = w.as_ptr();
    // Lane 0: acc; lane 8: accm (the other lanes are never read).
    let mut acc = [_mm512_setzero_ps(); RX];
    // Super-block sb's header and codes.
    let head = |sb: usize| {
        // SAFETY (all): super-block sb lies in the weight row.
        unsafe {
            let b = wp.add(bb * sb);
            if prefetch {
                super::prefetch_l2(b.wrapping_add(pf), bb);
            }
            let h = U::header(b);
            let c = if arranged {
                U::arranged(b)
            } else {
                U::codes(b)
            };
            (h, c)
        }
    };
    // Activation row r's `vpdpbusd` sums of super-block sb (arranged: their one sum in
    // `v[0]`; natural: the four `V_p`).
    let row_sums = |sb: usize, r: usize, c: &[__m512i; 4]| {
        // SAFETY (all): super-block sb lies in every activation row.
        unsafe {
            let codes = if arranged { xs[r].arranged } else { xs[r].qs };
            let x = codes.as_ptr().add(256 * sb);
            let xv: [__m512i; 4] =
                std::array::from_fn(|p| _mm512_loadu_si512(x.add(64 * p).cast()));
            if arranged {
                let mut v = [_mm512_setzero_si512(); 4];
                for p in 0..4 {
                    v[0] = _mm512_dpbusd_epi32(v[0], c[p], xv[p]);
                }
                v
            } else {
                std::array::from_fn(|p| _mm512_dpbusd_epi32(_mm512_setzero_si512(), c[p], xv[p]))
            }
        }
    };
    let mut row_into = |sb: usize, r: usize, h: &Hdr, v: &[__m512i; 4]| {
        // SAFETY: super-block sb lies in every activation row.
        unsafe { acc[r] = q8k_into::<U>(&xs[r], sb, h, v, acc[r]) }
    };
    if RX == 1 && U::KQ == Kq::Q2K {
        // Q2_K with one activation row: software-pipelined two deep, as the q8_1 pass.
        let sums = |sb: usize| {
            let (h, c) = head(sb);
            (h, row_sums(sb, 0, &c))
        };
        two_deep(nsb, sums, |sb, (h, v): &(Hdr, _)| row_into(sb, 0, h, v));
    } else {
        // The sums written out rather than through `row_sums` (which measured 6–9% slower
        // for Q4_K and Q5_K at M = 4 on an Intel Xeon: the same operations, compiled
        // differently).
        for sb in 0..nsb {
            let (h, c) = head(sb);
            for r in 0..RX {
                // SAFETY (all): super-block sb lies in every activation row.
                unsafe {
                    let codes = if arranged { xs[r].arranged } else { xs[r].qs };
                    let x = codes.as_ptr().add(256 * sb);
                    let xv: [__m512i; 4] =
                        std::array::from_fn(|p| _mm512_loadu_si512(x.add(64 * p).cast()));
                    let v = if arranged {
                        let mut v = [_mm512_setzero_si512(); 4];
                        for p in 0..4 {
                            v[0] = _mm512_dpbusd_epi32(v[0], c[p], xv[p]);
                        }
                        v
                    } else {
                        std::array::from_fn(|p| {
                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), c[p], xv[p])
                        })
                    };
                    acc[r] = q8k_into::<U>(&xs[r], sb, &h, &v, acc[r]);
                }
            }
        }
    }
    for r in 0..RX {
        let mut a = [0f32; 16];
        // SAFETY: 16 writable floats.
        unsafe { _mm512_storeu_ps(a.as_mut_ptr(), acc[r]) };
        out[r] = super::gguf_q8k::finish(U::KQ.has_min(), a[0], a[8]);
    }
}
