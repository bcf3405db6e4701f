//! AVX2 + FMA + F16C versions of the GGUF kernels, in exactly the order of
//! [`super::gguf`]'s module docs: the integer sums S[l] come from `vpmaddubsw` on |q| and
//! x·sign(q) (pairs) then `vpmaddwd` with the 16-bit scale factors (lane l = values
//! 4l..4l+3), so only the fma into `acc[b mod 2]` and the final combination round.
//!
//! Up to four activation rows share each unpacked weight block (the batched path).

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::gguf::{Kind, finish};
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

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn ones() -> __m256i {
    _mm256_set1_epi16(1)
}

/// A block type's unpacker, as a type so that each kernel is monomorphized.
trait Unpack {
    /// Codes are non-negative (no sign transfer needed before `vpmaddubsw`).
    const UNSIGNED: bool = false;
    /// Blocks sharing one context: 1 (legacy) or 8 (a k-quant super-block).
    const GROUP: usize;
    /// Legacy blocks: bytes per block (the binary16 d is at offset 0); 0 otherwise.
    const BB: usize = 0;
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

/// `block_q8_0 { f16 d; i8 qs[32]; }`.
struct Q8_0;
impl Unpack for Q8_0 {
    const GROUP: usize = 1;
    const BB: usize = 34;
    type Ctx = ();
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn context(_: &[u8], _: usize) {}
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn unpack(row: &[u8], b: usize, _: &()) -> Block {
        let blk = &row[34 * b..34 * b + 34];
        // SAFETY: 32 bytes from blk[2].
        let q = unsafe { _mm256_loadu_si256(blk.as_ptr().add(2).cast()) };
        (q, ones(), f16_at(blk, 0))
    }
}

/// `block_q4_0 { f16 d; u8 qs[16]; }`: low nibbles are values 0..16, high 16..32; − 8.
struct Q4_0;
impl Unpack for Q4_0 {
    const GROUP: usize = 1;
    const BB: usize = 18;
    type Ctx = ();
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn context(_: &[u8], _: usize) {}
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn unpack(row: &[u8], b: usize, _: &()) -> Block {
        let blk = &row[18 * b..18 * b + 18];
        // SAFETY: 16 bytes from blk[2].
        let qs = unsafe { _mm_loadu_si128(blk.as_ptr().add(2).cast()) };
        let m = _mm_set1_epi8(0x0F);
        let lo = _mm_and_si128(qs, m);
        let hi = _mm_and_si128(_mm_srli_epi16(qs, 4), m);
        let q = _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
        (q, ones(), f16_at(blk, 0))
    }
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

/// `block_q5_0 { f16 d; u32 qh; u8 qs[16]; }`: nibbles as Q4_0 plus bit e of qh as bit 4;
/// − 16.
struct Q5_0;
impl Unpack for Q5_0 {
    const GROUP: usize = 1;
    const BB: usize = 22;
    type Ctx = ();
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn context(_: &[u8], _: usize) {}
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn unpack(row: &[u8], b: usize, _: &()) -> Block {
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
}

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
            Kind::KQuant(_) => unreachable!("k-quants run in kquants_avx2"),
            Kind::Iq(_) => unreachable!("i-quants run in iquants_avx2"),
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
    if R == 1 && U::BB > 0 {
        // GEMV over legacy blocks: the scale products d·dx of 8 blocks at once (the same
        // exact products), then each block takes its lane.
        let (pq, pd) = (p.qs[0], p.d[0]);
        while b + 8 <= nb {
            let mut h = [0u16; 8];
            for (j, hj) in h.iter_mut().enumerate() {
                let o = U::BB * (b + j);
                *hj = u16::from_le_bytes([w[o], w[o + 1]]);
            }
            // SAFETY (all): 8 scales of row 0 from block b; blocks b..b+8 lie in w and x.
            unsafe {
                let dw = _mm256_cvtph_ps(_mm_loadu_si128(h.as_ptr().cast()));
                let ds = _mm256_mul_ps(dw, _mm256_loadu_ps(pd.add(b)));
                for jj in 0..4 {
                    gemv_block::<U>(w, pq, b + 2 * jj, ds, 2 * jj, &mut acc0[0]);
                    gemv_block::<U>(w, pq, b + 2 * jj + 1, ds, 2 * jj + 1, &mut acc1[0]);
                }
            }
            b += 8;
        }
    }
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

/// One legacy block of a GEMV: like [`block`] with R = 1, its scale product taken from lane
/// `j` of `ds`.
///
/// # Safety
/// As [`dot_rows`]; block b lies in `w` and in the activation row at `pq`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn gemv_block<U: Unpack>(
    w: &[u8],
    pq: *const i8,
    b: usize,
    ds: __m256,
    j: usize,
    acc: &mut __m256,
) {
    // SAFETY: block b lies in w and in the activation row (the caller's contract).
    let (q, sc, xv) = unsafe {
        let (q, sc, _) = U::unpack(w, b, &U::context(w, b));
        (q, sc, _mm256_loadu_si256(pq.add(32 * b).cast()))
    };
    let aq = _mm256_sign_epi8(q, q);
    let s = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(xv, q));
    let s = _mm256_cvtepi32_ps(_mm256_madd_epi16(s, sc));
    let dsj = _mm256_permutevar8x32_ps(ds, _mm256_set1_epi32(j as i32));
    *acc = _mm256_fmadd_ps(dsj, s, *acc);
}
