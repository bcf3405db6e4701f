//! AVX2 + FMA + F16C versions of the GGUF kernels, in exactly the order of
//! [`super::gguf`]'s module docs: the integer sums S[l] come from `vpmaddubsw` on |q| and
//! x·sign(q) (pairs) then `vpmaddwd` with the 16-bit scale factors (lane l = values
//! 4l..4l+3), so only the fma into `acc[b mod 2]` and the final combination round.
//!
//! Up to four activation rows share each unpacked weight block (the batched path).

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::gguf::{Kind, finish};
use crate::formats::gguf::scale_min_k4;
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// The binary16 at `b[at..at + 2]` as f32 (exact), through F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn f16_at(b: &[u8], at: usize) -> f32 {
    let bits = u16::from_le_bytes([b[at], b[at + 1]]);
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
}

/// One block's codes (32 × i8), 16-bit scale factors (16 × i16) and float scale.
type Block = (__m256i, __m256i, f32);

/// A block type's unpacker, as a type so that each kernel is monomorphized.
trait Unpack {
    /// Codes are non-negative (no sign transfer needed before `vpmaddubsw`).
    const UNSIGNED: bool = false;
    /// Blocks sharing one context: 1 (legacy) or 8 (a k-quant super-block).
    const GROUP: usize;
    /// What a super-block's blocks share (scales decoded once).
    type Ctx: Copy;
    /// The context of the group starting at block `b`.
    ///
    /// # Safety
    /// AVX2 available; block `b` lies in `row`.
    unsafe fn context(row: &[u8], b: usize) -> Self::Ctx;
    /// Block `b`.
    ///
    /// # Safety
    /// AVX2 available; block `b` lies in `row`; `ctx` is its group's context.
    unsafe fn unpack(row: &[u8], b: usize, ctx: &Self::Ctx) -> Block;
    /// A super-block's term outside the blocks (Q4_K's mins), into `accm`.
    ///
    /// # Safety
    /// AVX2 available; super-block `sb` lies in every row of `p`.
    #[inline(always)]
    unsafe fn min_term<const R: usize>(
        _ctx: &Self::Ctx,
        _p: &Ptrs<R>,
        _sb: usize,
        _accm: &mut [__m256; R],
    ) {
    }
}

/// A Q4_K super-block's shared values.
#[derive(Clone, Copy)]
struct Q4KCtx {
    d: f32,
    dmin: f32,
    sc: [i16; 8],
    m: [u8; 8],
}

/// `block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }`: sub-block j is nibble
/// j%2 of qs[32·(j/2) ..][0..32] (non-negative codes), scale and min from the 12 bytes.
struct Q4K;
impl Unpack for Q4K {
    const UNSIGNED: bool = true;
    const GROUP: usize = 8;
    type Ctx = Q4KCtx;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn context(row: &[u8], b: usize) -> Q4KCtx {
        let sb = b / 8;
        let blk = &row[144 * sb..144 * sb + 144];
        let mut c = Q4KCtx {
            d: f16_at(blk, 0),
            dmin: f16_at(blk, 2),
            sc: [0; 8],
            m: [0; 8],
        };
        for j in 0..8 {
            let (s, m) = scale_min_k4(j, &blk[4..16]);
            c.sc[j] = s as i16;
            c.m[j] = m;
        }
        c
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn unpack(row: &[u8], b: usize, ctx: &Q4KCtx) -> Block {
        let (sb, j) = (b / 8, b % 8);
        let at = 144 * sb + 16 + 32 * (j / 2);
        let qs = &row[at..at + 32];
        // SAFETY: 32 bytes in qs.
        let qs = unsafe { _mm256_loadu_si256(qs.as_ptr().cast()) };
        let qs = if j % 2 == 1 {
            _mm256_srli_epi16(qs, 4)
        } else {
            qs
        };
        let q = _mm256_and_si256(qs, _mm256_set1_epi8(0x0F));
        (q, _mm256_set1_epi16(ctx.sc[j]), ctx.d)
    }
    /// `accm[j] ← fma(dmin·dx_j, m_j·Σx_j, accm[j])` for the 8 sub-blocks j.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn min_term<const R: usize>(
        ctx: &Q4KCtx,
        p: &Ptrs<R>,
        sb: usize,
        accm: &mut [__m256; R],
    ) {
        // SAFETY: m holds 8 bytes; 8 sums and scales of super-block sb in every row.
        unsafe {
            let mv = _mm256_cvtepu8_epi32(_mm_loadl_epi64(ctx.m.as_ptr().cast()));
            for r in 0..R {
                let sums = _mm256_loadu_si256(p.sum[r].add(8 * sb).cast());
                let dx = _mm256_loadu_ps(p.d[r].add(8 * sb));
                let mm = _mm256_cvtepi32_ps(_mm256_mullo_epi32(mv, sums));
                let dm = _mm256_mul_ps(_mm256_set1_ps(ctx.dmin), dx);
                accm[r] = _mm256_fmadd_ps(dm, mm, accm[r]);
            }
        }
    }
}

/// `block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }` (see the scalar kernel).
struct Q6K;
impl Unpack for Q6K {
    const GROUP: usize = 8;
    type Ctx = f32;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn context(row: &[u8], b: usize) -> f32 {
        let sb = b / 8;
        f16_at(&row[210 * sb..210 * sb + 210], 208)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn unpack(row: &[u8], b: usize, d: &f32) -> Block {
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
        (q, sc, *d)
    }
}

/// # Safety
/// AVX2, FMA and F16C available; `w` holds whole blocks for every activation row.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_rows(kind: Kind, w: &[u8], xs: &[Row<'_>], out: &mut [f32]) {
    // SAFETY (all calls): the caller's contract.
    unsafe {
        match kind {
            Kind::Legacy(_) => unreachable!("legacy kinds run in linear::cpu::legacy_avx2"),
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

/// The activation rows' planes as raw pointers (fewer registers than slices).
struct Ptrs<const R: usize> {
    qs: [*const i8; R],
    d: [*const f32; R],
    sum: [*const i32; R],
}

/// R activation rows against one weight row.
///
/// # Safety
/// As [`dot_rows`]; `xs.len() == out.len() == R`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_r<const R: usize, U: Unpack>(w: &[u8], xs: &[Row<'_>], out: &mut [f32]) {
    let nb = xs[0].d.len();
    let mut p = Ptrs::<R> {
        qs: [std::ptr::null(); R],
        d: [std::ptr::null(); R],
        sum: [std::ptr::null(); R],
    };
    for r in 0..R {
        let x = &xs[r];
        // Every row holds nb whole blocks: the pointer reads below stay in bounds.
        assert!(x.qs.len() >= 32 * nb && x.d.len() >= nb && x.sum.len() >= nb);
        p.qs[r] = x.qs.as_ptr();
        p.d[r] = x.d.as_ptr();
        p.sum[r] = x.sum.as_ptr();
    }
    let mut acc0 = [_mm256_setzero_ps(); R];
    let mut acc1 = [_mm256_setzero_ps(); R];
    let mut accm = [_mm256_setzero_ps(); R];
    let mut b = 0;
    // Blocks in pairs so that acc[b mod 2] is a register, not an indexed array.
    while b < nb {
        // SAFETY (all): every block used lies in w and in every row (whole groups).
        unsafe {
            if U::GROUP == 8 {
                let ctx = U::context(w, b);
                for i in 0..4 {
                    block::<R, U>(w, &p, b + 2 * i, &ctx, &mut acc0);
                    block::<R, U>(w, &p, b + 2 * i + 1, &ctx, &mut acc1);
                }
                U::min_term(&ctx, &p, b / 8, &mut accm);
                b += 8;
            } else {
                block::<R, U>(w, &p, b, &U::context(w, b), &mut acc0);
                if b + 1 < nb {
                    block::<R, U>(w, &p, b + 1, &U::context(w, b + 1), &mut acc1);
                }
                b += 2;
            }
        }
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
/// As [`dot_rows`]; block b lies in `w` and in every activation row of `p`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn block<const R: usize, U: Unpack>(
    w: &[u8],
    p: &Ptrs<R>,
    b: usize,
    ctx: &U::Ctx,
    acc: &mut [__m256; R],
) {
    // SAFETY: block b lies in w (the caller's contract).
    let (q, sc, d) = unsafe { U::unpack(w, b, ctx) };
    let aq = if U::UNSIGNED {
        q
    } else {
        _mm256_sign_epi8(q, q)
    };
    for r in 0..R {
        // SAFETY: block b of row r: 32 codes and one scale.
        let (xv, dx) = unsafe {
            (
                _mm256_loadu_si256(p.qs[r].add(32 * b).cast()),
                *p.d[r].add(b),
            )
        };
        let xs = if U::UNSIGNED {
            xv
        } else {
            _mm256_sign_epi8(xv, q)
        };
        let s = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(aq, xs), sc));
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * dx), s, acc[r]);
    }
}
