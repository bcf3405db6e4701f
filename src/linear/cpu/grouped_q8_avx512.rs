//! The AVX-512 tier's own kernels of the six grouped formats against q8_1 activations, in
//! exactly the order of [`super::grouped_q8`]'s module docs. They form the same exact block
//! sums `T_b` as the 256-bit kernels of `grouped_q8_avx2`, with 512-bit `vpdpbusd` and far
//! fewer shuffles, then the same f32 operations per block, so the same bits.
//!
//! A chunk is eight 32-value blocks b .. b + 8 (b a multiple of 8), taken as two runs of
//! four blocks. The activation codes are rearranged once per forward, per run of four
//! blocks (128 codes, [`Rows::arrange_pairs`]), in the order of the unpacked weight bytes:
//!
//! - q2/t2: the pass kernels take the chunk whole: its 64 code bytes as they lie, a 16-bit
//!   shift by 2f and a mask (or one `vgf2p8affineqb`) leave field f (element 4i + f of
//!   byte i) of block q in bytes 8q .. 8q + 8 of vector f ([`CHUNK_FIELDS`], arranged per
//!   chunk of 256 codes), and two chunks per step share one reduction ([`Kernel::raw2`]).
//!   The tile and AMX kernels unpack runs ([`Kernel::unpack_run`]): the run's 32 bytes in
//!   both 256-bit halves, `vpsrlvq` by (0, 2) and (4, 6) per half and a mask leave field
//!   f of block q in bytes 8q .. 8q + 8 of half f mod 2 of vector f / 2 ([`FIELDS`]);
//! - q4, q5, q6: the run's 64 nibble bytes are one zmm, 128-bit lane q = block q; its low
//!   nibbles (elements 2i) and high nibbles (2i + 1) are two vectors ([`NIBBLES4`]). q5's
//!   bit 4 and q6's top two bits come from plane 1: block q's bytes are spread over lane q
//!   by one `vpshufb` (q5: byte i/4 to byte i, then `vptestmb` against bit 2(i mod 4) or
//!   2(i mod 4) + 1 gives the byte mask of the words whose bit 4 is set; q6: byte i/2 to
//!   byte i, the field moved to bits 4..6 by 16-bit shifts and a byte select);
//! - q8: the codes in their natural order, two blocks per zmm (no arrangement).
//!
//! Two `vpdpbusd` per run accumulate into one vector whose i32 lanes each belong to one
//! block; a few shuffles and adds (q2/t2: 3 per two chunks; q4: 6 per chunk; q8: 12) leave lane
//! j = block b + j, in block order: the scales and activation scales are loaded as they
//! lie, one `vcvtdq2ps` and one fma serve eight blocks, and lane j of the accumulator is
//! `acc[j]` of the reference. Codes are read unsigned (q2: code + 1, t2: + 2, q4: + 8,
//! q5: + 16, q6: + 32, q8: + 128) and that offset times the block's exact Σx is
//! subtracted. Every lane sum is
//! exact: |u·x| ≤ 255·127 per product, at most 32 products per block, far below 2³¹.
//! Blocks past the last whole chunk run the scalar reference step.

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::float::Grouped;
use super::grouped_q8::{GRow, blocks_scalar, check_rows, prefetch_next};
use super::{finish_lanes, fma2, pair_sums};
use crate::linear::q8_1::{Row, Rows};
use std::arch::x86_64::*;

/// q2/t2's arrangement of a run of four blocks: `pairs[64z + 32h + 8q + i]` = element
/// 4i + 2z + h of block q.
pub(super) const FIELDS: [u8; 128] = {
    let mut p = [0u8; 128];
    let mut j = 0;
    while j < 128 {
        let (z, h, q, i) = (j / 64, (j / 32) % 2, (j / 8) % 4, j % 8);
        p[j] = (32 * q + 4 * i + 2 * z + h) as u8;
        j += 1;
    }
    p
};

/// q2/t2's arrangement of a chunk of eight blocks for the pass kernels ([`rows`],
/// [`tile`]): `pairs[64f + 8q + i]` = element 4i + f of block q (field f of the block's
/// code byte i), the order of [`chunk_fields`].
pub(super) const CHUNK_FIELDS: [u8; 256] = {
    let mut p = [0u8; 256];
    let mut j = 0;
    while j < 256 {
        let (f, q, i) = (j / 64, (j / 8) % 8, j % 8);
        p[j] = (32 * q + 4 * i + f) as u8;
        j += 1;
    }
    p
};

/// q4's arrangement of a run of four blocks: `pairs[64h + 16q + i]` = element 2i + h of
/// block q.
pub(super) const NIBBLES4: [u8; 128] = {
    let mut p = [0u8; 128];
    let mut j = 0;
    while j < 128 {
        let (h, q, i) = (j / 64, (j / 16) % 4, j % 16);
        p[j] = (32 * q + 2 * i + h) as u8;
        j += 1;
    }
    p
};

/// The activation rows as this tier's pass kernels ([`rows`], [`tile`]) read them.
pub(super) fn arrange(kind: Grouped, mut rows: Rows) -> Rows {
    match kind {
        Grouped::Q2 | Grouped::T2 => rows.arrange_pairs(&CHUNK_FIELDS, false),
        Grouped::Q4 | Grouped::Q5 | Grouped::Q6 => rows.arrange_pairs(&NIBBLES4, false),
        // q8 reads `qs` in its natural order.
        Grouped::Q8 => {}
    }
    rows
}

/// The activation rows as this tier's tile kernel (`grouped_tile_avx512`) and its pass
/// kernels read them: interleaved in groups of four from the order of
/// [`Kernel::unpack_run`] (runs of four blocks: q2/t2 [`FIELDS`], q4/q5/q6 [`NIBBLES4`],
/// q8 natural), then `pairs` in the pass kernels' order ([`arrange`]; q2/t2's differs).
pub(super) fn arrange_with_quads(kind: Grouped, mut rows: Rows) -> Rows {
    match kind {
        Grouped::Q2 | Grouped::T2 => {
            rows.arrange_pairs(&FIELDS, false);
            rows.arrange_quads(true);
            arrange(kind, rows)
        }
        _ => {
            let mut rows = arrange(kind, rows);
            rows.arrange_quads(kind != Grouped::Q8);
            rows
        }
    }
}

/// One format's unpacking and reduction, as a type so that each kernel is monomorphized.
pub(super) trait Kernel {
    /// Code bytes per 32-value block.
    const BLOCK_BYTES: usize;
    /// Scale bytes per chunk of eight blocks.
    const CHUNK_SCALE_BYTES: usize;
    /// Plane-1 bytes per 32-value block.
    const HI_BYTES: usize = 0;
    /// The unsigned reading's offset: u = code + 2^OFFSET_LOG2.
    const OFFSET_LOG2: i32;
    /// Whether the pass kernels ([`rows`], [`tile`]) take two chunks per step
    /// ([`Kernel::raw2`]: one reduction and one f32 conversion for sixteen blocks). Only
    /// where it measured faster: q2/t2 (1.08–1.11×); q4/q5/q6 were ~10% slower.
    const PAIRED: bool = false;
    /// Whether [`Kernel::unpack_run`] needs GFNI (the row and tile kernels then run
    /// compiled with it: [`rows_of`], [`tile_of`]).
    const GFNI: bool = false;
    /// The unsigned codes of the run of four blocks at block b of the code row `w` (plane-1
    /// row `h`), as the two vectors that meet activation vectors `pairs[32b ..]` and
    /// `pairs[32b + 64 ..]` (q8: `qs`).
    ///
    /// # Safety
    /// AVX-512 F/BW/VL/VNNI available, and GFNI where [`Kernel::GFNI`]; the run's bytes lie
    /// in the rows at `w` and `h`.
    unsafe fn unpack_run(w: *const u8, h: *const u8, b: usize) -> [__m512i; 2];
    /// The unsigned codes of the chunk at block b: the runs at blocks b and b + 4, the four
    /// vectors that meet activation vectors `pairs[32b + 64j ..]` (j = 0..4).
    ///
    /// # Safety
    /// As [`Kernel::unpack_run`], for the whole chunk.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack(w: *const u8, h: *const u8, b: usize) -> [__m512i; 4] {
        // SAFETY: the caller's contract.
        let ([a0, a1], [c0, c1]) =
            unsafe { (Self::unpack_run(w, h, b), Self::unpack_run(w, h, b + 4)) };
        [a0, a1, c0, c1]
    }
    /// The chunk's eight raw block sums Σu·x in block order: unpacked vector j against
    /// activation vector j; by default for a lane-per-block layout ([`reduce_lanes`]).
    ///
    /// # Safety
    /// As [`Kernel::unpack`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn raw(u: &[__m512i; 4], x: &[__m512i; 4]) -> __m256i {
        let (a, c) = runs(u, x);
        reduce_lanes(a, c)
    }
    /// The sixteen raw block sums of two chunks (unpacked `u[c]` against activation
    /// vectors `x[c]`, chunk c at block b + 8c): lanes 0..8 chunk 0's in block order, lanes
    /// 8..16 chunk 1's; by default [`Kernel::raw`] of each.
    ///
    /// # Safety
    /// As [`Kernel::unpack`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn raw2(u: &[[__m512i; 4]; 2], x: &[[__m512i; 4]; 2]) -> __m512i {
        // SAFETY: the caller's contract.
        unsafe {
            let lo = _mm512_castsi256_si512(Self::raw(&u[0], &x[0]));
            _mm512_inserti64x4::<1>(lo, Self::raw(&u[1], &x[1]))
        }
    }
    /// The scales of the chunk's blocks in block order; by default those of a 64-value
    /// group format ([`g64_scales`]).
    ///
    /// # Safety
    /// As [`Kernel::unpack`]; the chunk's groups lie in the scale row at `s`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales(s: *const u8, b: usize) -> __m256 {
        // SAFETY: the caller's contract.
        unsafe { g64_scales(s, b) }
    }
    /// The scales of two chunks' blocks (b, b + 8) in block order (the paired kernels).
    ///
    /// # Safety
    /// As [`Kernel::scales`], for both chunks.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales2(s: *const u8, b: usize) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe {
            let lo = _mm512_castpd256_pd512(_mm256_castps_pd(Self::scales(s, b)));
            let hi = _mm256_castps_pd(Self::scales(s, b + 8));
            _mm512_castpd_ps(_mm512_insertf64x4::<1>(lo, hi))
        }
    }
}

/// Vectors 0, 1 (2, 3) of `u` against those of `x` summed into one vector per run of four
/// blocks: `vpdpbusd` twice.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn runs(u: &[__m512i; 4], x: &[__m512i; 4]) -> (__m512i, __m512i) {
    let z = _mm512_setzero_si512();
    (
        _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, u[0], x[0]), u[1], x[1]),
        _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, u[2], x[2]), u[3], x[3]),
    )
}

/// 128-bit lane q of `a` (`c`) = block q's (4 + q's) four partial sums → the eight block
/// sums.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn reduce_lanes(a: __m512i, c: __m512i) -> __m256i {
    let s = _mm512_add_epi32(_mm512_unpacklo_epi64(a, c), _mm512_unpackhi_epi64(a, c));
    // Lane q: [block q, block q, block 4 + q, block 4 + q] partials.
    let s = _mm512_add_epi32(s, _mm512_srli_epi64::<32>(s));
    let idx = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    _mm512_castsi512_si256(_mm512_permutexvar_epi32(idx, s))
}

/// A run's 64 nibble bytes at `p` (lane q = block q), as they are and shifted right by
/// 4: the low (high) nibble of each byte of vector 0 (1) is element 2i (2i + 1); the other
/// bits are for the caller to clear.
///
/// # Safety
/// The features of this tier; 64 bytes at `p`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn nibbles(p: *const u8) -> [__m512i; 2] {
    // SAFETY: the caller's 64 bytes.
    let v = unsafe { _mm512_loadu_si512(p.cast()) };
    [v, _mm512_srli_epi16::<4>(v)]
}

/// The 64-value-group scales of blocks b .. b + 8 in block order (each group twice).
///
/// # Safety
/// AVX2 and F16C available; the 4 scale words at byte b of `s` are readable.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn g64_scales(s: *const u8, b: usize) -> __m256 {
    // SAFETY: the caller's 8 bytes.
    let v = unsafe { _mm_loadl_epi64(s.add(b).cast()) };
    _mm256_cvtph_ps(_mm_unpacklo_epi16(v, v))
}

/// The 2-bit fields of a run of four blocks (32 bytes at `p`), vectors 0 and 1 of
/// [`FIELDS`], each byte `(field ^ flip)` for the caller's `flip` (0 or 2).
///
/// # Safety
/// The features of this tier; 32 bytes at `p`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn fields(p: *const u8, flip: i8) -> [__m512i; 2] {
    // SAFETY: the caller's 32 bytes.
    let v = _mm512_broadcast_i64x4(unsafe { _mm256_loadu_si256(p.cast()) });
    let (three, f) = (_mm512_set1_epi8(3), _mm512_set1_epi8(flip));
    // (v >> s) & 3 ^ flip: the shift stays inside each byte's own bits (s ≤ 6).
    let field = |s: __m512i| _mm512_ternarylogic_epi32::<0x6A>(_mm512_srlv_epi64(v, s), three, f);
    [
        field(_mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0)),
        field(_mm512_set_epi64(6, 6, 6, 6, 4, 4, 4, 4)),
    ]
}

/// [`fields`] by one `vgf2p8affineqb` per vector (each 64-bit lane's bit matrix takes the
/// lane's field to bits 0, 1 and clears the rest, then `FLIP` is XORed in) where a shift
/// and a masking XOR were two: the same bytes.
///
/// # Safety
/// The features of this tier and GFNI; 32 bytes at `p`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
unsafe fn fields_gfni<const FLIP: i32>(p: *const u8) -> [__m512i; 2] {
    // SAFETY: the caller's 32 bytes.
    let v = _mm512_broadcast_i64x4(unsafe { _mm256_loadu_si256(p.cast()) });
    // Result bits 0, 1 take source bits s, s + 1: matrix bytes 7 and 6.
    let m = |s: i64| (1i64 << s) << 56 | (2i64 << s) << 48;
    [
        _mm512_gf2p8affine_epi64_epi8::<FLIP>(
            v,
            _mm512_set_epi64(m(2), m(2), m(2), m(2), m(0), m(0), m(0), m(0)),
        ),
        _mm512_gf2p8affine_epi64_epi8::<FLIP>(
            v,
            _mm512_set_epi64(m(6), m(6), m(6), m(6), m(4), m(4), m(4), m(4)),
        ),
    ]
}

/// The 2-bit fields of a chunk of eight blocks (64 bytes at `p`, block q in bytes 8q ..
/// 8q + 8): vector f holds field f of every byte (element 4i + f of block q in byte 8q + i,
/// [`CHUNK_FIELDS`]), each byte `(field ^ flip)` for the caller's `flip` (0 or 2).
///
/// # Safety
/// The features of this tier; 64 bytes at `p`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn chunk_fields(p: *const u8, flip: i8) -> [__m512i; 4] {
    // SAFETY: the caller's 64 bytes.
    let v = unsafe { _mm512_loadu_si512(p.cast()) };
    let (three, f) = (_mm512_set1_epi8(3), _mm512_set1_epi8(flip));
    // (v >> 2f) & 3 ^ flip: a 16-bit shift, whose bits from the next byte the mask clears.
    let field = |v: __m512i| _mm512_ternarylogic_epi32::<0x6A>(v, three, f);
    [
        field(v),
        field(_mm512_srli_epi16::<2>(v)),
        field(_mm512_srli_epi16::<4>(v)),
        field(_mm512_srli_epi16::<6>(v)),
    ]
}

/// [`chunk_fields`] by one `vgf2p8affineqb` per vector (one bit matrix for every byte:
/// field f to bits 0, 1, the rest cleared, then `FLIP` XORed in): the same bytes.
///
/// # Safety
/// The features of this tier and GFNI; 64 bytes at `p`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
unsafe fn chunk_fields_gfni<const FLIP: i32>(p: *const u8) -> [__m512i; 4] {
    // SAFETY: the caller's 64 bytes.
    let v = unsafe { _mm512_loadu_si512(p.cast()) };
    // Result bits 0, 1 take source bits s, s + 1: matrix bytes 7 and 6.
    let m = |s: i64| _mm512_set1_epi64((1i64 << s) << 56 | (2i64 << s) << 48);
    [
        _mm512_gf2p8affine_epi64_epi8::<FLIP>(v, m(0)),
        _mm512_gf2p8affine_epi64_epi8::<FLIP>(v, m(2)),
        _mm512_gf2p8affine_epi64_epi8::<FLIP>(v, m(4)),
        _mm512_gf2p8affine_epi64_epi8::<FLIP>(v, m(6)),
    ]
}

/// The eight block sums of a chunk unpacked by [`chunk_fields`]: vector j against
/// activation vector j, two `vpdpbusd` chains whose 64-bit lane q holds block q's partial
/// sums, then the pairs added.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn chunk_sums(u: &[__m512i; 4], x: &[__m512i; 4]) -> __m256i {
    let (a, c) = runs(u, x);
    let s = _mm512_add_epi32(a, c);
    _mm512_cvtepi64_epi32(_mm512_add_epi32(s, _mm512_srli_epi64::<32>(s)))
}

/// [`chunk_sums`] of two chunks: the pairs of both gathered by two `vpermt2d` and added
/// (lanes 0..8 chunk 0's sums, 8..16 chunk 1's).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn chunk_sums2(u: &[[__m512i; 4]; 2], x: &[[__m512i; 4]; 2]) -> __m512i {
    let s = |c: usize| {
        let (a, d) = runs(&u[c], &x[c]);
        _mm512_add_epi32(a, d)
    };
    pair_sums(s(0), s(1))
}

/// q2_g64_fp16: 8 bytes per block, words u = code + 1 read as they are.
pub(super) struct Q2;
impl Kernel for Q2 {
    const BLOCK_BYTES: usize = 8;
    const CHUNK_SCALE_BYTES: usize = 8;
    const OFFSET_LOG2: i32 = 0;
    const PAIRED: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack_run(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 2] {
        // SAFETY: the run's 32 code bytes (caller).
        unsafe { fields(w.add(8 * b), 0) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 4] {
        // SAFETY: the chunk's 64 code bytes (caller).
        unsafe { chunk_fields(w.add(8 * b), 0) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn raw(u: &[__m512i; 4], x: &[__m512i; 4]) -> __m256i {
        chunk_sums(u, x)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn raw2(u: &[[__m512i; 4]; 2], x: &[[__m512i; 4]; 2]) -> __m512i {
        chunk_sums2(u, x)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales2(s: *const u8, b: usize) -> __m512 {
        // SAFETY: the 8 scale words of groups b/2 .. b/2 + 8 (16 bytes at byte b).
        let g = unsafe { _mm256_cvtph_ps(_mm_loadu_si128(s.add(b).cast())) };
        // Block j of the 16 is in group j/2.
        let idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(g))
    }
}

/// t2_g128_fp16: 8 bytes per block, two's-complement words read as u = word ^ 2 = code + 2.
pub(super) struct T2;
impl Kernel for T2 {
    const BLOCK_BYTES: usize = 8;
    const CHUNK_SCALE_BYTES: usize = 4;
    const OFFSET_LOG2: i32 = 1;
    const PAIRED: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack_run(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 2] {
        // SAFETY: the run's 32 code bytes (caller).
        unsafe { fields(w.add(8 * b), 2) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 4] {
        // SAFETY: the chunk's 64 code bytes (caller).
        unsafe { chunk_fields(w.add(8 * b), 2) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn raw(u: &[__m512i; 4], x: &[__m512i; 4]) -> __m256i {
        chunk_sums(u, x)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn raw2(u: &[[__m512i; 4]; 2], x: &[[__m512i; 4]; 2]) -> __m512i {
        chunk_sums2(u, x)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales(s: *const u8, b: usize) -> __m256 {
        // SAFETY: the 2 scale words of groups b/4, b/4 + 1 (4 bytes at byte b/2).
        let v = unsafe { _mm_cvtsi32_si128(s.add(b / 2).cast::<i32>().read_unaligned()) };
        // Groups (0, 0, 0, 0, 1, 1, 1, 1).
        let v = _mm_unpacklo_epi16(v, v);
        _mm256_cvtph_ps(_mm_unpacklo_epi32(v, v))
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales2(s: *const u8, b: usize) -> __m512 {
        // SAFETY: the 4 scale words of groups b/4 .. b/4 + 4 (8 bytes at byte b/2).
        let g = unsafe { _mm_cvtph_ps(_mm_loadl_epi64(s.add(b / 2).cast())) };
        // Block j of the 16 is in group j/4.
        let idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(g))
    }
}

/// q4_g64_fp16: 16 bytes per block, two's-complement nibbles read as n ^ 8 = code + 8.
pub(super) struct Q4;
impl Kernel for Q4 {
    const BLOCK_BYTES: usize = 16;
    const CHUNK_SCALE_BYTES: usize = 8;
    const OFFSET_LOG2: i32 = 3;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack_run(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 2] {
        let m = _mm512_set1_epi8(0x0F);
        // SAFETY: the run's 64 code bytes (caller).
        let v = unsafe { _mm512_loadu_si512(w.add(16 * b).cast()) };
        let v = _mm512_xor_si512(v, _mm512_set1_epi8(0x88u8 as i8));
        [
            _mm512_and_si512(v, m),
            _mm512_and_si512(_mm512_srli_epi16::<4>(v), m),
        ]
    }
}

/// q4's nibbles with their +8 offset by one `vgf2p8affineqb` each (a bit matrix per byte,
/// then XOR with 8) where the XOR, a shift and a mask were three or two instructions.
impl UnpackGfni for Q4 {
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn unpack_run_gfni(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 2] {
        // Result bit i (i < 4) takes source bit i (LO) or 4 + i (HI): matrix byte 7 − i;
        // bits 4..8 cleared; then bit 3 flipped (n ^ 8).
        let lo = _mm512_set1_epi64(0x0102_0408_0000_0000);
        let hi = _mm512_set1_epi64(0x1020_4080_0000_0000);
        // SAFETY: the run's 64 code bytes (caller).
        let v = unsafe { _mm512_loadu_si512(w.add(16 * b).cast()) };
        [
            _mm512_gf2p8affine_epi64_epi8::<8>(v, lo),
            _mm512_gf2p8affine_epi64_epi8::<8>(v, hi),
        ]
    }
}

impl UnpackGfni for Q2 {
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn unpack_run_gfni(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 2] {
        // SAFETY: the run's 32 code bytes (caller).
        unsafe { fields_gfni::<0>(w.add(8 * b)) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn unpack_gfni(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 4] {
        // SAFETY: the chunk's 64 code bytes (caller).
        unsafe { chunk_fields_gfni::<0>(w.add(8 * b)) }
    }
}

impl UnpackGfni for T2 {
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn unpack_run_gfni(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 2] {
        // SAFETY: the run's 32 code bytes (caller).
        unsafe { fields_gfni::<2>(w.add(8 * b)) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn unpack_gfni(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 4] {
        // SAFETY: the chunk's 64 code bytes (caller).
        unsafe { chunk_fields_gfni::<2>(w.add(8 * b)) }
    }
}

/// A grouped format whose runs can also be unpacked with GFNI (q2, t2, q4).
pub(super) trait UnpackGfni: Kernel {
    /// [`Kernel::unpack_run`] by `vgf2p8affineqb`: the same codes.
    ///
    /// # Safety
    /// As [`Kernel::unpack_run`], and GFNI available.
    unsafe fn unpack_run_gfni(w: *const u8, h: *const u8, b: usize) -> [__m512i; 2];
    /// [`Kernel::unpack`] by `vgf2p8affineqb`: by default the runs at blocks b and b + 4.
    ///
    /// # Safety
    /// As [`Kernel::unpack`], and GFNI available.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn unpack_gfni(w: *const u8, h: *const u8, b: usize) -> [__m512i; 4] {
        // SAFETY: the caller's contract.
        let ([a0, a1], [c0, c1]) = unsafe {
            (
                Self::unpack_run_gfni(w, h, b),
                Self::unpack_run_gfni(w, h, b + 4),
            )
        };
        [a0, a1, c0, c1]
    }
}

/// `K` with its runs unpacked by GFNI ([`UnpackGfni`]); its row and tile kernels are
/// compiled with GFNI ([`rows_of`], [`tile_of`]).
pub(super) struct Gfni<K>(std::marker::PhantomData<K>);
impl<K: UnpackGfni> Kernel for Gfni<K> {
    const BLOCK_BYTES: usize = K::BLOCK_BYTES;
    const CHUNK_SCALE_BYTES: usize = K::CHUNK_SCALE_BYTES;
    const HI_BYTES: usize = K::HI_BYTES;
    const OFFSET_LOG2: i32 = K::OFFSET_LOG2;
    const PAIRED: bool = K::PAIRED;
    const GFNI: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn unpack_run(w: *const u8, h: *const u8, b: usize) -> [__m512i; 2] {
        // SAFETY: the caller's contract (GFNI: `Self::GFNI`).
        unsafe { K::unpack_run_gfni(w, h, b) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn unpack(w: *const u8, h: *const u8, b: usize) -> [__m512i; 4] {
        // SAFETY: the caller's contract (GFNI: `Self::GFNI`).
        unsafe { K::unpack_gfni(w, h, b) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn raw(u: &[__m512i; 4], x: &[__m512i; 4]) -> __m256i {
        // SAFETY: the caller's contract.
        unsafe { K::raw(u, x) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn raw2(u: &[[__m512i; 4]; 2], x: &[[__m512i; 4]; 2]) -> __m512i {
        // SAFETY: the caller's contract.
        unsafe { K::raw2(u, x) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales(s: *const u8, b: usize) -> __m256 {
        // SAFETY: the caller's contract.
        unsafe { K::scales(s, b) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales2(s: *const u8, b: usize) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe { K::scales2(s, b) }
    }
}

/// q5_g64_fp16: 16 nibble bytes + 4 bit-4 bytes per block, read as u = word ^ 16 = code + 16.
pub(super) struct Q5;
impl Kernel for Q5 {
    const BLOCK_BYTES: usize = 16;
    const CHUNK_SCALE_BYTES: usize = 8;
    const HI_BYTES: usize = 4;
    const OFFSET_LOG2: i32 = 4;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack_run(w: *const u8, h: *const u8, b: usize) -> [__m512i; 2] {
        // Lane q byte i: block q's bit byte i/4 (bits of elements 2i and 2i + 1).
        let spread = _mm512_setr_epi32(
            0,
            0x0101_0101,
            0x0202_0202,
            0x0303_0303, //
            0x0404_0404,
            0x0505_0505,
            0x0606_0606,
            0x0707_0707, //
            0x0808_0808,
            0x0909_0909,
            0x0A0A_0A0A,
            0x0B0B_0B0B, //
            0x0C0C_0C0C,
            0x0D0D_0D0D,
            0x0E0E_0E0E,
            0x0F0F_0F0F,
        );
        // Bit 2(i mod 4) (element 2i) and bit 2(i mod 4) + 1 (element 2i + 1).
        let (even, odd) = (
            _mm512_set1_epi32(0x4010_0401),
            _mm512_set1_epi32(0x8020_0802u32 as i32),
        );
        let (m, sixteen) = (_mm512_set1_epi8(0x0F), _mm512_set1_epi8(16));
        // SAFETY: the run's 64 nibble bytes and 16 bit bytes (caller).
        let (v, bits) = unsafe {
            (
                nibbles(w.add(16 * b)),
                _mm512_broadcast_i32x4(_mm_loadu_si128(h.add(4 * b).cast())),
            )
        };
        let s = _mm512_shuffle_epi8(bits, spread);
        // u = nibble + 16 where bit 4 is clear, the nibble where it is set.
        let u = |v: __m512i, k: __mmask64| {
            let v = _mm512_ternarylogic_epi32::<0xEA>(v, m, sixteen);
            _mm512_mask_sub_epi8(v, k, v, sixteen)
        };
        [
            u(v[0], _mm512_test_epi8_mask(s, even)),
            u(v[1], _mm512_test_epi8_mask(s, odd)),
        ]
    }
}

/// q6_g64_fp16: 16 nibble bytes + 8 two-bit bytes per block, read as u = word ^ 32 =
/// code + 32.
pub(super) struct Q6;
impl Kernel for Q6 {
    const BLOCK_BYTES: usize = 16;
    const CHUNK_SCALE_BYTES: usize = 8;
    const HI_BYTES: usize = 8;
    const OFFSET_LOG2: i32 = 5;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack_run(w: *const u8, h: *const u8, b: usize) -> [__m512i; 2] {
        // Lane q byte i: block q's two-bit byte i/2 (fields of elements 2i and 2i + 1): the
        // run's 32 bytes as qwords (0, 0, 1, 1, 2, 2, 3, 3), then bytes (0, 0, 1, 1, ..) of
        // each lane's first qword.
        let lanes = _mm512_setr_epi64(0, 0, 1, 1, 2, 2, 3, 3);
        let spread = _mm512_broadcast_i32x4(_mm_setr_epi8(
            0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7,
        ));
        // Selects the low byte of each 16-bit word from the first operand.
        let low = _mm512_set1_epi16(0x00FF);
        let (m, x20) = (_mm512_set1_epi8(0x3F), _mm512_set1_epi8(0x20));
        let nib = _mm512_set1_epi8(0x0F);
        // SAFETY: the run's 64 nibble bytes and 32 two-bit bytes (caller).
        let (v, t) = unsafe {
            (
                nibbles(w.add(16 * b)),
                _mm256_loadu_si256(h.add(8 * b).cast()),
            )
        };
        let s = _mm512_shuffle_epi8(
            _mm512_permutexvar_epi64(lanes, _mm512_castsi256_si512(t)),
            spread,
        );
        // Element 2i's field sits at bits 4(i mod 2) of byte i of s, element 2i + 1's at
        // 4(i mod 2) + 2: both moved to bits 4..6 (even i: left by 4 or 2; odd i: as is or
        // right by 2; 16-bit shifts, the byte taken from the right one).
        let top = [
            _mm512_ternarylogic_epi32::<0xE4>(_mm512_slli_epi16::<4>(s), s, low),
            _mm512_ternarylogic_epi32::<0xE4>(
                _mm512_slli_epi16::<2>(s),
                _mm512_srli_epi16::<2>(s),
                low,
            ),
        ];
        // u = (nibble | field << 4) ^ 32 = code + 32.
        let u = |v: __m512i, t: __m512i| {
            let v = _mm512_ternarylogic_epi32::<0xE4>(v, t, nib);
            _mm512_ternarylogic_epi32::<0x6A>(v, m, x20)
        };
        [u(v[0], top[0]), u(v[1], top[1])]
    }
}

/// q8_g32_fp16: 32 bytes per block, one scale per block, read as u = q ^ 0x80 = code + 128.
pub(super) struct Q8;
impl Kernel for Q8 {
    const BLOCK_BYTES: usize = 32;
    const CHUNK_SCALE_BYTES: usize = 16;
    const OFFSET_LOG2: i32 = 7;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack_run(w: *const u8, _h: *const u8, b: usize) -> [__m512i; 2] {
        let x80 = _mm512_set1_epi8(0x80u8 as i8);
        // SAFETY: the run's 128 code bytes (caller).
        std::array::from_fn(|j| unsafe {
            _mm512_xor_si512(_mm512_loadu_si512(w.add(32 * b + 64 * j).cast()), x80)
        })
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn raw(u: &[__m512i; 4], x: &[__m512i; 4]) -> __m256i {
        let z = _mm512_setzero_si512();
        // p[j]: 128-bit lanes 0, 1 block 2j, lanes 2, 3 block 2j + 1.
        let p: [__m512i; 4] = std::array::from_fn(|j| _mm512_dpbusd_epi32(z, u[j], x[j]));
        let pair = |a: __m512i, c: __m512i| {
            _mm512_add_epi32(_mm512_unpacklo_epi64(a, c), _mm512_unpackhi_epi64(a, c))
        };
        // Lane l of s01: [two partials of p0's block, two of p1's] in lane l: blocks
        // [0, 2 | 0, 2 | 1, 3 | 1, 3]; s23 the same + 4.
        let (s01, s23) = (pair(p[0], p[1]), pair(p[2], p[3]));
        // Lanes 0 and 2 of s01, s23, plus lanes 1 and 3: [0, 2 | 1, 3 | 4, 6 | 5, 7].
        let t = _mm512_add_epi32(
            _mm512_shuffle_i64x2::<0x88>(s01, s23),
            _mm512_shuffle_i64x2::<0xDD>(s01, s23),
        );
        let t = _mm512_add_epi32(t, _mm512_srli_epi64::<32>(t));
        let idx = _mm512_setr_epi32(0, 4, 2, 6, 8, 12, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
        _mm512_castsi512_si256(_mm512_permutexvar_epi32(idx, t))
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales(s: *const u8, b: usize) -> __m256 {
        // SAFETY: the 8 scale words of blocks b .. b + 8 (caller).
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(s.add(2 * b).cast())) }
    }
}

/// # Safety
/// The features of this tier available (`Isa::Avx512`); every `ws[i]` holds the planes of
/// one row of the blocks of every row of `xs`, which were prepared by [`arrange`];
/// `out.len() == ws.len() · xs.len()`, `ws.len() ≤ 4`; GFNI available where `gfni` (q2, t2
/// and q4 then unpack by [`Gfni`]; the same bits).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group(
    kind: Grouped,
    gfni: bool,
    ws: &[GRow<'_>],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    // SAFETY (all): the caller's contract.
    unsafe {
        match kind {
            Grouped::Q2 if gfni => group::<Gfni<Q2>>(kind, ws, xs, out),
            Grouped::Q2 => group::<Q2>(kind, ws, xs, out),
            Grouped::T2 if gfni => group::<Gfni<T2>>(kind, ws, xs, out),
            Grouped::T2 => group::<T2>(kind, ws, xs, out),
            Grouped::Q4 if gfni => group::<Gfni<Q4>>(kind, ws, xs, out),
            Grouped::Q4 => group::<Q4>(kind, ws, xs, out),
            Grouped::Q5 => group::<Q5>(kind, ws, xs, out),
            Grouped::Q6 => group::<Q6>(kind, ws, xs, out),
            Grouped::Q8 => group::<Q8>(kind, ws, xs, out),
        }
    }
}

/// # Safety
/// As [`dot_row_group`] (GFNI available where `K::GFNI`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn group<K: Kernel>(kind: Grouped, ws: &[GRow<'_>], xs: &[Row<'_>], out: &mut [f32]) {
    if xs.is_empty() {
        return;
    }
    // The bounds checks: every pointer read below stays inside these.
    check_rows(
        kind,
        ws,
        xs,
        K::BLOCK_BYTES,
        K::HI_BYTES,
        kind != Grouped::Q8,
    );
    passes!(
        ws,
        xs,
        out,
        res,
        // SAFETY: the features (caller); bounds just checked.
        rows | R,
        wr,
        x0 | unsafe { rows_of::<R, K>(kind, wr, x0, &mut res) },
        // SAFETY: as above.
        tile | C,
        w,
        x | unsafe { tile_of::<C, K>(kind, w, x, &mut res) },
    );
}

/// [`rows`] as a function of its own, compiled with GFNI as well where `K` needs it
/// ([`Kernel::GFNI`]: `rows` is then inlined where `K`'s GFNI code can be inlined too).
///
/// # Safety
/// As [`rows`]; with `K::GFNI`, the CPU has GFNI.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn rows_of<const R: usize, K: Kernel>(
    kind: Grouped,
    ws: &[GRow<'_>],
    x: &Row<'_>,
    res: &mut [f32; 4],
) {
    /// [`rows`] compiled with the tier's features.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn plain<const R: usize, K: Kernel>(
        kind: Grouped,
        ws: &[GRow<'_>],
        x: &Row<'_>,
        res: &mut [f32; 4],
    ) {
        // SAFETY: the caller's contract.
        unsafe { rows::<R, K>(kind, ws, x, res) }
    }
    /// [`rows`] compiled with the tier's features and GFNI.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn gfni<const R: usize, K: Kernel>(
        kind: Grouped,
        ws: &[GRow<'_>],
        x: &Row<'_>,
        res: &mut [f32; 4],
    ) {
        // SAFETY: the caller's contract.
        unsafe { rows::<R, K>(kind, ws, x, res) }
    }
    // SAFETY: the caller's contract.
    unsafe {
        if K::GFNI {
            gfni::<R, K>(kind, ws, x, res)
        } else {
            plain::<R, K>(kind, ws, x, res)
        }
    }
}

/// [`tile`] as a function of its own, compiled with GFNI as well where `K` needs it (as
/// [`rows_of`]).
///
/// # Safety
/// As [`tile`]; with `K::GFNI`, the CPU has GFNI.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tile_of<const C: usize, K: Kernel>(
    kind: Grouped,
    w: &GRow<'_>,
    xs: &[Row<'_>],
    res: &mut [f32; 4],
) {
    /// [`tile`] compiled with the tier's features.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn plain<const C: usize, K: Kernel>(
        kind: Grouped,
        w: &GRow<'_>,
        xs: &[Row<'_>],
        res: &mut [f32; 4],
    ) {
        // SAFETY: the caller's contract.
        unsafe { tile::<C, K>(kind, w, xs, res) }
    }
    /// [`tile`] compiled with the tier's features and GFNI.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
    unsafe fn gfni<const C: usize, K: Kernel>(
        kind: Grouped,
        w: &GRow<'_>,
        xs: &[Row<'_>],
        res: &mut [f32; 4],
    ) {
        // SAFETY: the caller's contract.
        unsafe { tile::<C, K>(kind, w, xs, res) }
    }
    // SAFETY: the caller's contract.
    unsafe {
        if K::GFNI {
            gfni::<C, K>(kind, w, xs, res)
        } else {
            plain::<C, K>(kind, w, xs, res)
        }
    }
}

/// The activation codes a kernel reads: the arranged ones, or q8's natural order.
fn codes<'a>(kind: Grouped, x: &Row<'a>) -> &'a [i8] {
    if kind == Grouped::Q8 { x.qs } else { x.pairs }
}

/// The chunk's eight exact block sums `T` in block order: the unpacked chunk `u` against
/// the activation codes at `xp` (chunk at block b), minus the offset times Σx (`ps`).
///
/// # Safety
/// The features of this tier; blocks b .. b + 8 lie in the activation row.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn totals<K: Kernel>(u: &[__m512i; 4], xp: *const i8, ps: *const i32, b: usize) -> __m256i {
    // SAFETY: the caller's contract.
    unsafe {
        let x = std::array::from_fn(|j| _mm512_loadu_si512(xp.add(32 * b + 64 * j).cast()));
        let s = _mm256_loadu_si256(ps.add(b).cast());
        // Exact: |2^e·Σx| ≤ 128·32·127.
        let e = _mm_cvtsi32_si128(K::OFFSET_LOG2);
        _mm256_sub_epi32(K::raw(u, &x), _mm256_sll_epi32(s, e))
    }
}

/// [`totals`] of the two chunks at blocks b and b + 8 (`u[c]` unpacked at b + 8c): lanes
/// 0..8 the first chunk's `T`, 8..16 the second's.
///
/// # Safety
/// The features of this tier; blocks b .. b + 16 lie in the activation row.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn totals2<K: Kernel>(
    u: &[[__m512i; 4]; 2],
    xp: *const i8,
    ps: *const i32,
    b: usize,
) -> __m512i {
    // SAFETY: the caller's contract.
    unsafe {
        let x = std::array::from_fn(|c| {
            std::array::from_fn(|j| _mm512_loadu_si512(xp.add(32 * (b + 8 * c) + 64 * j).cast()))
        });
        let s = _mm512_loadu_si512(ps.add(b).cast());
        // Exact: |2^e·Σx| ≤ 128·32·127.
        let e = _mm_cvtsi32_si128(K::OFFSET_LOG2);
        _mm512_sub_epi32(K::raw2(u, &x), _mm512_sll_epi32(s, e))
    }
}

/// Lane j of `acc` as `acc[j]` of the reference, the tail blocks added, then [`tree8`].
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn finish(kind: Grouped, acc: __m256, w: &GRow<'_>, x: &Row<'_>, whole: usize) -> f32 {
    let nb = x.d.len();
    finish_lanes(acc, whole < nb, |a| blocks_scalar(kind, w, x, whole, nb, a))
}

/// One weight row against C activation rows, into `res[..C]`.
///
/// # Safety
/// As [`group`], for every row of `xs`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tile<const C: usize, K: Kernel>(
    kind: Grouped,
    w: &GRow<'_>,
    xs: &[Row<'_>],
    res: &mut [f32; 4],
) {
    let nb = xs[0].d.len();
    let whole = nb / 8 * 8;
    let (wp, hp, sp) = (w.codes.as_ptr(), w.hi.as_ptr(), w.scales.as_ptr());
    // SAFETY (all loads): chunks b .. b + 8 ≤ nb lie in the weight row and every
    // activation row (the caller's checks).
    unsafe {
        let mut acc = [_mm256_setzero_ps(); C];
        let mut b = 0;
        while K::PAIRED && b + 16 <= whole {
            let dw = K::scales2(sp, b);
            let u = [K::unpack(wp, hp, b), K::unpack(wp, hp, b + 8)];
            for c in 0..C {
                let x = &xs[c];
                let t = totals2::<K>(&u, codes(kind, x).as_ptr(), x.sum.as_ptr(), b);
                let dx = _mm512_loadu_ps(x.d.as_ptr().add(b));
                acc[c] = fma2(_mm512_mul_ps(dw, dx), t, acc[c]);
            }
            b += 16;
        }
        while b < whole {
            let dw = K::scales(sp, b);
            let u = K::unpack(wp, hp, b);
            for c in 0..C {
                let x = &xs[c];
                let t = totals::<K>(&u, codes(kind, x).as_ptr(), x.sum.as_ptr(), b);
                let dx = _mm256_loadu_ps(x.d.as_ptr().add(b));
                acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(t), acc[c]);
            }
            b += 8;
        }
        for c in 0..C {
            res[c] = finish(kind, acc[c], w, &xs[c], whole);
        }
    }
}

/// R weight rows against one activation row, into `res[..R]`.
///
/// # Safety
/// As [`group`].
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn rows<const R: usize, K: Kernel>(
    kind: Grouped,
    ws: &[GRow<'_>],
    x: &Row<'_>,
    res: &mut [f32; 4],
) {
    let nb = x.d.len();
    let whole = nb / 8 * 8;
    let wp: [*const u8; R] = std::array::from_fn(|i| ws[i].codes.as_ptr());
    let sp: [*const u8; R] = std::array::from_fn(|i| ws[i].scales.as_ptr());
    let hp: [*const u8; R] = std::array::from_fn(|i| ws[i].hi.as_ptr());
    let (pd, ps, xp) = (x.d.as_ptr(), x.sum.as_ptr(), codes(kind, x).as_ptr());
    // Row i's chunk at block b in the next row group.
    let prefetch = |i: usize, b: usize| {
        prefetch_next::<R>(
            &ws[i],
            ws[0],
            b,
            K::BLOCK_BYTES,
            K::HI_BYTES,
            K::CHUNK_SCALE_BYTES,
        )
    };
    // SAFETY (all loads): chunks b .. b + 8 ≤ nb lie in every row (the caller's checks).
    unsafe {
        let mut acc = [_mm256_setzero_ps(); R];
        let mut b = 0;
        while K::PAIRED && b + 16 <= whole {
            let dx = _mm512_loadu_ps(pd.add(b));
            for i in 0..R {
                prefetch(i, b);
                prefetch(i, b + 8);
                let u = [K::unpack(wp[i], hp[i], b), K::unpack(wp[i], hp[i], b + 8)];
                let t = totals2::<K>(&u, xp, ps, b);
                acc[i] = fma2(_mm512_mul_ps(K::scales2(sp[i], b), dx), t, acc[i]);
            }
            b += 16;
        }
        while b < whole {
            let dx = _mm256_loadu_ps(pd.add(b));
            for i in 0..R {
                prefetch(i, b);
                let t = totals::<K>(&K::unpack(wp[i], hp[i], b), xp, ps, b);
                let d = _mm256_mul_ps(K::scales(sp[i], b), dx);
                acc[i] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(t), acc[i]);
            }
            b += 8;
        }
        for i in 0..R {
            res[i] = finish(kind, acc[i], &ws[i], x, whole);
        }
    }
}
