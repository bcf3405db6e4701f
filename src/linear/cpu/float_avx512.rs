//! AVX-512 path of [`super::float`] (F/BW/VL on top of the AVX2 tier): the same values in
//! the same order (the scalar reference's bits), two weight rows per 512-bit register.
//!
//! Lanes 0..8 of a register hold row A's eight accumulator lanes, lanes 8..16 row B's; the
//! activation's 8 values of each step are broadcast into both halves. Each lane still sees
//! its elements in increasing k, so the pair of rows gives the bits of two rows of the
//! scalar reference. A tile holds up to 4 such pairs (8 rows, 4 independent fma chains)
//! sharing each activation load; a row count that is odd pairs its last row with itself.
//!
//! How codes become values (32 per row and step, four registers of 2 × 8):
//! - q4: per group and row a 16-entry table `scale·code` (code −8..7 by word, one multiply,
//!   the scalar reference's rounding; the two steps of a group share it); one `vpshufb`
//!   per step gathers into lane i the code bytes of elements i, 8 + i, 16 + i, 24 + i of
//!   its row, two bit selects make them indices for the four registers at once (bit 4
//!   selects row B's table), each register shifts its byte down (`vpermt2ps`).
//! - q2 / t2: per group and row the four values `scale·code` by word (one multiply each),
//!   repeated into a 16-entry table; each lane takes its 2-bit word from the row's 32-bit
//!   word of 16 codes (`vpermd`, `vpsrlvd`), bit 4 of the index selects row B's table
//!   (`vpermt2ps`).
//! - q5 / q6: the nibbles gathered as for q4; each element's plane-1 bits rotated above
//!   its nibble (q5: the row's 32-bit word broadcast; q6: its bytes gathered by one more
//!   `vpshufb`; `vprorvd`, one bit select for all four registers); per register one shift
//!   up and one arithmetic shift down sign-extend the word; `vcvtdq2ps`, times the pair's
//!   scales.
//! - q8: 16 codes of each row widened (`vpmovsxbd`), rows A's and B's halves paired by one
//!   128-bit-chunk shuffle; `vcvtdq2ps`, times the pair's scales.
//! - nvfp4: per 16-value block and row a 16-entry table of the signed values
//!   `±binary32(|e2m1|·sf) / d` (the sign applied last, as the scalar reference), looked
//!   up by the whole nibble (`vpermt2ps`), the nibbles gathered as for q4. In the scaled
//!   order the table is one multiply of the 16 signed magnitudes by sf (rounding is
//!   symmetric, so `binary32(−m·sf) = −binary32(m·sf)`).
//!
//! - fp8 (the scaled order): 32 codes of each row, the two rows' 8-code runs interleaved
//!   per 128-bit half (`vpunpck*qdq`), sign-extended to 16 bits (`vpmovsxbw`), shifted into
//!   the binary16 of value / 256 (NaN words to the quiet NaN of their sign under a mask),
//!   converted by F16C, 16 values per instruction.
//!
//! Other row kinds run the AVX2 path.

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::float::{WRow, accumulate_scalar};
use crate::linear::cpu::tree8;
use std::arch::x86_64::*;

/// A pair of weight rows' values, 4 × (8 + 8) per step of 32 elements.
trait Load2 {
    type P: Copy;
    fn ptr(w: &WRow<'_>) -> Self::P;
    /// The row's code bytes (every element's low 4 bits: element k in byte k / 2).
    fn codes(p: Self::P) -> *const u8;
    /// Bits per element in the row's high-bit plane ([`Load2::high`]), 0 if none.
    const HIGH_BITS: usize = 0;
    /// The row's high-bit plane (q5 / q6).
    fn high(_p: Self::P) -> *const u8 {
        std::ptr::null()
    }
    /// Elements `k .. k + 32` of rows A (lanes 0..8 of each register) and B (lanes 8..16):
    /// register v holds elements `k + 8v .. k + 8v + 8`.
    ///
    /// # Safety
    /// `k + 32 <= K`, k a multiple of 32; AVX-512 F/BW/VL, AVX2, FMA and F16C available.
    unsafe fn load(a: Self::P, b: Self::P, k: usize) -> [__m512; 4];
    /// The row's output from its eight-lane sum (as [`WRow::finish`]).
    #[inline(always)]
    fn finish(_p: Self::P, y: f32) -> f32 {
        y
    }
}

struct Q2;
struct T2;
struct Q4;
struct Q5;
struct Q6;
struct Nvfp4;
struct Nvfp4Scaled;
struct Q8;
struct Fp8Scaled;

/// Plane pointers of a grouped row: codes, high bits, f32 scales.
type GroupedP = (*const u8, *const u8, *const f32);

fn grouped_ptr(w: &WRow<'_>) -> GroupedP {
    match w {
        WRow::Grouped { lo, hi, sf, .. } => (lo.as_ptr(), hi.as_ptr(), sf.as_ptr()),
        _ => unreachable!("a grouped loader on another row kind"),
    }
}

/// Sixteen i32 lanes: `a` in lanes 0..8, `b` in lanes 8..16.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn halves(a: [i32; 8], b: [i32; 8]) -> __m512i {
    _mm512_setr_epi32(
        a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], b[0], b[1], b[2], b[3], b[4], b[5], b[6],
        b[7],
    )
}

/// The nibbles of 32 elements of a pair of rows (16 code bytes each at `a`, `b`): lane i
/// holds in byte v (bits 8v..8v + 4, junk in the byte's upper half) the nibble of element
/// 8v + i of row A (lanes 0..8) or B (lanes 8..16). Each row's 16 bytes are broadcast to
/// two 128-bit chunks; one `vpshufb` gathers into lane i the bytes holding elements i,
/// 8 + i, 16 + i, 24 + i, and a per-lane shift by 0 or 4 (odd i) moves their nibbles down.
///
/// # Safety
/// 16 readable bytes at `a` and `b`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn nibble_bytes(a: *const u8, b: *const u8) -> __m512i {
    // SAFETY: the caller's contract.
    let src = unsafe {
        let ra = _mm512_broadcast_i32x4(_mm_loadu_si128(a.cast()));
        _mm512_mask_broadcast_i32x4(ra, 0xFF00, _mm_loadu_si128(b.cast()))
    };
    let d = _mm512_shuffle_epi8(src, gather_ctl());
    let odd = [0, 4, 0, 4, 0, 4, 0, 4];
    _mm512_srlv_epi32(d, halves(odd, odd))
}

/// Byte v of each lane of `d` moved to bits 0..8, v = 0..4.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn bytes_down(d: __m512i) -> [__m512i; 4] {
    [
        d,
        _mm512_srli_epi32::<8>(d),
        _mm512_srli_epi32::<16>(d),
        _mm512_srli_epi32::<24>(d),
    ]
}

/// The `vpermt2ps` indices of 32 nibble-coded elements of a pair of rows (16 code bytes
/// each at `a`, `b`): register v, lane i the nibble of element 8v + i, plus 16 in row B's
/// lanes. The bytes are gathered as in [`nibble_bytes`] (byte v of lane i holds element
/// 8v + i), then made indices for all four registers at once: each byte's low nibble and
/// the row's bit 4 (even lanes), or the byte's high nibble (`vpsrlw` by 4) under the same
/// bit 4 (odd lanes, a masked bit select); register v shifts byte v down.
///
/// # Safety
/// 16 readable bytes at `a` and `b`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn nibble_indices(a: *const u8, b: *const u8) -> [__m512i; 4] {
    // SAFETY: the caller's contract.
    let src = unsafe {
        let ra = _mm512_broadcast_i32x4(_mm_loadu_si128(a.cast()));
        _mm512_mask_broadcast_i32x4(ra, 0xFF00, _mm_loadu_si128(b.cast()))
    };
    let d = _mm512_shuffle_epi8(src, gather_ctl());
    let low = _mm512_set1_epi32(0x0F0F_0F0F);
    // (d & low) | row bit: table 0xEA = (A & B) | C.
    let row = halves([0; 8], [0x1010_1010; 8]);
    let e = _mm512_ternarylogic_epi32::<0xEA>(d, low, row);
    // Odd lanes: C ? B : A (table 0xD8), B = each byte's high nibble moved down.
    let i = _mm512_mask_ternarylogic_epi32::<0xD8>(e, 0xAAAA, _mm512_srli_epi16::<4>(d), low);
    bytes_down(i)
}

/// The `vpshufb` control of [`nibble_bytes`]: lane i of a row (i = 0..8; chunk i / 4)
/// takes bytes i/2, 4 + i/2, 8 + i/2, 12 + i/2.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn gather_ctl() -> __m512i {
    let g = |i: i32| {
        let j = i / 2;
        j | (4 + j) << 8 | (8 + j) << 16 | (12 + j) << 24
    };
    let ctl = [0, 1, 2, 3, 4, 5, 6, 7].map(g);
    halves(ctl, ctl)
}

/// The `vpermt2ps` index of lanes holding a nibble in bits 0..4 (junk above): the nibble,
/// plus 16 in lanes 8..16 (row B's table).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn pair_index(n: __m512i) -> __m512i {
    // (n & 15) | (16 in the upper half): ternary-logic table 0xEA = (A & B) | C.
    _mm512_ternarylogic_epi32::<0xEA>(n, _mm512_set1_epi32(15), halves([0; 8], [16; 8]))
}

/// `a` broadcast to lanes 0..8, `b` to lanes 8..16.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn pair_ps(a: f32, b: f32) -> __m512 {
    _mm512_mask_mov_ps(_mm512_set1_ps(a), 0xFF00, _mm512_set1_ps(b))
}

impl Load2 for Q4 {
    type P = GroupedP;
    fn ptr(w: &WRow<'_>) -> GroupedP {
        grouped_ptr(w)
    }
    fn codes(p: GroupedP) -> *const u8 {
        p.0
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    unsafe fn load((la, _, sa): GroupedP, (lb, _, sb): GroupedP, k: usize) -> [__m512; 4] {
        // Words 0..15 are codes 0..7, −8..−1: scale · code is one rounding, as in the
        // scalar reference.
        let codes = _mm512_setr_ps(
            0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0,
        );
        // SAFETY: the groups' scales and the codes of k..k+32 (caller).
        unsafe {
            let ta = _mm512_mul_ps(_mm512_set1_ps(*sa.add(k / 64)), codes);
            let tb = _mm512_mul_ps(_mm512_set1_ps(*sb.add(k / 64)), codes);
            let idx = nibble_indices(la.add(k / 2), lb.add(k / 2));
            let mut o = [ta; 4];
            for (v, ov) in o.iter_mut().enumerate() {
                *ov = _mm512_permutex2var_ps(ta, idx[v], tb);
            }
            o
        }
    }
}

/// Four registers of 2-bit-coded values of a pair of rows (32 elements each): `ta` / `tb`
/// = row A's / B's four values `scale·code` by word, repeated (period 4); each lane takes
/// its word from the row's 32-bit word of 16 codes (`vpermd`, `vpsrlvd`), bit 4 of the
/// index selects row B's table (`vpermt2ps`).
///
/// # Safety
/// The 8 code bytes of elements k..k+32 of both rows are readable.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn two_bit_pair(
    la: *const u8,
    lb: *const u8,
    ta: __m512,
    tb: __m512,
    k: usize,
) -> [__m512; 4] {
    // SAFETY: 8 code bytes of each row at k/4 (caller).
    let words = unsafe {
        _mm512_castsi128_si512(_mm_unpacklo_epi64(
            _mm_loadl_epi64(la.add(k / 4).cast()),
            _mm_loadl_epi64(lb.add(k / 4).cast()),
        ))
    };
    let mut o = [ta; 4];
    for (v, ov) in o.iter_mut().enumerate() {
        // Row A's word v / 2 in lanes 0..8, row B's (word 2 + v / 2) in lanes 8..16,
        // shifted right by 2i (+16 for the word's second half).
        let vi = v as i32;
        let w = _mm512_permutexvar_epi32(halves([vi / 2; 8], [2 + vi / 2; 8]), words);
        let sh = [0, 2, 4, 6, 8, 10, 12, 14].map(|c| c + 16 * (vi % 2));
        let idx = pair_index(_mm512_srlv_epi32(w, halves(sh, sh)));
        *ov = _mm512_permutex2var_ps(ta, idx, tb);
    }
    o
}

/// The 2-bit tables of a pair of rows: `codes` (the code of words 0..3, period 4) times
/// each row's scale of group `g` (one rounding, as the scalar reference).
///
/// # Safety
/// Both rows have a scale g.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn two_bit_tables(sa: *const f32, sb: *const f32, g: usize, codes: [f32; 4]) -> [__m512; 2] {
    let c = codes;
    let t = _mm512_setr_ps(
        c[0], c[1], c[2], c[3], c[0], c[1], c[2], c[3], c[0], c[1], c[2], c[3], c[0], c[1], c[2],
        c[3],
    );
    // SAFETY: the caller's contract.
    unsafe {
        [
            _mm512_mul_ps(_mm512_set1_ps(*sa.add(g)), t),
            _mm512_mul_ps(_mm512_set1_ps(*sb.add(g)), t),
        ]
    }
}

impl Load2 for Q2 {
    type P = GroupedP;
    fn ptr(w: &WRow<'_>) -> GroupedP {
        grouped_ptr(w)
    }
    fn codes(p: GroupedP) -> *const u8 {
        p.0
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    unsafe fn load((la, _, sa): GroupedP, (lb, _, sb): GroupedP, k: usize) -> [__m512; 4] {
        // SAFETY: the group's scales and the codes of k..k+32 (caller).
        unsafe {
            // Words 0..3 are codes −1, 0, 1, 2.
            let [ta, tb] = two_bit_tables(sa, sb, k / 64, [-1.0, 0.0, 1.0, 2.0]);
            two_bit_pair(la, lb, ta, tb, k)
        }
    }
}

impl Load2 for T2 {
    type P = GroupedP;
    fn ptr(w: &WRow<'_>) -> GroupedP {
        grouped_ptr(w)
    }
    fn codes(p: GroupedP) -> *const u8 {
        p.0
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    unsafe fn load((la, _, sa): GroupedP, (lb, _, sb): GroupedP, k: usize) -> [__m512; 4] {
        // SAFETY: the group's scales and the codes of k..k+32 (caller).
        unsafe {
            // Two's-complement words 0..3: codes 0, 1, −2, −1.
            let [ta, tb] = two_bit_tables(sa, sb, k / 128, [0.0, 1.0, -2.0, -1.0]);
            two_bit_pair(la, lb, ta, tb, k)
        }
    }
}

impl Load2 for Q8 {
    type P = GroupedP;
    fn ptr(w: &WRow<'_>) -> GroupedP {
        grouped_ptr(w)
    }
    fn codes(p: GroupedP) -> *const u8 {
        p.0
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    unsafe fn load((la, _, sa): GroupedP, (lb, _, sb): GroupedP, k: usize) -> [__m512; 4] {
        // SAFETY: the group's scales and the 32 code bytes of k..k+32 (caller).
        unsafe {
            let s = pair_ps(*sa.add(k / 32), *sb.add(k / 32));
            let mut o = [s; 4];
            for h in 0..2 {
                // 16 codes of each row (`vpmovsxbd`), then row A's and B's halves paired:
                // 128-bit chunks (0, 1) of each, then (2, 3).
                let qa = _mm512_cvtepi8_epi32(_mm_loadu_si128(la.add(k + 16 * h).cast()));
                let qb = _mm512_cvtepi8_epi32(_mm_loadu_si128(lb.add(k + 16 * h).cast()));
                let q = [
                    _mm512_shuffle_i64x2::<0b0100_0100>(qa, qb),
                    _mm512_shuffle_i64x2::<0b1110_1110>(qa, qb),
                ];
                for j in 0..2 {
                    o[2 * h + j] = _mm512_mul_ps(s, _mm512_cvtepi32_ps(q[j]));
                }
            }
            o
        }
    }
}

/// Four registers of q5 / q6 values (`HI` = plane-1 bits per element, 1 or 2) of a pair
/// of rows from `d` ([`nibble_bytes`]) and `h` (element 8v + i's plane-1 bits at bits
/// 4..4 + HI of byte v of lane i): one bit select joins them into each byte's 4 + HI-bit
/// word; register v moves byte v's word to the top (`vpslld`), one arithmetic shift
/// right sign-extends it; `vcvtdq2ps`, times the pair's scales `s`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn word_values<const HI: i32>(d: __m512i, h: __m512i, s: __m512) -> [__m512; 4] {
    // Bits 0..4 of each byte from d, bits 4..8 from h (table 0xE4: C ? A : B).
    let w = _mm512_ternarylogic_epi32::<0xE4>(d, h, _mm512_set1_epi32(0x0F0F_0F0F));
    let q = if HI == 1 {
        [
            _mm512_srai_epi32::<27>(_mm512_slli_epi32::<27>(w)),
            _mm512_srai_epi32::<27>(_mm512_slli_epi32::<19>(w)),
            _mm512_srai_epi32::<27>(_mm512_slli_epi32::<11>(w)),
            _mm512_srai_epi32::<27>(_mm512_slli_epi32::<3>(w)),
        ]
    } else {
        [
            _mm512_srai_epi32::<26>(_mm512_slli_epi32::<26>(w)),
            _mm512_srai_epi32::<26>(_mm512_slli_epi32::<18>(w)),
            _mm512_srai_epi32::<26>(_mm512_slli_epi32::<10>(w)),
            _mm512_srai_epi32::<26>(_mm512_slli_epi32::<2>(w)),
        ]
    };
    q.map(|t| _mm512_mul_ps(s, _mm512_cvtepi32_ps(t)))
}

/// Four registers of q6 values of a pair of rows ([`word_values`]): the plane-1 bytes
/// gathered as the nibbles (lane i, byte v: the byte holding element 8v + i's two bits)
/// and rotated per lane so that those bits sit at bits 4..6 of byte v.
///
/// # Safety
/// As [`Load2::load`] for q6 rows.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn q6_values((la, ha, sa): GroupedP, (lb, hb, sb): GroupedP, k: usize) -> [__m512; 4] {
    // SAFETY: the groups' scales, the codes of k..k+32 and their 8 plane-1 bytes (caller).
    unsafe {
        let s = pair_ps(*sa.add(k / 64), *sb.add(k / 64));
        let d = nibble_bytes(la.add(k / 2), lb.add(k / 2));
        let ra = _mm512_broadcast_i32x4(_mm_loadl_epi64(ha.add(k / 4).cast()));
        let src = _mm512_mask_broadcast_i32x4(ra, 0xFF00, _mm_loadl_epi64(hb.add(k / 4).cast()));
        // Lane i of a row: plane-1 bytes i/4, 2 + i/4, 4 + i/4, 6 + i/4 (element 8v + i's
        // two bits at 2(i mod 4) of byte v), rotated to bits 4..6.
        let g = |i: i32| {
            let j = i / 4;
            j | (2 + j) << 8 | (4 + j) << 16 | (6 + j) << 24
        };
        let ctl = [0, 1, 2, 3, 4, 5, 6, 7].map(g);
        let h = _mm512_shuffle_epi8(src, halves(ctl, ctl));
        let rot = [28, 30, 0, 2, 28, 30, 0, 2];
        let h = _mm512_rorv_epi32(h, halves(rot, rot));
        word_values::<2>(d, h, s)
    }
}

impl Load2 for Q5 {
    type P = GroupedP;
    fn ptr(w: &WRow<'_>) -> GroupedP {
        grouped_ptr(w)
    }
    const HIGH_BITS: usize = 1;
    fn high(p: GroupedP) -> *const u8 {
        p.1
    }
    fn codes(p: GroupedP) -> *const u8 {
        p.0
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    unsafe fn load((la, ha, sa): GroupedP, (lb, hb, sb): GroupedP, k: usize) -> [__m512; 4] {
        // SAFETY: the groups' scales, the codes of k..k+32 and their plane-1 word (caller).
        unsafe {
            let d = nibble_bytes(la.add(k / 2), lb.add(k / 2));
            // Plane-1 bit 8v + i of the row's word to bit 8v + 4 of lane i (every v):
            // rotate right by i − 4.
            let h = _mm512_mask_set1_epi32(
                _mm512_set1_epi32(std::ptr::read_unaligned(ha.add(k / 8).cast())),
                0xFF00,
                std::ptr::read_unaligned(hb.add(k / 8).cast()),
            );
            let c = [28, 29, 30, 31, 0, 1, 2, 3];
            let h = _mm512_rorv_epi32(h, halves(c, c));
            let s = pair_ps(*sa.add(k / 64), *sb.add(k / 64));
            word_values::<1>(d, h, s)
        }
    }
}

impl Load2 for Q6 {
    type P = GroupedP;
    fn ptr(w: &WRow<'_>) -> GroupedP {
        grouped_ptr(w)
    }
    const HIGH_BITS: usize = 2;
    fn high(p: GroupedP) -> *const u8 {
        p.1
    }
    fn codes(p: GroupedP) -> *const u8 {
        p.0
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    unsafe fn load(a: GroupedP, b: GroupedP, k: usize) -> [__m512; 4] {
        // SAFETY: the caller's contract.
        unsafe { q6_values(a, b, k) }
    }
}

/// Codes, block scales and the divisor of an nvfp4 row.
type Nvfp4P = (*const u8, *const f32, f32);

/// The values of elements k..k+32 of a pair of nvfp4 rows: `mags` = row A's 8 magnitudes
/// of blocks k/16 and k/16 + 1 (lanes 0..8, 8..16), `magsb` row B's; each block's
/// 16-entry signed table is its magnitudes then their negations (sign bit flipped, as
/// the scalar reference), looked up by the whole nibble.
///
/// # Safety
/// The 16 code bytes of elements k..k+32 of both rows are readable.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn e2m1_pair(
    ca: *const u8,
    cb: *const u8,
    mags: __m512,
    magsb: __m512,
    k: usize,
) -> [__m512; 4] {
    let sign = halves([0; 8], [i32::MIN; 8]);
    // 128-bit chunks (2b, 2b + 1) twice: block b's 8 magnitudes in both halves, the
    // upper half negated.
    let mut t = [
        _mm512_shuffle_f32x4::<0b0100_0100>(mags, mags),
        _mm512_shuffle_f32x4::<0b0100_0100>(magsb, magsb),
        _mm512_shuffle_f32x4::<0b1110_1110>(mags, mags),
        _mm512_shuffle_f32x4::<0b1110_1110>(magsb, magsb),
    ];
    for tb in t.iter_mut() {
        *tb = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(*tb), sign));
    }
    // SAFETY: 16 code bytes of each row at k/2 (caller).
    let idx = unsafe { nibble_indices(ca.add(k / 2), cb.add(k / 2)) };
    let mut o = [mags; 4];
    for (v, ov) in o.iter_mut().enumerate() {
        *ov = _mm512_permutex2var_ps(t[2 * (v / 2)], idx[v], t[2 * (v / 2) + 1]);
    }
    o
}

/// Row A's block scales k/16, k/16 + 1 in lanes 0..8, 8..16 (each broadcast), and row
/// B's.
///
/// # Safety
/// Both rows have scales k/16 and k/16 + 1.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn block_scales(sa: *const f32, sb: *const f32, k: usize) -> (__m512, __m512) {
    // SAFETY: the caller's contract.
    unsafe {
        (
            pair_ps(*sa.add(k / 16), *sa.add(k / 16 + 1)),
            pair_ps(*sb.add(k / 16), *sb.add(k / 16 + 1)),
        )
    }
}

/// e2m1 magnitudes 0..7, twice.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn mags16() -> __m512 {
    let m = &crate::words::e2m1::MAGNITUDES;
    _mm512_setr_ps(
        m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[0], m[1], m[2], m[3], m[4], m[5], m[6],
        m[7],
    )
}

impl Load2 for Nvfp4 {
    type P = Nvfp4P;
    fn ptr(w: &WRow<'_>) -> Nvfp4P {
        match w {
            WRow::Nvfp4 { codes, sf, d } => (codes.as_ptr(), sf.as_ptr(), *d),
            _ => unreachable!("the nvfp4 loader on another row kind"),
        }
    }
    fn codes(p: Nvfp4P) -> *const u8 {
        p.0
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    unsafe fn load((ca, sa, da): Nvfp4P, (cb, sb, db): Nvfp4P, k: usize) -> [__m512; 4] {
        // SAFETY: the blocks' scales and the codes of k..k+32 (caller).
        unsafe {
            let (s_a, s_b) = block_scales(sa, sb, k);
            // binary32(binary32(|e2m1|·sf) / d), as the scalar reference.
            let ma = _mm512_div_ps(_mm512_mul_ps(mags16(), s_a), _mm512_set1_ps(da));
            let mb = _mm512_div_ps(_mm512_mul_ps(mags16(), s_b), _mm512_set1_ps(db));
            e2m1_pair(ca, cb, ma, mb, k)
        }
    }
}

impl Load2 for Nvfp4Scaled {
    type P = Nvfp4P;
    fn ptr(w: &WRow<'_>) -> Nvfp4P {
        match w {
            WRow::Nvfp4Scaled { codes, sf, d } => (codes.as_ptr(), sf.as_ptr(), *d),
            _ => unreachable!("the nvfp4 scaled loader on another row kind"),
        }
    }
    fn codes(p: Nvfp4P) -> *const u8 {
        p.0
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    unsafe fn load((ca, sa, _): Nvfp4P, (cb, sb, _): Nvfp4P, k: usize) -> [__m512; 4] {
        let m = &crate::words::e2m1::MAGNITUDES;
        // The signed values of the 16 words: ±|e2m1|, the sign bit 3.
        let signed = _mm512_setr_ps(
            m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], -m[0], -m[1], -m[2], -m[3], -m[4],
            -m[5], -m[6], -m[7],
        );
        // SAFETY: the blocks' scales and the codes of k..k+32 (caller).
        unsafe {
            // binary32(±|e2m1|·sf) = ±binary32(|e2m1|·sf) (exact; rounding is symmetric),
            // one multiply per block and row.
            let t = |s: *const f32, b: usize| _mm512_mul_ps(signed, _mm512_set1_ps(*s.add(b)));
            let tables = [
                [t(sa, k / 16), t(sb, k / 16)],
                [t(sa, k / 16 + 1), t(sb, k / 16 + 1)],
            ];
            let idx = nibble_indices(ca.add(k / 2), cb.add(k / 2));
            let mut o = [signed; 4];
            for (v, ov) in o.iter_mut().enumerate() {
                let [ta, tb] = tables[v / 2];
                *ov = _mm512_permutex2var_ps(ta, idx[v], tb);
            }
            o
        }
    }
    #[inline(always)]
    fn finish((_, _, d): Nvfp4P, y: f32) -> f32 {
        y / d
    }
}

/// Thirty-two E4M3FN words as `2⁻⁸ ×` their exact f32 values, in two registers of 16
/// (words 0..16, 16..32): the sign-extended word shifted left by 7, bit 14 (a copy of the
/// sign) cleared, is the binary16 of value / 256 (normal and subnormal alike, the biases
/// differ by 8); a NaN word (magnitude 0x7F) becomes the binary16 quiet NaN of its sign,
/// as `float_avx2::e4m3fn8_div256` makes it. Converted by F16C.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn e4m3fn32_div256(c: __m256i) -> [__m512; 2] {
    let w = _mm512_cvtepi8_epi16(c);
    let h = _mm512_and_si512(
        _mm512_slli_epi16::<7>(w),
        _mm512_set1_epi16(0xBFFFu16 as i16),
    );
    let m7 = _mm512_set1_epi16(0x7F);
    let nan = _mm512_cmpeq_epi16_mask(_mm512_and_si512(w, m7), m7);
    // (h & 0x8000) | 0x7E00 where the word is a NaN word.
    let q = _mm512_ternarylogic_epi32::<0xEA>(
        h,
        _mm512_set1_epi16(0x8000u16 as i16),
        _mm512_set1_epi16(0x7E00),
    );
    let h = _mm512_mask_mov_epi16(h, nan, q);
    [
        _mm512_cvtph_ps(_mm512_castsi512_si256(h)),
        _mm512_cvtph_ps(_mm512_extracti64x4_epi64::<1>(h)),
    ]
}

/// Four consecutive rows' nvfp4 block scales as f32 (exact) for their first
/// `16·(nkb / 16)` blocks, read from the swizzled scale plane (layout
/// block_scale_k16_m128x4_v1) at `lines` = `block_scale::offset(row, 0, nkb) − 4·stripe`
/// for the first row (a multiple of 4), whose 32-row stripe within its 128-row band is
/// `stripe`: in every tile the four rows' 16-byte lines are 64 contiguous bytes, and each
/// row's 4 words sit at dword `stripe` of its line. Per 4 tiles, four 64-byte loads and
/// three two-source dword permutes put the 4 rows' 16 words each in row order; each 32
/// are converted as [`e4m3fn32_div256`] times 256. `out` = 4 rows × `nkb`, row-major.
/// Returns how many blocks of each row it wrote.
///
/// # Safety
/// AVX-512 F/BW/VL, AVX2 and F16C available; the 64 bytes at `lines + t·TILE_BYTES` are
/// readable for every tile t < `nkb / 4` (the rows' whole tiles); `stripe < 4`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
pub(super) unsafe fn nvfp4_quad_scales(
    lines: *const u8,
    stripe: usize,
    nkb: usize,
    out: &mut [f32],
) -> usize {
    use crate::layouts::block_scale::{TILE_BLOCKS, TILE_BYTES};
    const BLOCKS: usize = 4 * TILE_BLOCKS;
    assert!(stripe < 4 && out.len() == 4 * nkb);
    let n = nkb / BLOCKS * BLOCKS;
    let s = stripe as i32;
    // Tiles t (source a) and t + 1 (source b): row i's words of both at dwords 2i, 2i + 1.
    let pair = _mm512_add_epi32(
        _mm512_setr_epi32(0, 16, 4, 20, 8, 24, 12, 28, 0, 0, 0, 0, 0, 0, 0, 0),
        _mm512_set1_epi32(s),
    );
    // Row i's words of tiles t..t + 4 at dwords 4i..4i + 4, from the two pairs.
    let rows = _mm512_setr_epi32(0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
    let k256 = _mm512_set1_ps(256.0);
    for c in (0..n).step_by(BLOCKS) {
        // SAFETY: tiles c/4..c/4 + 4 are whole tiles of the rows (c + 16 <= nkb): their
        // 64 bytes at lines + t·TILE_BYTES are readable (caller); each row's slice of
        // `out` holds blocks c..c + 16.
        unsafe {
            let at = lines.add(c / TILE_BLOCKS * TILE_BYTES);
            let l = |t: usize| _mm512_loadu_si512(at.add(t * TILE_BYTES).cast());
            let p01 = _mm512_permutex2var_epi32(l(0), pair, l(1));
            let p23 = _mm512_permutex2var_epi32(l(2), pair, l(3));
            let w = _mm512_permutex2var_epi32(p01, rows, p23);
            let [r0, r1] = e4m3fn32_div256(_mm512_castsi512_si256(w));
            let [r2, r3] = e4m3fn32_div256(_mm512_extracti64x4_epi64::<1>(w));
            let o = out.as_mut_ptr().add(c);
            _mm512_storeu_ps(o, _mm512_mul_ps(r0, k256));
            _mm512_storeu_ps(o.add(nkb), _mm512_mul_ps(r1, k256));
            _mm512_storeu_ps(o.add(2 * nkb), _mm512_mul_ps(r2, k256));
            _mm512_storeu_ps(o.add(3 * nkb), _mm512_mul_ps(r3, k256));
        }
    }
    n
}

impl Load2 for Fp8Scaled {
    /// Codes and the row's factor 256·s.
    type P = (*const u8, f32);
    fn ptr(w: &WRow<'_>) -> Self::P {
        match w {
            WRow::Fp8Scaled { codes, factor } => (codes.as_ptr(), *factor),
            _ => unreachable!("the fp8 scaled loader on another row kind"),
        }
    }
    fn codes(p: Self::P) -> *const u8 {
        p.0
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    unsafe fn load((ca, _): Self::P, (cb, _): Self::P, k: usize) -> [__m512; 4] {
        // SAFETY: the 32 code bytes of elements k..k+32 of both rows (caller).
        let (a, b) = unsafe {
            (
                _mm256_loadu_si256(ca.add(k).cast()),
                _mm256_loadu_si256(cb.add(k).cast()),
            )
        };
        // Per 128-bit half, the 8 words of A then the 8 of B: registers 0 and 2 from the
        // low 8 bytes of each half, 1 and 3 from the high ones.
        let [r0, r2] = e4m3fn32_div256(_mm256_unpacklo_epi64(a, b));
        let [r1, r3] = e4m3fn32_div256(_mm256_unpackhi_epi64(a, b));
        [r0, r1, r2, r3]
    }
    #[inline(always)]
    fn finish((_, factor): Self::P, y: f32) -> f32 {
        y * factor
    }
}

/// The rows' products (`super::float::dot_rows`); with `all` false, the q2 / t2 rows and
/// the fp8 rows in the scaled order run the AVX2 code ([`super::float::all_512`]).
///
/// # Safety
/// AVX-512 F/BW/VL, AVX2, FMA and F16C available; every row of `w` has the same kind and
/// length K and `x.len() == m · K`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
pub(super) unsafe fn dot_rows(w: &[WRow<'_>], x: &[f32], m: usize, out: &mut [f32], all: bool) {
    use super::float::Grouped as G;
    // SAFETY (all calls): the caller's contract.
    unsafe {
        match w.first() {
            Some(WRow::Grouped { kind: G::Q2, .. }) if all => tiles::<Q2>(w, x, m, out),
            Some(WRow::Grouped { kind: G::T2, .. }) if all => tiles::<T2>(w, x, m, out),
            Some(WRow::Grouped { kind: G::Q4, .. }) => tiles::<Q4>(w, x, m, out),
            Some(WRow::Grouped { kind: G::Q5, .. }) => tiles::<Q5>(w, x, m, out),
            Some(WRow::Grouped { kind: G::Q6, .. }) => tiles::<Q6>(w, x, m, out),
            Some(WRow::Grouped { kind: G::Q8, .. }) => tiles::<Q8>(w, x, m, out),
            Some(WRow::Nvfp4 { .. }) => tiles::<Nvfp4>(w, x, m, out),
            Some(WRow::Nvfp4Scaled { .. }) => tiles::<Nvfp4Scaled>(w, x, m, out),
            Some(WRow::Fp8Scaled { .. }) if all => tiles::<Fp8Scaled>(w, x, m, out),
            // From 3 activation rows (8 weight rows × 2 pairs); at M = 2 the AVX2 kernel's
            // 4 × 2 tiles measured faster beyond L3.
            Some(WRow::F32(_) | WRow::F32Le(_) | WRow::Bf16Le(_)) if m >= 3 => {
                word_tiles(w, x, m, out)
            }
            _ => super::float_avx2::dot_rows(w, x, m, out, true),
        }
    }
}

/// Tiles of up to 4 row pairs (8 weight rows) × 1 activation row.
///
/// # Safety
/// As [`dot_rows`].
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn tiles<L: Load2>(w: &[WRow<'_>], x: &[f32], m: usize, out: &mut [f32]) {
    // Rows are equally spaced in their plane: each tile prefetches the same lines of the
    // rows one tile further (the hardware prefetcher does not pick up eight short streams
    // in time).
    let (ahead, ahead_hi) = match w {
        [a, b, ..] => {
            let (a, b) = (L::ptr(a), L::ptr(b));
            (
                8 * (L::codes(b) as usize).wrapping_sub(L::codes(a) as usize),
                8 * (L::high(b) as usize).wrapping_sub(L::high(a) as usize),
            )
        }
        _ => (0, 0),
    };
    let mut i = 0;
    while i < w.len() {
        let rw = (w.len() - i).min(8);
        for r in 0..m {
            let ws = &w[i..i + rw];
            // SAFETY: the caller's contract.
            unsafe {
                match rw.div_ceil(2) {
                    4 => tile::<L, 4>(ws, x, r, m, out, i, [ahead, ahead_hi]),
                    3 => tile::<L, 3>(ws, x, r, m, out, i, [ahead, ahead_hi]),
                    2 => tile::<L, 2>(ws, x, r, m, out, i, [ahead, ahead_hi]),
                    _ => tile::<L, 1>(ws, x, r, m, out, i, [ahead, ahead_hi]),
                }
            }
        }
        i += rw;
    }
}

/// Weight rows `w` (2·NP − 1 or 2·NP of them; an odd count pairs its last row with
/// itself) × activation row `r` into `out[(i0 + i)·m + r]`; each row's code lines
/// `ahead` bytes on (and its high-bit lines `ahead_hi` bytes on) are prefetched.
///
/// # Safety
/// As [`dot_rows`]; `w.len()` is 2·NP − 1 or 2·NP.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn tile<L: Load2, const NP: usize>(
    w: &[WRow<'_>],
    x: &[f32],
    r: usize,
    m: usize,
    out: &mut [f32],
    i0: usize,
    [ahead, ahead_hi]: [usize; 2],
) {
    let k = w[0].len();
    let n = w.len();
    assert!(x.len() >= (r + 1) * k && (2 * NP - 1..=2 * NP).contains(&n));
    let wp: [[L::P; 2]; NP] =
        std::array::from_fn(|p| [L::ptr(&w[2 * p]), L::ptr(&w[(2 * p + 1).min(n - 1)])]);
    let xr = &x[r * k..(r + 1) * k];
    let xp = xr.as_ptr();
    let mut acc = [_mm512_setzero_ps(); NP];
    // One step: elements kk..kk + 32 of every row.
    macro_rules! step {
        ($kk:expr) => {{
            let kk = $kk;
            // SAFETY: kk + 32 <= K values in the activation row and in each weight row.
            unsafe {
                let mut xv = [_mm512_setzero_ps(); 4];
                for (j, xj) in xv.iter_mut().enumerate() {
                    let h = _mm256_loadu_pd(xp.add(kk + 8 * j).cast());
                    *xj = _mm512_castpd_ps(_mm512_broadcast_f64x4(h));
                }
                for p in 0..NP {
                    if kk % 128 == 0 {
                        for h in 0..2 {
                            let c = L::codes(wp[p][h]).wrapping_add(ahead + kk / 2);
                            _mm_prefetch::<_MM_HINT_T0>(c.cast());
                        }
                    }
                    if L::HIGH_BITS > 0 && (kk * L::HIGH_BITS / 8).is_multiple_of(64) {
                        for h in 0..2 {
                            let c =
                                L::high(wp[p][h]).wrapping_add(ahead_hi + kk * L::HIGH_BITS / 8);
                            _mm_prefetch::<_MM_HINT_T0>(c.cast());
                        }
                    }
                    let wv = L::load(wp[p][0], wp[p][1], kk);
                    for j in 0..4 {
                        acc[p] = _mm512_fmadd_ps(wv[j], xv[j], acc[p]);
                    }
                }
            }
        }};
    }
    let mut kk = 0;
    // Two steps per iteration: both halves of a 64-value group share its scales (a table
    // computed once).
    while kk + 64 <= k {
        step!(kk);
        step!(kk + 32);
        kk += 64;
    }
    if kk + 32 <= k {
        step!(kk);
        kk += 32;
    }
    for p in 0..NP {
        let mut a = [0f32; 16];
        // SAFETY: 16 writable floats.
        unsafe { _mm512_storeu_ps(a.as_mut_ptr(), acc[p]) };
        for h in 0..2 {
            let i = 2 * p + h;
            if i >= n {
                break;
            }
            let mut lanes: [f32; 8] = a[8 * h..8 * h + 8].try_into().unwrap();
            accumulate_scalar(&w[i], xr, kk, &mut lanes);
            out[(i0 + i) * m + r] = L::finish(wp[p][h], tree8(lanes));
        }
    }
}

/// f32 / fp32 / bf16 weight rows (materialized values or words) × several activation rows:
/// tiles of up to 4 weight rows × 8 activation rows (8 × 3 at M = 3), each 512-bit
/// accumulator one weight row × a pair of activation rows (lanes 0..8 the first, 8..16
/// the second, lane j holding elements k ≡ j mod 8: the f32 kernel's order), the weight
/// row's 8 values broadcast to both halves and the pair's two 8-value runs joined; 16
/// accumulators per full tile.
///
/// # Safety
/// As [`dot_rows`]; every row of `w` is `F32`, `F32Le` or `Bf16Le`; M ≥ 3.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn word_tiles(w: &[WRow<'_>], x: &[f32], m: usize, out: &mut [f32]) {
    // M = 3: 8 weight rows × 2 pairs (16 accumulators), so a tile of more than 4 weight
    // rows always takes 2 pairs.
    debug_assert!(m >= 3);
    let (max_rw, max_rx) = if m == 3 { (8, 3) } else { (4, 8) };
    let mut i = 0;
    while i < w.len() {
        let rw = (w.len() - i).min(max_rw);
        let ws = &w[i..i + rw];
        let mut r = 0;
        while r < m {
            let rx = (m - r).min(max_rx);
            let t = (r, rx, m, i);
            // SAFETY: the caller's contract.
            unsafe {
                match (rw, rx.div_ceil(2)) {
                    (8, _) => word_tile::<8, 2>(ws, x, out, t),
                    (7, _) => word_tile::<7, 2>(ws, x, out, t),
                    (6, _) => word_tile::<6, 2>(ws, x, out, t),
                    (5, _) => word_tile::<5, 2>(ws, x, out, t),
                    (4, 4) => word_tile::<4, 4>(ws, x, out, t),
                    (4, 3) => word_tile::<4, 3>(ws, x, out, t),
                    (4, 2) => word_tile::<4, 2>(ws, x, out, t),
                    (4, _) => word_tile::<4, 1>(ws, x, out, t),
                    (3, 4) => word_tile::<3, 4>(ws, x, out, t),
                    (3, 3) => word_tile::<3, 3>(ws, x, out, t),
                    (3, 2) => word_tile::<3, 2>(ws, x, out, t),
                    (3, _) => word_tile::<3, 1>(ws, x, out, t),
                    (2, 4) => word_tile::<2, 4>(ws, x, out, t),
                    (2, 3) => word_tile::<2, 3>(ws, x, out, t),
                    (2, 2) => word_tile::<2, 2>(ws, x, out, t),
                    (2, _) => word_tile::<2, 1>(ws, x, out, t),
                    (_, 4) => word_tile::<1, 4>(ws, x, out, t),
                    (_, 3) => word_tile::<1, 3>(ws, x, out, t),
                    (_, 2) => word_tile::<1, 2>(ws, x, out, t),
                    _ => word_tile::<1, 1>(ws, x, out, t),
                }
            }
            r += rx;
        }
        i += rw;
    }
}

/// Weight rows `w` (RW of them) × activation rows `r0..r0 + rx` (XP pairs; an odd count
/// pairs its last row with itself) into `out[(i0 + i)·m + r]`, where `(r0, rx, m, i0)` =
/// `t`.
///
/// # Safety
/// As [`word_tiles`]; `w.len() == RW`, `rx` is 2·XP − 1 or 2·XP, rows r0..r0 + rx of x.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn word_tile<const RW: usize, const XP: usize>(
    w: &[WRow<'_>],
    x: &[f32],
    out: &mut [f32],
    (r0, rx, m, i0): (usize, usize, usize, usize),
) {
    let k = w[0].len();
    assert!(w.len() == RW && (2 * XP - 1..=2 * XP).contains(&rx) && x.len() >= (r0 + rx) * k);
    let bf16 = matches!(w[0], WRow::Bf16Le(_));
    let wp: [*const u8; RW] = std::array::from_fn(|i| match w[i] {
        WRow::F32(v) => v.as_ptr().cast(),
        WRow::F32Le(b) | WRow::Bf16Le(b) => b.as_ptr(),
        _ => unreachable!("the word tile on a coded row"),
    });
    let xp: [[*const f32; 2]; XP] = std::array::from_fn(|p| {
        let a = r0 + 2 * p;
        [
            x[a * k..].as_ptr(),
            x[(a + 1).min(r0 + rx - 1) * k..].as_ptr(),
        ]
    });
    let kend = k / 8 * 8;
    // Words read from their plane (rows one after another): the first activation rows
    // fetch each new line of the next tile's rows too, as the AVX2 kernel does (beyond L3
    // the hardware prefetcher does not pick up the short streams in time).
    let bytes = if bf16 { 2 } else { 4 };
    let pf = r0 == 0 && !matches!(w[0], WRow::F32(_));
    let (line, ahead) = (64 / bytes, RW * k * bytes);
    let mut acc = [[_mm512_setzero_ps(); XP]; RW];
    let mut kk = 0;
    while kk < kend {
        if pf && kk % line == 0 {
            for p in wp {
                let at = p.wrapping_add(kk * bytes + ahead);
                // SAFETY: a prefetch reads no memory (an unsafe function in older Rust
                // releases).
                #[allow(unused_unsafe)]
                unsafe {
                    _mm_prefetch::<_MM_HINT_T1>(at.cast())
                };
            }
        }
        // SAFETY: kk + 8 <= K values in every activation and weight row.
        unsafe {
            let xv: [__m512; XP] = std::array::from_fn(|p| {
                // (64-bit lane forms: AVX-512 F alone has them.)
                let a = _mm512_castpd256_pd512(_mm256_loadu_pd(xp[p][0].add(kk).cast()));
                let b = _mm256_loadu_pd(xp[p][1].add(kk).cast());
                _mm512_castpd_ps(_mm512_insertf64x4::<1>(a, b))
            });
            for i in 0..RW {
                let wv = if bf16 {
                    // The row's 8 bf16 words in both halves, widened and shifted: exact.
                    let h = _mm256_broadcastsi128_si256(_mm_loadu_si128(wp[i].add(2 * kk).cast()));
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
                } else {
                    let h = _mm256_loadu_pd(wp[i].add(4 * kk).cast());
                    _mm512_castpd_ps(_mm512_broadcast_f64x4(h))
                };
                for p in 0..XP {
                    acc[i][p] = _mm512_fmadd_ps(wv, xv[p], acc[i][p]);
                }
            }
        }
        kk += 8;
    }
    for i in 0..RW {
        for p in 0..XP {
            let mut a = [0f32; 16];
            // SAFETY: 16 writable floats.
            unsafe { _mm512_storeu_ps(a.as_mut_ptr(), acc[i][p]) };
            for h in 0..2 {
                let r = r0 + 2 * p + h;
                if r >= r0 + rx {
                    break;
                }
                let mut lanes: [f32; 8] = a[8 * h..8 * h + 8].try_into().unwrap();
                accumulate_scalar(&w[i], &x[r * k..(r + 1) * k], kend, &mut lanes);
                out[(i0 + i) * m + r] = w[i].finish(tree8(lanes));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::float::{Grouped, dot_rows as dot};
    use super::*;
    use crate::linear::Isa;

    /// Every row count 1..=9 (odd counts pair a row with itself; tiles of 1..=4 pairs),
    /// K tails, M = 1 and 3, random code bytes and scales with NaN / ±Inf / zero among
    /// them: the AVX-512 path's words equal the scalar reference's (NaN outputs compared
    /// as NaN: which NaN an fma passes on is an operand-order detail).
    #[test]
    fn pairs_of_rows_equal_scalar_word_for_word() {
        if !Isa::Avx512.available() {
            eprintln!("note: no avx512 on this machine, its tier is not tested");
            return;
        }
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let canon = |v: &[f32]| -> Vec<u32> {
            v.iter()
                .map(|y| if y.is_nan() { 0x7FC0_0000 } else { y.to_bits() })
                .collect()
        };
        for k in [32usize, 48, 96, 200] {
            for n in 1..=9 {
                for m in [1, 3] {
                    let kp = k.div_ceil(128) * 128;
                    let lo: Vec<u8> = (0..n * kp).map(|_| next() as u8).collect();
                    let hi: Vec<u8> = (0..n * kp).map(|_| next() as u8).collect();
                    let specials = [f32::NAN, f32::INFINITY, -f32::INFINITY, 0.0, -0.0];
                    let sf: Vec<f32> = (0..n * kp)
                        .map(|i| match next() % 16 {
                            0 => specials[i % specials.len()],
                            r => (r as f32 - 8.0) * 0.37,
                        })
                        .collect();
                    let x: Vec<f32> = (0..m * k)
                        .map(|_| (next() % 2001) as f32 / 500.0 - 2.0)
                        .collect();
                    let mut cases: Vec<Vec<WRow<'_>>> = Vec::new();
                    for kind in [
                        Grouped::Q2,
                        Grouped::T2,
                        Grouped::Q4,
                        Grouped::Q5,
                        Grouped::Q6,
                        Grouped::Q8,
                    ] {
                        cases.push(
                            (0..n)
                                .map(|i| WRow::Grouped {
                                    kind,
                                    lo: &lo[i * kp..(i + 1) * kp],
                                    hi: &hi[i * kp..(i + 1) * kp],
                                    sf: &sf[i * kp..(i + 1) * kp],
                                    k,
                                })
                                .collect(),
                        );
                    }
                    let d = [0.75f32, -3.0, f32::NAN, 1e-30];
                    cases.push(
                        (0..n)
                            .map(|i| WRow::Nvfp4 {
                                codes: &lo[i * kp..i * kp + k / 2],
                                sf: &sf[i * kp..(i + 1) * kp],
                                d: d[i % d.len()],
                            })
                            .collect(),
                    );
                    cases.push(
                        (0..n)
                            .map(|i| WRow::Nvfp4Scaled {
                                codes: &lo[i * kp..i * kp + k / 2],
                                sf: &sf[i * kp..(i + 1) * kp],
                                d: d[i % 2],
                            })
                            .collect(),
                    );
                    // E4M3FN codes: the random bytes (NaN words among them) and the same
                    // with every NaN word made finite (the form of a valid payload).
                    let finite: Vec<u8> = lo
                        .iter()
                        .map(|&c| c & !((c & 0x7F == 0x7F) as u8))
                        .collect();
                    let factor = [256.0f32 * 0.37, -3.0, f32::INFINITY, 1e-30];
                    for codes in [&lo, &finite] {
                        cases.push(
                            (0..n)
                                .map(|i| WRow::Fp8Scaled {
                                    codes: &codes[i * kp..i * kp + k],
                                    factor: factor[i % factor.len()],
                                })
                                .collect(),
                        );
                    }
                    for w in &cases {
                        let mut want = vec![0f32; n * m];
                        let mut got = vec![0f32; n * m];
                        dot(Isa::Scalar, true, w, &x, m, &mut want);
                        for all in [true, false] {
                            dot(Isa::Avx512, all, w, &x, m, &mut got);
                            assert_eq!(canon(&got), canon(&want), "K={k} N={n} M={m} {all}");
                        }
                    }
                }
            }
        }
    }

    /// f32 values, fp32 words and bf16 words at M = 2..17 (the 512-bit word tiles from
    /// M = 4: tiles of 1..=4 weight rows × 1..=4 activation-row pairs, odd pairs, K tails):
    /// the words equal the scalar reference's, with NaN, ±Inf, ±0 and subnormals among the
    /// weights and activations (NaN outputs compared as NaN).
    #[test]
    fn word_rows_at_several_activation_rows_equal_scalar_word_for_word() {
        if !Isa::Avx512.available() {
            eprintln!("note: no avx512 on this machine, its tier is not tested");
            return;
        }
        let mut next = crate::linear::cpu::tests::xorshift(0x2545_F491_4F6C_DD1D);
        let canon = |v: &[f32]| -> Vec<u32> {
            v.iter()
                .map(|y| if y.is_nan() { 0x7FC0_0000 } else { y.to_bits() })
                .collect()
        };
        let specials = [
            f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
            0.0,
            -0.0,
            1e-40,
            -3e-39,
        ];
        let value = move |r: u64| match r % 32 {
            0 => specials[(r / 32) as usize % specials.len()],
            _ => ((r >> 8) % 4001) as f32 / 1000.0 - 2.0,
        };
        for k in [8usize, 13, 40, 200, 1029] {
            for n in 1..=9 {
                let vals: Vec<f32> = (0..n * k).map(|_| value(next())).collect();
                let le: Vec<u8> = (0..n * k)
                    .flat_map(|_| value(next()).to_le_bytes())
                    .collect();
                let bf: Vec<u8> = (0..2 * n * k).map(|_| next() as u8).collect();
                let cases: [Vec<WRow<'_>>; 3] = [
                    (0..n)
                        .map(|i| WRow::F32(&vals[i * k..(i + 1) * k]))
                        .collect(),
                    (0..n)
                        .map(|i| WRow::F32Le(&le[4 * i * k..4 * (i + 1) * k]))
                        .collect(),
                    (0..n)
                        .map(|i| WRow::Bf16Le(&bf[2 * i * k..2 * (i + 1) * k]))
                        .collect(),
                ];
                for m in [2, 3, 4, 5, 7, 8, 9, 17] {
                    let x: Vec<f32> = (0..m * k).map(|_| value(next())).collect();
                    for w in &cases {
                        let mut want = vec![0f32; n * m];
                        let mut got = vec![0f32; n * m];
                        dot(Isa::Scalar, true, w, &x, m, &mut want);
                        dot(Isa::Avx512, true, w, &x, m, &mut got);
                        assert_eq!(canon(&got), canon(&want), "K={k} N={n} M={m}");
                    }
                }
            }
        }
    }
}
