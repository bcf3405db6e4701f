//! AVX2 + FMA + F16C path of [`super::float`]: the same values in the same order (the
//! scalar reference's bits), 32 codes at a time.
//!
//! How codes become values (one weight row, 32 values = four 8-lane vectors per step):
//! - q4 / q5 / q6: the 32-bit word holding 8 nibbles is broadcast and shifted per lane
//!   (`vpsllvd`) so that nibble i sits at the top of lane i, the high bits (plane 1,
//!   broadcast the same way) are or-ed above it, and one arithmetic shift right gives the
//!   sign-extended code; `vcvtdq2ps`, times the group's f32 scale (one broadcast per step).
//! - q8: `vpmovsxbd` of 8 code bytes, `vcvtdq2ps`, times the scale.
//! - q2 / t2: the group's four values `scale·code` form an 8-entry table (one multiply per
//!   step); each lane shifts the broadcast 32-bit word of 16 codes right by 2i and
//!   `vpermps` picks its value by the low 3 bits (table period 4).
//! - nvfp4: per 16-value block an 8-entry table of the magnitudes `binary32(|e2m1|·sf) / d`
//!   (one multiply, one divide; in the scaled order `binary32(|e2m1|·sf)`, one multiply);
//!   lane i picks by nibble i's low 3 bits and gets bit 3 as its sign.
//! - E4M3FN: the word's bits placed into binary16 (value / 256) and converted by F16C, times
//!   256·s (not in the scaled order); one byte compare per 32 words selects the short form
//!   (no NaN word, as in any valid payload: widen, shift, clear bit 14) or the general
//!   one. The fp8 scaled order at M = 1 has its own kernel ([`fp8_scaled_m1`]: 4 rows ×
//!   32 codes per step, codes widened in registers, NaN words detected once per tile,
//!   the next row group prefetched).
//! - bf16 / fp32: loads (8 values per step, tiles of up to 8 weight rows × 1 activation
//!   row or 4 × 2); called for the AVX-512 tier, each new line of a tile's rows also
//!   prefetches the same line of the next tile's rows ([`dot_rows`]).
//!
//! Each step's vectors are fma-ed in increasing k into the row's eight-lane accumulator, so
//! lane `k mod 8` sees its elements in increasing k as in the scalar reference; up to 4
//! weight rows run side by side, sharing each activation load.

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::float::{WRow, accumulate_scalar};
use crate::linear::cpu::tree8;
use std::arch::x86_64::*;

/// A weight row's values, `8·V` per step, monomorphized per word type. `P` is what a row
/// needs (its plane pointers and factors), taken once per tile.
trait Load {
    type P: Copy;
    /// 8-value vectors per step: 1 or 4.
    const V: usize;
    fn ptr(w: &WRow<'_>) -> Self::P;
    /// The values of elements `k .. k + 8·V` (the first V vectors).
    ///
    /// # Safety
    /// `k + 8·V <= K`, k a multiple of `8·V`; AVX2, FMA and F16C available.
    unsafe fn load(p: Self::P, k: usize) -> [__m256; 4];
    /// The row's output from its eight-lane sum (as [`WRow::finish`]).
    #[inline(always)]
    fn finish(_p: Self::P, y: f32) -> f32 {
        y
    }
    /// Bytes per value of a word row whose tiles prefetch the rows of the next tile (rows
    /// are consecutive in their plane: one tile further is the same line `RW` rows on);
    /// 0: no software prefetch.
    const PREFETCH_BYTES: usize = 0;
    /// The row's first byte, for that prefetch.
    fn base(_p: Self::P) -> *const u8 {
        std::ptr::null()
    }
}

struct Bf16;
struct F32;
struct Q2;
struct T2;
struct Q4;
struct Q5;
struct Q6;
struct Q8;
struct Fp8;
struct Fp8Scaled;
struct Nvfp4;
struct Nvfp4Scaled;

/// Plane pointers of a grouped row: codes, high bits, f32 scales.
type GroupedP = (*const u8, *const u8, *const f32);

fn grouped_ptr(w: &WRow<'_>) -> GroupedP {
    match w {
        WRow::Grouped { lo, hi, sf, .. } => (lo.as_ptr(), hi.as_ptr(), sf.as_ptr()),
        _ => unreachable!("a grouped loader on another row kind"),
    }
}

fn bytes_ptr(w: &WRow<'_>) -> *const u8 {
    match w {
        WRow::Bf16Le(b) | WRow::F32Le(b) => b.as_ptr(),
        WRow::F32(v) => v.as_ptr().cast(),
        _ => unreachable!("a word loader on a coded row"),
    }
}

const NONE: [__m256; 4] = [unsafe { std::mem::transmute::<[f32; 8], __m256>([0.0; 8]) }; 4];

impl Load for Bf16 {
    type P = *const u8;
    const V: usize = 1;
    const PREFETCH_BYTES: usize = 2;
    fn ptr(w: &WRow<'_>) -> *const u8 {
        bytes_ptr(w)
    }
    fn base(p: *const u8) -> *const u8 {
        p
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load(p: *const u8, k: usize) -> [__m256; 4] {
        // SAFETY: 16 bytes in bounds (caller).
        let h = unsafe { _mm_loadu_si128(p.add(2 * k).cast()) };
        let mut o = NONE;
        o[0] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        o
    }
}

impl Load for F32 {
    type P = *const u8;
    const V: usize = 1;
    const PREFETCH_BYTES: usize = 4;
    fn ptr(w: &WRow<'_>) -> *const u8 {
        bytes_ptr(w)
    }
    fn base(p: *const u8) -> *const u8 {
        p
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load(p: *const u8, k: usize) -> [__m256; 4] {
        let mut o = NONE;
        // SAFETY: 32 bytes in bounds (caller).
        o[0] = unsafe { _mm256_loadu_ps(p.add(4 * k).cast()) };
        o
    }
}

/// The 4-byte word at `p`, broadcast to every i32 lane.
///
/// # Safety
/// 4 readable bytes at `p`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn bcast32(p: *const u8) -> __m256i {
    // SAFETY: 4 bytes (caller).
    _mm256_set1_epi32(unsafe { std::ptr::read_unaligned(p.cast::<i32>()) })
}

/// Lane i: shift left by 28 − 4i (nibble i of a 32-bit word to bits 28..31).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn nibble_top() -> __m256i {
    _mm256_setr_epi32(28, 24, 20, 16, 12, 8, 4, 0)
}

/// `[base − step·i]` for lanes i = 0..7 (per-lane shift counts).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn counts(base: i32, step: i32) -> __m256i {
    _mm256_setr_epi32(
        base,
        base - step,
        base - 2 * step,
        base - 3 * step,
        base - 4 * step,
        base - 5 * step,
        base - 6 * step,
        base - 7 * step,
    )
}

/// The 8 codes of elements `k + 8v .. k + 8v + 8` of q4 / q5 / q6 (`HI` = high-bit width
/// 0, 1, 2; k a multiple of 32, v < 4), sign-extended in i32 lanes: nibble i moved to bits
/// 28..31, then down by `HI`, the high field of element i moved just above it (from the
/// chunk's plane-1 word, broadcast), one arithmetic shift right by 28 − HI.
///
/// # Safety
/// The code bytes of elements k..k+32 and their high bits are readable.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn nibble_codes<const HI: i32>(lo: *const u8, hi: *const u8, k: usize, v: usize) -> __m256i {
    // SAFETY: 4 code bytes at (k + 8v)/2 (caller).
    let t = _mm256_sllv_epi32(unsafe { bcast32(lo.add((k + 8 * v) / 2)) }, nibble_top());
    let j = 8 * v as i32; // element index of lane 0 inside the chunk
    match HI {
        0 => _mm256_srai_epi32::<28>(t),
        1 => {
            // The chunk's 32 high bits: bit j + i of the word to bit 31 of lane i.
            // SAFETY: 4 high bytes at k/8 (caller).
            let h = _mm256_sllv_epi32(unsafe { bcast32(hi.add(k / 8)) }, counts(31 - j, 1));
            let h = _mm256_and_si256(h, _mm256_set1_epi32(i32::MIN));
            _mm256_srai_epi32::<27>(_mm256_or_si256(_mm256_srli_epi32::<1>(t), h))
        }
        _ => {
            // The chunk's 64 high bits as two words: bits 2(j + i) mod 32 .. +1 of word
            // (j / 16) to bits 30..31 of lane i.
            // SAFETY: 8 high bytes at k/4 (caller).
            let w = unsafe { bcast32(hi.add(k / 4 + 4 * (v / 2))) };
            let h = _mm256_sllv_epi32(w, counts(30 - 2 * (j % 16), 2));
            let h = _mm256_and_si256(h, _mm256_set1_epi32(0xC000_0000u32 as i32));
            _mm256_srai_epi32::<26>(_mm256_or_si256(_mm256_srli_epi32::<2>(t), h))
        }
    }
}

/// Four vectors of nibble-coded values sharing one scale (32 values inside one group).
///
/// # Safety
/// As [`Load::load`] for a q4/q5/q6 row.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn nibble_values<const HI: i32>((lo, hi, sf): GroupedP, k: usize) -> [__m256; 4] {
    // SAFETY: the group's scale and the codes of k..k+32 (caller).
    unsafe {
        let s = _mm256_broadcast_ss(&*sf.add(k / 64));
        let mut o = NONE;
        for (v, ov) in o.iter_mut().enumerate() {
            let q = nibble_codes::<HI>(lo, hi, k, v);
            *ov = _mm256_mul_ps(s, _mm256_cvtepi32_ps(q));
        }
        o
    }
}

macro_rules! nibble_loader {
    ($t:ty, $hi:literal) => {
        impl Load for $t {
            type P = GroupedP;
            const V: usize = 4;
            fn ptr(w: &WRow<'_>) -> GroupedP {
                grouped_ptr(w)
            }
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn load(p: GroupedP, k: usize) -> [__m256; 4] {
                // SAFETY: the caller's contract.
                unsafe { nibble_values::<$hi>(p, k) }
            }
        }
    };
}
nibble_loader!(Q4, 0);
nibble_loader!(Q5, 1);
nibble_loader!(Q6, 2);

impl Load for Q8 {
    type P = GroupedP;
    const V: usize = 4;
    fn ptr(w: &WRow<'_>) -> GroupedP {
        grouped_ptr(w)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load((lo, _, sf): GroupedP, k: usize) -> [__m256; 4] {
        // SAFETY: the group's scale and the 32 code bytes of k..k+32 (caller).
        unsafe {
            let s = _mm256_broadcast_ss(&*sf.add(k / 32));
            let mut o = NONE;
            for (v, ov) in o.iter_mut().enumerate() {
                let q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(lo.add(k + 8 * v).cast()));
                *ov = _mm256_mul_ps(s, _mm256_cvtepi32_ps(q));
            }
            o
        }
    }
}

/// Four vectors of 2-bit-coded values: `table` (lane j = the value of word j mod 4) indexed
/// by each lane's word.
///
/// # Safety
/// The 8 code bytes of elements k..k+32 are readable.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn two_bit_values(lo: *const u8, table: __m256, k: usize) -> [__m256; 4] {
    let mut o = NONE;
    for (v, ov) in o.iter_mut().enumerate() {
        // The 32-bit word of 16 codes holding vector v, shifted right by 2i (+16 for the
        // word's second half) in lane i.
        // SAFETY: 4 code bytes at (k + 16·(v/2))/4 (caller).
        let w = unsafe { bcast32(lo.add((k + 16 * (v / 2)) / 4)) };
        let idx = _mm256_srlv_epi32(w, counts(16 * (v as i32 % 2), -2));
        *ov = _mm256_permutevar8x32_ps(table, idx);
    }
    o
}

impl Load for Q2 {
    type P = GroupedP;
    const V: usize = 4;
    fn ptr(w: &WRow<'_>) -> GroupedP {
        grouped_ptr(w)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load((lo, _, sf): GroupedP, k: usize) -> [__m256; 4] {
        // Words 0..3 are codes −1, 0, 1, 2: scale · code is one rounding, as in the
        // scalar reference.
        let codes = _mm256_setr_ps(-1.0, 0.0, 1.0, 2.0, -1.0, 0.0, 1.0, 2.0);
        // SAFETY: the group's scale and the codes of k..k+32 (caller).
        unsafe {
            let table = _mm256_mul_ps(_mm256_broadcast_ss(&*sf.add(k / 64)), codes);
            two_bit_values(lo, table, k)
        }
    }
}

impl Load for T2 {
    type P = GroupedP;
    const V: usize = 4;
    fn ptr(w: &WRow<'_>) -> GroupedP {
        grouped_ptr(w)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load((lo, _, sf): GroupedP, k: usize) -> [__m256; 4] {
        // Two's-complement words 0..3: codes 0, 1, −2, −1.
        let codes = _mm256_setr_ps(0.0, 1.0, -2.0, -1.0, 0.0, 1.0, -2.0, -1.0);
        // SAFETY: the group's scale and the codes of k..k+32 (caller).
        unsafe {
            let table = _mm256_mul_ps(_mm256_broadcast_ss(&*sf.add(k / 128)), codes);
            two_bit_values(lo, table, k)
        }
    }
}

impl Load for Fp8 {
    /// Codes, then the two f32 factors whose product with value/256 gives w: (256·s, 1)
    /// when 256·s is finite (one rounding, as `e4m3fn(c)·s`), else (256, s).
    type P = (*const u8, f32, f32);
    const V: usize = 4;
    fn ptr(w: &WRow<'_>) -> Self::P {
        match w {
            WRow::Fp8 { codes, scale } if (256.0 * scale).is_finite() => {
                (codes.as_ptr(), 256.0 * scale, 1.0)
            }
            WRow::Fp8 { codes, scale } => (codes.as_ptr(), 256.0, *scale),
            _ => unreachable!("the fp8 loader on another row kind"),
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load((c, s1, s2): Self::P, k: usize) -> [__m256; 4] {
        // SAFETY: the 32 code bytes of elements k..k+32 (caller).
        let c32 = unsafe { _mm256_loadu_si256(c.add(k).cast()) };
        let m7 = _mm256_set1_epi8(0x7F);
        let nan = _mm256_cmpeq_epi8(_mm256_and_si256(c32, m7), m7);
        let mut o = NONE;
        for (v, ov) in o.iter_mut().enumerate() {
            // SAFETY: the 8 code bytes of elements k+8v.. (caller).
            let c8 = unsafe { _mm_loadl_epi64(c.add(k + 8 * v).cast()) };
            let h = if _mm256_movemask_epi8(nan) == 0 {
                // No NaN word in these 32 (the rule for a valid payload): the sign-extended
                // word shifted left by 7 is the binary16 of value / 256 once the copy of the
                // sign at bit 14 is cleared.
                let x = _mm_slli_epi16::<7>(_mm_cvtepi8_epi16(c8));
                _mm256_cvtph_ps(_mm_and_si128(x, _mm_set1_epi16(0xBFFFu16 as i16)))
            } else {
                e4m3fn8_div256(_mm_cvtepu8_epi16(c8))
            };
            let w = _mm256_mul_ps(h, _mm256_set1_ps(s1));
            *ov = if s2 == 1.0 {
                w
            } else {
                _mm256_mul_ps(w, _mm256_set1_ps(s2))
            };
        }
        o
    }
}

impl Load for Fp8Scaled {
    /// Codes and the row's factor 256·s.
    type P = (*const u8, f32);
    const V: usize = 4;
    fn ptr(w: &WRow<'_>) -> Self::P {
        match w {
            WRow::Fp8Scaled { codes, factor } => (codes.as_ptr(), *factor),
            _ => unreachable!("the fp8 scaled loader on another row kind"),
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load((c, _): Self::P, k: usize) -> [__m256; 4] {
        // SAFETY: the 32 code bytes of elements k..k+32 (caller).
        let c32 = unsafe { _mm256_loadu_si256(c.add(k).cast()) };
        let mut o = NONE;
        if no_nan_word(c32) {
            o = e4m3fn32_div256(c32);
        } else {
            for (v, ov) in o.iter_mut().enumerate() {
                // SAFETY: the 8 code bytes of elements k+8v.. (caller).
                let c8 = unsafe { _mm_loadl_epi64(c.add(k + 8 * v).cast()) };
                *ov = e4m3fn8_div256(_mm_cvtepu8_epi16(c8));
            }
        }
        o
    }
    #[inline(always)]
    fn finish((_, factor): Self::P, y: f32) -> f32 {
        y * factor
    }
}

/// Whether none of the 32 E4M3FN words is a NaN word (0x7F, 0xFF).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn no_nan_word(c32: __m256i) -> bool {
    let m7 = _mm256_set1_epi8(0x7F);
    _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(c32, m7), m7)) == 0
}

/// Thirty-two E4M3FN words, none a NaN word, as `2⁻⁸ ×` their exact values (four vectors
/// of 8, in order), from the same binary16 words as [`e4m3fn8_div256`]'s short form: the 16-bit word
/// `c·257` shifted right arithmetically by 1 holds the sign at bit 15, a copy at bit 14
/// and the 7 magnitude bits at 14..7 over 7 low bits of junk; clearing bit 14 and the junk
/// leaves the same binary16 word. (`vpunpck*bw` works within 128-bit halves: the low
/// halves hold words 0..8 and 8..16, the high halves 16..24 and 24..32.)
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn e4m3fn32_div256(c: __m256i) -> [__m256; 4] {
    let m = _mm256_set1_epi16(0xBF80u16 as i16);
    let lo = _mm256_and_si256(_mm256_srai_epi16::<1>(_mm256_unpacklo_epi8(c, c)), m);
    let hi = _mm256_and_si256(_mm256_srai_epi16::<1>(_mm256_unpackhi_epi8(c, c)), m);
    [
        _mm256_cvtph_ps(_mm256_castsi256_si128(lo)),
        _mm256_cvtph_ps(_mm256_castsi256_si128(hi)),
        _mm256_cvtph_ps(_mm256_extracti128_si256::<1>(lo)),
        _mm256_cvtph_ps(_mm256_extracti128_si256::<1>(hi)),
    ]
}

/// The fp8 scaled order at M = 1: `RW` rows side by side over one activation row, 32
/// codes per row per step, each row's next group's same line prefetched `ahead` bytes
/// on. NaN words are not decoded here (the short form turns them into finite values):
/// the largest `c + c` (mod 256) over the tile, 0xFE exactly when a NaN word was seen,
/// tells the caller to rerun the tile with the general loader. Returns the eight-lane
/// sums of the whole 32-code chunks (elements `..k / 32 · 32`).
///
/// # Safety
/// AVX2, FMA and F16C available; `k` readable code bytes at every `cp[i]` and `k` f32 at
/// `x`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn fp8_scaled_tile<const RW: usize>(
    cp: [*const u8; RW],
    x: *const f32,
    k: usize,
    ahead: usize,
) -> ([__m256; RW], bool) {
    let mut acc = [_mm256_setzero_ps(); RW];
    let mut seen = _mm256_setzero_si256();
    let mut kk = 0;
    while kk + 32 <= k {
        // SAFETY: kk + 32 <= k elements of x and of every row.
        unsafe {
            let xv = [
                _mm256_loadu_ps(x.add(kk)),
                _mm256_loadu_ps(x.add(kk + 8)),
                _mm256_loadu_ps(x.add(kk + 16)),
                _mm256_loadu_ps(x.add(kk + 24)),
            ];
            for i in 0..RW {
                if kk % 64 == 0 {
                    _mm_prefetch::<_MM_HINT_T0>(cp[i].wrapping_add(ahead + kk).cast());
                }
                let c = _mm256_loadu_si256(cp[i].add(kk).cast());
                seen = _mm256_max_epu8(seen, _mm256_add_epi8(c, c));
                let [a, b, d, e] = e4m3fn32_div256(c);
                acc[i] = _mm256_fmadd_ps(a, xv[0], acc[i]);
                acc[i] = _mm256_fmadd_ps(b, xv[1], acc[i]);
                acc[i] = _mm256_fmadd_ps(d, xv[2], acc[i]);
                acc[i] = _mm256_fmadd_ps(e, xv[3], acc[i]);
            }
        }
        kk += 32;
    }
    let nan = _mm256_movemask_epi8(_mm256_cmpeq_epi8(seen, _mm256_set1_epi8(0xFEu8 as i8)));
    (acc, nan != 0)
}

/// Rows `w` (all [`WRow::Fp8Scaled`]) against one activation row `x`, tiles of 4.
///
/// # Safety
/// As [`dot_rows`] with m = 1.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn fp8_scaled_m1(w: &[WRow<'_>], x: &[f32], out: &mut [f32]) {
    // Rows are equally spaced in their plane: prefetch the same line of the row one tile
    // further (the hardware prefetcher does not pick up four short streams in time).
    let stride = match w {
        [a, b, ..] => (Fp8Scaled::ptr(b).0 as usize).wrapping_sub(Fp8Scaled::ptr(a).0 as usize),
        _ => 0,
    };
    let mut i = 0;
    while i < w.len() {
        let rw = (w.len() - i).min(4);
        // SAFETY: the caller's contract.
        unsafe {
            match rw {
                4 => fp8_scaled_rows::<4>(&w[i..], x, &mut out[i..], stride),
                3 => fp8_scaled_rows::<3>(&w[i..], x, &mut out[i..], stride),
                2 => fp8_scaled_rows::<2>(&w[i..], x, &mut out[i..], stride),
                _ => fp8_scaled_rows::<1>(&w[i..], x, &mut out[i..], stride),
            }
        }
        i += rw;
    }
}

/// # Safety
/// As [`fp8_scaled_m1`]; `RW` rows in `w` and outputs in `out`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn fp8_scaled_rows<const RW: usize>(
    w: &[WRow<'_>],
    x: &[f32],
    out: &mut [f32],
    stride: usize,
) {
    let k = x.len();
    assert!(w.len() >= RW && out.len() >= RW && w[..RW].iter().all(|r| r.len() == k));
    let p: [_; RW] = std::array::from_fn(|i| Fp8Scaled::ptr(&w[i]));
    let cp = p.map(|(c, _)| c);
    // SAFETY: every row holds k codes (checked above), x holds k values.
    let (acc, nan) = unsafe { fp8_scaled_tile::<RW>(cp, x.as_ptr(), k, RW * stride) };
    if nan {
        // A NaN word (invalid payload): the general loader decodes it.
        // SAFETY: the caller's contract.
        return unsafe { tile::<Fp8Scaled, RW, 1, false>(w, x, out, (0, 1, 0, false)) };
    }
    let done = k / 32 * 32;
    for i in 0..RW {
        let mut a = [0f32; 8];
        // SAFETY: 8 writable floats.
        unsafe { _mm256_storeu_ps(a.as_mut_ptr(), acc[i]) };
        accumulate_scalar(&w[i], x, done, &mut a);
        out[i] = Fp8Scaled::finish(p[i], tree8(a));
    }
}

impl Load for Nvfp4 {
    /// Codes, block scales and the divisor.
    type P = (*const u8, *const f32, f32);
    const V: usize = 4;
    fn ptr(w: &WRow<'_>) -> Self::P {
        match w {
            WRow::Nvfp4 { codes, sf, d } => (codes.as_ptr(), sf.as_ptr(), *d),
            _ => unreachable!("the nvfp4 loader on another row kind"),
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load((c, sf, d): Self::P, k: usize) -> [__m256; 4] {
        let dv = _mm256_set1_ps(d);
        let m = &crate::words::e2m1::MAGNITUDES;
        let mags = _mm256_setr_ps(m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]);
        let mut tables = [_mm256_setzero_ps(); 2];
        for (b, t) in tables.iter_mut().enumerate() {
            // The block's 8 magnitudes binary32(binary32(|e2m1|·sf) / d), as the scalar
            // reference: one multiply and one divide per 16 values. (Deriving two blocks'
            // tables from one divide by powers of two, exact for most divisors, was slower:
            // its permutes sit on the same ports as the lookups, and its dependency chain is
            // longer.)
            // SAFETY: block k/16 + b has a scale (caller).
            let s = unsafe { _mm256_broadcast_ss(&*sf.add(k / 16 + b)) };
            *t = _mm256_div_ps(_mm256_mul_ps(mags, s), dv);
        }
        // SAFETY: the codes of elements k..k+32 (caller).
        unsafe { e2m1_lookup(c, tables, k) }
    }
}

impl Load for Nvfp4Scaled {
    /// Codes, block scales and the divisor.
    type P = (*const u8, *const f32, f32);
    const V: usize = 4;
    fn ptr(w: &WRow<'_>) -> Self::P {
        match w {
            WRow::Nvfp4Scaled { codes, sf, d } => (codes.as_ptr(), sf.as_ptr(), *d),
            _ => unreachable!("the nvfp4 scaled loader on another row kind"),
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load((c, sf, _): Self::P, k: usize) -> [__m256; 4] {
        let m = &crate::words::e2m1::MAGNITUDES;
        let mags = _mm256_setr_ps(m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]);
        // The block's 8 magnitudes binary32(|e2m1|·sf) (exact): one multiply per block.
        // SAFETY: blocks k/16 and k/16 + 1 have scales (caller).
        let tables = unsafe {
            [
                _mm256_mul_ps(mags, _mm256_broadcast_ss(&*sf.add(k / 16))),
                _mm256_mul_ps(mags, _mm256_broadcast_ss(&*sf.add(k / 16 + 1))),
            ]
        };
        // SAFETY: the codes of elements k..k+32 (caller).
        unsafe { e2m1_lookup(c, tables, k) }
    }
    #[inline(always)]
    fn finish((_, _, d): Self::P, y: f32) -> f32 {
        y / d
    }
}

/// The values of elements k..k+32 (k a multiple of 32) from their E2M1 codes and the two
/// blocks' magnitude tables: lane i of vector v picks by nibble i's low 3 bits and takes
/// bit 3 as its sign.
///
/// # Safety
/// The 16 code bytes of elements k..k+32 are readable.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn e2m1_lookup(c: *const u8, tables: [__m256; 2], k: usize) -> [__m256; 4] {
    let mut o = NONE;
    for (v, ov) in o.iter_mut().enumerate() {
        // SAFETY: 4 code bytes of elements k+8v.. (caller).
        let w = unsafe { bcast32(c.add((k + 8 * v) / 2)) };
        let idx = _mm256_srlv_epi32(w, _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
        // Bit 3 of lane i's nibble is its sign.
        let sign = _mm256_and_si256(_mm256_slli_epi32::<28>(idx), _mm256_set1_epi32(i32::MIN));
        *ov = _mm256_xor_ps(
            _mm256_permutevar8x32_ps(tables[v / 2], idx),
            _mm256_castsi256_ps(sign),
        );
    }
    o
}

/// Eight E4M3FN words (one per u16 lane) as `2⁻⁸ ×` their exact f32 values: the word's 7
/// magnitude bits placed at binary16 bit 7 form the binary16 of value / 256 (normal and
/// subnormal alike, since both biases differ by 8), converted by F16C without any
/// subnormal assist. NaN words give the binary16 quiet NaN of their sign, i.e.
/// `words::e4m3fn::TABLE`'s f32 NaN bits; the caller multiplies by 256 (folded into the row
/// multiplier when that is exact).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) fn e4m3fn8_div256(c16: __m128i) -> __m256 {
    let mag = _mm_and_si128(c16, _mm_set1_epi16(0x7F));
    let sign = _mm_slli_epi16(_mm_and_si128(c16, _mm_set1_epi16(0x80)), 8);
    let nan = _mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7F));
    let h = _mm_andnot_si128(nan, _mm_slli_epi16(mag, 7));
    let h = _mm_or_si128(h, _mm_and_si128(nan, _mm_set1_epi16(0x7E00)));
    _mm256_cvtph_ps(_mm_or_si128(h, sign))
}

/// `prefetch`: bf16 / fp32 word rows prefetch the next tile's rows (software prefetch of
/// the same lines one tile further). It is the AVX-512 tier's choice: on AMD Zen 5 it
/// lifted bf16 beyond L3 from 0.51–0.54 to 0.68–0.70 of one thread's read bandwidth; on
/// the AVX2-only Zen 3 the same prefetch made bf16 and fp32 at M = 1 15–20% slower, in L3
/// and beyond.
///
/// # Safety
/// AVX2, FMA and F16C available; every row of `w` has the same kind and length K and
/// `x.len() == m · K`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_rows(
    w: &[WRow<'_>],
    x: &[f32],
    m: usize,
    out: &mut [f32],
    prefetch: bool,
) {
    use super::float::Grouped as G;
    // SAFETY (all calls): the caller's contract.
    unsafe {
        match w.first() {
            Some(WRow::Bf16Le(_)) if prefetch => tiles::<Bf16, true>(w, x, m, out),
            Some(WRow::Bf16Le(_)) => tiles::<Bf16, false>(w, x, m, out),
            Some(WRow::Grouped { kind, .. }) => match kind {
                G::Q2 => tiles::<Q2, false>(w, x, m, out),
                G::T2 => tiles::<T2, false>(w, x, m, out),
                G::Q4 => tiles::<Q4, false>(w, x, m, out),
                G::Q5 => tiles::<Q5, false>(w, x, m, out),
                G::Q6 => tiles::<Q6, false>(w, x, m, out),
                G::Q8 => tiles::<Q8, false>(w, x, m, out),
            },
            Some(WRow::Fp8 { .. }) => tiles::<Fp8, false>(w, x, m, out),
            Some(WRow::Fp8Scaled { .. }) if m == 1 => fp8_scaled_m1(w, x, out),
            Some(WRow::Fp8Scaled { .. }) => tiles::<Fp8Scaled, false>(w, x, m, out),
            Some(WRow::Nvfp4 { .. }) => tiles::<Nvfp4, false>(w, x, m, out),
            Some(WRow::Nvfp4Scaled { .. }) => tiles::<Nvfp4Scaled, false>(w, x, m, out),
            Some(_) if prefetch => tiles::<F32, true>(w, x, m, out),
            Some(_) => tiles::<F32, false>(w, x, m, out),
            None => {}
        }
    }
}

/// # Safety
/// AVX2, FMA and F16C available; `out.len()` = K of `w`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn materialize(w: &WRow<'_>, out: &mut [f32]) {
    use super::float::Grouped as G;
    // SAFETY (all calls): the caller's contract.
    unsafe {
        match w {
            WRow::Bf16Le(_) => values::<Bf16>(w, out),
            WRow::Grouped { kind, .. } => match kind {
                G::Q2 => values::<Q2>(w, out),
                G::T2 => values::<T2>(w, out),
                G::Q4 => values::<Q4>(w, out),
                G::Q5 => values::<Q5>(w, out),
                G::Q6 => values::<Q6>(w, out),
                G::Q8 => values::<Q8>(w, out),
            },
            WRow::Fp8 { .. } => values::<Fp8>(w, out),
            WRow::Fp8Scaled { .. } => values::<Fp8Scaled>(w, out),
            WRow::Nvfp4 { .. } => values::<Nvfp4>(w, out),
            WRow::Nvfp4Scaled { .. } => values::<Nvfp4Scaled>(w, out),
            _ => values::<F32>(w, out),
        }
    }
}

/// Converts the first multiple of 8 of `out.len()` binary16 words (F16C, exact) and
/// returns how many.
///
/// # Safety
/// AVX2, FMA and F16C available; `words.len() >= 2·out.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f16_words_to_f32(words: &[u8], out: &mut [f32]) -> usize {
    let n = out.len() / 8 * 8;
    for g in (0..n).step_by(8) {
        // SAFETY: 16 bytes at 2g and 8 floats at g are in bounds (g + 8 <= n).
        unsafe {
            let h = _mm_loadu_si128(words.as_ptr().add(2 * g).cast());
            _mm256_storeu_ps(out.as_mut_ptr().add(g), _mm256_cvtph_ps(h));
        }
    }
    n
}

/// Row `row`'s nvfp4 block scales as f32 (exact) for its first `32·(out.len() / 32)`
/// blocks, read from the swizzled scale plane at `base` = the row's first word
/// (`block_scale::offset(row, 0, nkb)`): the row's 4 words of tile t lie `t·TILE_BYTES`
/// bytes on, so one `vpgatherdd` takes 8 tiles' words (32 words, block order), each 8
/// converted as [`e4m3fn8_div256`] times 256. Returns how many it wrote.
///
/// # Safety
/// AVX2, FMA and F16C available; the 4 bytes at `base + t·TILE_BYTES` are readable for
/// every tile t < `out.len() / 4` (the row's whole tiles).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn nvfp4_row_scales(base: *const u8, out: &mut [f32]) -> usize {
    use crate::layouts::block_scale::{TILE_BLOCKS, TILE_BYTES};
    const TILES: usize = 8;
    let n = out.len() / (TILES * TILE_BLOCKS) * (TILES * TILE_BLOCKS);
    let step = TILES * TILE_BYTES;
    let at = _mm256_mullo_epi32(
        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        _mm256_set1_epi32(TILE_BYTES as i32),
    );
    let k256 = _mm256_set1_ps(256.0);
    for (g, o) in out[..n].chunks_exact_mut(TILES * TILE_BLOCKS).enumerate() {
        // SAFETY: tiles 8g..8g + 8 are whole tiles of the row (caller): their 4 bytes at
        // base + t·TILE_BYTES are readable; `o` holds 32 floats.
        unsafe {
            let w = _mm256_i32gather_epi32::<1>(base.add(g * step).cast(), at);
            let halves = [_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w)];
            for (h, c) in halves.into_iter().enumerate() {
                let pair = [
                    _mm_cvtepu8_epi16(c),
                    _mm_cvtepu8_epi16(_mm_srli_si128::<8>(c)),
                ];
                for (j, c16) in pair.into_iter().enumerate() {
                    let v = _mm256_mul_ps(e4m3fn8_div256(c16), k256);
                    _mm256_storeu_ps(o.as_mut_ptr().add(16 * h + 8 * j), v);
                }
            }
        }
    }
    n
}

/// # Safety
/// As [`materialize`].
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn values<L: Load>(w: &WRow<'_>, out: &mut [f32]) {
    let k = out.len();
    let p = L::ptr(w);
    let step = 8 * L::V;
    let mut kk = 0;
    while kk + step <= k {
        // SAFETY: kk + step <= K values in the row and in out.
        unsafe {
            let v = L::load(p, kk);
            for j in 0..L::V {
                _mm256_storeu_ps(out.as_mut_ptr().add(kk + 8 * j), v[j]);
            }
        }
        kk += step;
    }
    for (j, o) in out.iter_mut().enumerate().skip(kk) {
        *o = w.get(j);
    }
}

/// Tiles of up to 8 weight rows × 1 activation row or 4 × 2 for bf16 / f32 words; 4 × 1
/// for the coded rows (four vectors per step).
///
/// # Safety
/// As [`dot_rows`].
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tiles<L: Load, const PF: bool>(w: &[WRow<'_>], x: &[f32], m: usize, out: &mut [f32]) {
    let max_rx = if L::V == 1 { 2 } else { 1 };
    // bf16 / f32 words at M = 1: 8 rows side by side (8 accumulator chains hide the fma
    // latency); otherwise 4 (the coded rows' decoding fills the registers).
    let max_rw = if L::V == 1 && m == 1 { 8 } else { 4 };
    let mut i = 0;
    while i < w.len() {
        let rw = (w.len() - i).min(max_rw);
        let mut r = 0;
        while r < m {
            let rx = (m - r).min(max_rx);
            // Only the first activation rows of a tile prefetch the next tile (the others
            // find its rows in cache), and only rows read from their plane: materialized
            // values are a scratch of this tile alone.
            let pf = PF && r == 0 && !matches!(w[i], WRow::F32(_));
            let t = (r, m, i, pf);
            // SAFETY: the caller's contract.
            unsafe {
                match (rw, rx) {
                    (8, _) => tile::<L, 8, 1, PF>(&w[i..], x, out, t),
                    (7, _) => tile::<L, 7, 1, PF>(&w[i..], x, out, t),
                    (6, _) => tile::<L, 6, 1, PF>(&w[i..], x, out, t),
                    (5, _) => tile::<L, 5, 1, PF>(&w[i..], x, out, t),
                    (4, 2) => tile::<L, 4, 2, PF>(&w[i..], x, out, t),
                    (4, _) => tile::<L, 4, 1, PF>(&w[i..], x, out, t),
                    (3, 2) => tile::<L, 3, 2, PF>(&w[i..], x, out, t),
                    (3, _) => tile::<L, 3, 1, PF>(&w[i..], x, out, t),
                    (2, 2) => tile::<L, 2, 2, PF>(&w[i..], x, out, t),
                    (2, _) => tile::<L, 2, 1, PF>(&w[i..], x, out, t),
                    (1, 2) => tile::<L, 1, 2, PF>(&w[i..], x, out, t),
                    _ => tile::<L, 1, 1, PF>(&w[i..], x, out, t),
                }
            }
            r += rx;
        }
        i += rw;
    }
}

/// Weight rows `w[0..RW]` × activation rows `r0..r0+RX` into `out[(i0+i)·m + r]`, where
/// `(r0, m, i0, pf)` = `t`; with `PF` and `pf`, prefetch the next tile's rows (word
/// loaders only; `PF` false compiles the prefetch out).
///
/// # Safety
/// As [`dot_rows`]; RW rows in `w`, RX rows from r0 in x.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile<L: Load, const RW: usize, const RX: usize, const PF: bool>(
    w: &[WRow<'_>],
    x: &[f32],
    out: &mut [f32],
    t: (usize, usize, usize, bool),
) {
    let (r0, m, i0, pf) = t;
    let k = w[0].len();
    assert!(x.len() >= (r0 + RX) * k && w.len() >= RW);
    let wp: [L::P; RW] = std::array::from_fn(|i| L::ptr(&w[i]));
    let xp: [*const f32; RX] = std::array::from_fn(|r| x[(r0 + r) * k..].as_ptr());
    let step = 8 * L::V;
    // Word rows: each new line of the tile's rows also fetches the same line of the next
    // tile's (RW rows on): the hardware prefetcher does not pick up eight short streams
    // in time (measured beyond L3).
    let line = 64 / L::PREFETCH_BYTES.max(1);
    let ahead = RW * k * L::PREFETCH_BYTES;
    let mut acc = [[_mm256_setzero_ps(); RX]; RW];
    let mut kk = 0;
    while kk + step <= k {
        if PF && L::PREFETCH_BYTES > 0 && pf && kk % line == 0 {
            for i in 0..RW {
                let at = L::base(wp[i]).wrapping_add(kk * L::PREFETCH_BYTES + ahead);
                // SAFETY: a prefetch reads no memory (an unsafe function in older Rust
                // releases).
                #[allow(unused_unsafe)]
                unsafe {
                    _mm_prefetch::<_MM_HINT_T1>(at.cast())
                };
            }
        }
        let mut xv = [[_mm256_setzero_ps(); 4]; RX];
        for r in 0..RX {
            for j in 0..L::V {
                // SAFETY: kk + step <= K values in each activation row.
                xv[r][j] = unsafe { _mm256_loadu_ps(xp[r].add(kk + 8 * j)) };
            }
        }
        for i in 0..RW {
            // SAFETY: kk + step <= K values in each weight row.
            let wv = unsafe { L::load(wp[i], kk) };
            for j in 0..L::V {
                for r in 0..RX {
                    acc[i][r] = _mm256_fmadd_ps(wv[j], xv[r][j], acc[i][r]);
                }
            }
        }
        kk += step;
    }
    for i in 0..RW {
        for r in 0..RX {
            let mut a = [0f32; 8];
            // SAFETY: 8 writable floats.
            unsafe { _mm256_storeu_ps(a.as_mut_ptr(), acc[i][r]) };
            let xr = &x[(r0 + r) * k..(r0 + r + 1) * k];
            accumulate_scalar(&w[i], xr, kk, &mut a);
            out[(i0 + i) * m + r0 + r] = L::finish(wp[i], tree8(a));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3fn8_matches_the_word_table_for_all_256_words() {
        if !crate::linear::Isa::Avx2.available() {
            eprintln!("note: no AVX2 on this machine, its tier is not tested");
            return;
        }
        for base in (0..256u16).step_by(8) {
            let words: [u16; 8] = std::array::from_fn(|i| base + i as u16);
            let mut out = [0f32; 8];
            // SAFETY: AVX2 checked above; 8 readable words, 8 writable floats.
            unsafe {
                let c16 = _mm_loadu_si128(words.as_ptr().cast());
                let v = _mm256_mul_ps(e4m3fn8_div256(c16), _mm256_set1_ps(256.0));
                _mm256_storeu_ps(out.as_mut_ptr(), v);
            }
            for (i, o) in out.iter().enumerate() {
                let want = crate::words::e4m3fn::decode(words[i] as u8);
                assert_eq!(o.to_bits(), want.to_bits(), "word {:#04x}", words[i]);
            }
        }
    }
}
