//! The AVX-512 tier of the grouped_absmax chunk encoder ([`Isa::Avx512`](crate::isa::Isa::Avx512)):
//! the shared chunk kernel of the AVX2 tier, expanded with 512-bit `amax8` (16 magnitude
//! patterns per integer max, folded to 8 lanes before the same transpose-and-reduce) and
//! `codes32` (16 codes per product, clamp and magic addition, narrowed in order by
//! `vpmovdb`). The operations per value are those of the AVX2 tier and of the scalar path:
//! `vmulps` (no FMA), the clamp to [qmin, qmax], then the 1.5 · 2^23 addition that rounds
//! to an integer with ties to even; the narrowing truncates codes already in [qmin, qmax].
//!
//! # Safety
//! Every function here requires AVX2, F16C and AVX-512 F/BW/VL; the caller checks that the
//! machine runs the AVX-512 tier. Loads and stores go through slices whose bounds were
//! checked by indexing.

// Intrinsics became safe inside `#[target_feature]` functions after our MSRV (1.85).
#![allow(unused_unsafe)]

use super::avx2::{Chunks, Consts, PREFETCH, crumbs64, nibbles64, reduce8};
use super::{RNE_MAGIC, RNE_MAGIC_BITS};
use crate::formats::grouped::Scheme;
use std::arch::x86_64::*;

chunk_kernel!("avx2,f16c,avx512f,avx512bw,avx512vl");

/// Lane j = the amax bit pattern of group j of the 8 groups of `g` values at `p`.
///
/// # Safety
/// The tier's features; `p` readable for `8 · g` values (`g` a multiple of 16).
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn amax8(p: *const f32, g: usize) -> __m256i {
    // SAFETY: the caller's contract.
    unsafe {
        let abs = _mm512_set1_epi32(0x7fff_ffff);
        let mut m = [_mm256_setzero_si256(); 8];
        for (j, mj) in m.iter_mut().enumerate() {
            let mut a = _mm512_setzero_si512();
            for v in 0..g / 16 {
                let b = _mm512_castps_si512(_mm512_loadu_ps(p.add(j * g + v * 16)));
                a = _mm512_max_epi32(a, _mm512_and_si512(b, abs));
            }
            *mj = _mm256_max_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64::<1>(a));
        }
        reduce8(&m)
    }
}

/// The codes of 32 values at `p` with multiplier `inv`, as 32 ordered bytes:
/// `clamp(rne(x · inv))` (module docs).
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn codes32(k: &Consts, p: *const f32, inv: f32) -> __m256i {
    // SAFETY: the tier's features are enabled; the caller passes 32 readable values.
    unsafe {
        let inv = _mm512_set1_ps(inv);
        let (qmin, qmax) = (_mm512_set1_ps(k.qmin), _mm512_set1_ps(k.qmax));
        let (magic, magic_bits) = (_mm512_set1_ps(RNE_MAGIC), _mm512_set1_epi32(RNE_MAGIC_BITS));
        let code16 = |i: usize| {
            let v = _mm512_mul_ps(_mm512_loadu_ps(p.add(i)), inv);
            let v = _mm512_max_ps(_mm512_min_ps(v, qmax), qmin);
            // The sum's pattern minus the constant's is the rounded integer (in [qmin, qmax]).
            let c = _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(v, magic)), magic_bits);
            _mm512_cvtepi32_epi8(c)
        };
        _mm256_set_m128i(code16(16), code16(0))
    }
}
