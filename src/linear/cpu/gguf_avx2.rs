//! AVX2 + FMA + F16C versions of the GGUF kernels, in exactly the order of
//! [`super::gguf`]'s module docs: the integer sums S[l] come from `vpmaddubsw` on |q| and
//! x·sign(q) (pairs) then `vpmaddwd` with the 16-bit scale factors (lane l = values
//! 4l..4l+3), so only the fma into `acc[b mod 2]` and the final combination round.
//!
//! Up to four activation rows share each unpacked weight block (the batched path).

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::gguf::{Kind, finish, q4k_min, q4k_scale_min};
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// The binary16 at `b[at..at + 2]` as f32 (exact), through F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn f16_at(b: &[u8], at: usize) -> f32 {
    let bits = u16::from_le_bytes([b[at], b[at + 1]]);
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
}

/// One block's signed codes (32 × i8), 16-bit scale factors (16 × i16) and float scale.
type Block = (__m256i, __m256i, f32);

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn ones() -> __m256i {
    _mm256_set1_epi16(1)
}

/// # Safety
/// Block `b` lies in `row`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn unpack_q8_0(row: &[u8], b: usize) -> Block {
    let blk = &row[34 * b..34 * b + 34];
    // SAFETY: 32 bytes from blk[2].
    let q = unsafe { _mm256_loadu_si256(blk.as_ptr().add(2).cast()) };
    (q, ones(), f16_at(blk, 0))
}

/// # Safety
/// Block `b` lies in `row`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn unpack_q4_0(row: &[u8], b: usize) -> Block {
    let blk = &row[18 * b..18 * b + 18];
    // SAFETY: 16 bytes from blk[2].
    let qs = unsafe { _mm_loadu_si128(blk.as_ptr().add(2).cast()) };
    let m = _mm_set1_epi8(0x0F);
    let lo = _mm_and_si128(qs, m);
    let hi = _mm_and_si128(_mm_srli_epi16(qs, 4), m);
    let q = _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
    (q, ones(), f16_at(blk, 0))
}

/// Bit e of `bits` as 0x10 in byte e (e = 0..32).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn bits_to_0x10(bits: u32) -> __m256i {
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
    _mm256_and_si256(set, _mm256_set1_epi8(0x10))
}

/// # Safety
/// Block `b` lies in `row`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn unpack_q5_0(row: &[u8], b: usize) -> Block {
    let blk = &row[22 * b..22 * b + 22];
    let qh = u32::from_le_bytes([blk[2], blk[3], blk[4], blk[5]]);
    // SAFETY: 16 bytes from blk[6].
    let qs = unsafe { _mm_loadu_si128(blk.as_ptr().add(6).cast()) };
    let m = _mm_set1_epi8(0x0F);
    let lo = _mm_and_si128(qs, m);
    let hi = _mm_and_si128(_mm_srli_epi16(qs, 4), m);
    let q = _mm256_or_si256(_mm256_set_m128i(hi, lo), bits_to_0x10(qh));
    let q = _mm256_sub_epi8(q, _mm256_set1_epi8(16));
    (q, ones(), f16_at(blk, 0))
}

/// # Safety
/// Block `b` lies in `row`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn unpack_q4_k(row: &[u8], b: usize) -> Block {
    let (sb, j) = (b / 8, b % 8);
    let blk = &row[144 * sb..144 * sb + 144];
    // SAFETY: 32 bytes from blk[16 + 32·(j/2)] (at most blk[144]).
    let qs = unsafe { _mm256_loadu_si256(blk.as_ptr().add(16 + 32 * (j / 2)).cast()) };
    let qs = if j % 2 == 1 {
        _mm256_srli_epi16(qs, 4)
    } else {
        qs
    };
    let q = _mm256_and_si256(qs, _mm256_set1_epi8(0x0F));
    let sc = q4k_scale_min(&blk[4..16], j).0 as i16;
    (q, _mm256_set1_epi16(sc), f16_at(blk, 0))
}

/// # Safety
/// Block `b` lies in `row`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn unpack_q6_k(row: &[u8], b: usize) -> Block {
    let (sb, j) = (b / 8, b % 8);
    let blk = &row[210 * sb..210 * sb + 210];
    let (h, i) = (j / 4, j % 4);
    // SAFETY: 32 bytes each, inside the 210-byte block.
    let (ql, qh) = unsafe {
        (
            _mm256_loadu_si256(blk.as_ptr().add(64 * h + 32 * (i % 2)).cast()),
            _mm256_loadu_si256(blk.as_ptr().add(128 + 32 * h).cast()),
        )
    };
    let lo = if i >= 2 { _mm256_srli_epi16(ql, 4) } else { ql };
    let lo = _mm256_and_si256(lo, _mm256_set1_epi8(0x0F));
    let hi = _mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * i as i32));
    let hi = _mm256_slli_epi16(_mm256_and_si256(hi, _mm256_set1_epi8(3)), 4);
    let q = _mm256_sub_epi8(_mm256_or_si256(lo, hi), _mm256_set1_epi8(32));
    let s0 = blk[192 + 2 * j] as i8 as i16;
    let s1 = blk[193 + 2 * j] as i8 as i16;
    let sc = _mm256_set_m128i(_mm_set1_epi16(s1), _mm_set1_epi16(s0));
    (q, sc, f16_at(blk, 208))
}

/// A block type's unpacker, as a type so that each kernel is monomorphized.
trait Unpack {
    /// Q4_K's min term applies per super-block.
    const Q4K: bool = false;
    /// # Safety
    /// AVX2 available; block `b` lies in `row`.
    unsafe fn unpack(row: &[u8], b: usize) -> Block;
}

macro_rules! unpacker {
    ($t:ident, $f:ident, $q4k:expr) => {
        struct $t;
        impl Unpack for $t {
            const Q4K: bool = $q4k;
            #[inline]
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn unpack(row: &[u8], b: usize) -> Block {
                // SAFETY: the trait's contract.
                unsafe { $f(row, b) }
            }
        }
    };
}
unpacker!(Q8_0, unpack_q8_0, false);
unpacker!(Q4_0, unpack_q4_0, false);
unpacker!(Q5_0, unpack_q5_0, false);
unpacker!(Q4K, unpack_q4_k, true);
unpacker!(Q6K, unpack_q6_k, false);

/// # Safety
/// AVX2, FMA and F16C available; `w` holds whole blocks for every activation row.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_rows(kind: Kind, w: &[u8], xs: &[Row<'_>], out: &mut [f32]) {
    // SAFETY (all calls): the caller's contract.
    unsafe {
        match kind {
            Kind::Q8_0 => rows_by_4::<Q8_0>(w, xs, out),
            Kind::Q4_0 => rows_by_4::<Q4_0>(w, xs, out),
            Kind::Q5_0 => rows_by_4::<Q5_0>(w, xs, out),
            Kind::Q4K => rows_by_4::<Q4K>(w, xs, out),
            Kind::Q6K => rows_by_4::<Q6K>(w, xs, out),
        }
    }
}

/// # Safety
/// As [`dot_rows`].
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows_by_4<U: Unpack>(w: &[u8], xs: &[Row<'_>], out: &mut [f32]) {
    let mut r = 0;
    // SAFETY (all calls): the caller's contract.
    unsafe {
        while r + 4 <= xs.len() {
            dot_r::<4, U>(w, &xs[r..r + 4], &mut out[r..r + 4]);
            r += 4;
        }
        match xs.len() - r {
            3 => dot_r::<3, U>(w, &xs[r..], &mut out[r..]),
            2 => dot_r::<2, U>(w, &xs[r..], &mut out[r..]),
            1 => dot_r::<1, U>(w, &xs[r..], &mut out[r..]),
            _ => {}
        }
    }
}

/// R activation rows against one weight row.
///
/// # Safety
/// As [`dot_rows`]; `xs.len() == out.len() == R`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_r<const R: usize, U: Unpack>(w: &[u8], xs: &[Row<'_>], out: &mut [f32]) {
    let nb = xs[0].d.len();
    let mut acc0 = [_mm256_setzero_ps(); R];
    let mut acc1 = [_mm256_setzero_ps(); R];
    let mut accm = [_mm256_setzero_ps(); R];
    let mut b = 0;
    // Blocks in pairs so that acc[b mod 2] is a register, not an indexed array.
    while b < nb {
        // SAFETY (both): block b (and b + 1 when < nb) lies in w; the caller's contract.
        unsafe { block::<R, U>(w, xs, b, &mut acc0) };
        if b + 1 < nb {
            unsafe { block::<R, U>(w, xs, b + 1, &mut acc1) };
        }
        if U::Q4K && b % 8 == 6 {
            let sb = b / 8;
            let (dmin, m) = q4k_min(w, sb);
            // SAFETY: m holds 8 bytes.
            let mv = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(m.as_ptr().cast()) });
            for r in 0..R {
                let x = &xs[r];
                assert!(x.sum.len() >= 8 * sb + 8 && x.d.len() >= 8 * sb + 8);
                // SAFETY: 8 sums and 8 scales of super-block sb exist in row r (checked).
                let (sums, dx) = unsafe {
                    (
                        _mm256_loadu_si256(x.sum.as_ptr().add(8 * sb).cast()),
                        _mm256_loadu_ps(x.d.as_ptr().add(8 * sb)),
                    )
                };
                let mm = _mm256_cvtepi32_ps(_mm256_mullo_epi32(mv, sums));
                let dm = _mm256_mul_ps(_mm256_set1_ps(dmin), dx);
                accm[r] = _mm256_fmadd_ps(dm, mm, accm[r]);
            }
        }
        b += 2;
    }
    for r in 0..R {
        let mut a = [[0f32; 8]; 2];
        let mut m = [0f32; 8];
        // SAFETY: 8 writable floats each.
        unsafe {
            _mm256_storeu_ps(a[0].as_mut_ptr(), acc0[r]);
            _mm256_storeu_ps(a[1].as_mut_ptr(), acc1[r]);
            _mm256_storeu_ps(m.as_mut_ptr(), accm[r]);
        }
        out[r] = finish(&a, &m);
    }
}

/// Block `b` of the weight row against the same block of every activation row, into `acc`.
///
/// # Safety
/// As [`dot_rows`]; block b lies in `w` and in every activation row.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn block<const R: usize, U: Unpack>(
    w: &[u8],
    xs: &[Row<'_>],
    b: usize,
    acc: &mut [__m256; R],
) {
    // SAFETY: block b lies in w (the caller's contract).
    let (q, sc, d) = unsafe { U::unpack(w, b) };
    let aq = _mm256_sign_epi8(q, q);
    for r in 0..R {
        let x = &xs[r];
        let xq = &x.qs[32 * b..32 * b + 32];
        // SAFETY: 32 codes in xq.
        let xv = unsafe { _mm256_loadu_si256(xq.as_ptr().cast()) };
        let p = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(xv, q));
        let s = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, sc));
        let ds = _mm256_set1_ps(d * x.d[b]);
        acc[r] = _mm256_fmadd_ps(ds, s, acc[r]);
    }
}
