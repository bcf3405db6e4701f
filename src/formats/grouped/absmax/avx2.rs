//! The AVX2 + F16C grouped_absmax row kernel (spec §7.2), eight groups at a time.
//!
//! It performs exactly the operations of the scalar path ([`super::quantize_group`] then
//! `row_split::pack_codes`), lane by lane:
//!
//! - amax: an integer max of the magnitude bit patterns (the order of non-negative binary32
//!   patterns is their numeric order), reduced so that lane j holds group j's amax;
//! - `raw32 = amax / qmax`: `vdivps` is the correctly rounded IEEE division;
//! - `scale16 = round_f16(raw32)`: `vcvtps2ph` with immediate 0 (round to nearest even,
//!   independent of MXCSR), then the 0x0001 rescue of a +0 result when amax > 0;
//! - `inv32 = 1 / scale32`: `vcvtph2ps` is exact, `vdivps` correctly rounded;
//! - `code = clamp(rne(x · inv32))`: `vmulps` (no FMA), then the clamp to [qmin, qmax]
//!   *before* the rounding (equal to the clamp after it: rounding is monotone and fixes the
//!   integral bounds), then the 1.5 · 2^23 addition that rounds to an integer with ties to
//!   even, as the scalar `round_clamp` does.
//!
//! A chunk holding a non-finite value or a scale overflow is left to the scalar path, which
//! reports it. `encode_row`'s tests and `tests/grouped*.rs` check every tier bit for bit.
//!
//! The chunk encoder is one source ([`chunk_kernel`]) expanded per tier; a tier module
//! supplies `amax8` (lane j = group j's amax pattern) and `codes32` (32 codes as ordered
//! bytes) at its vector width: this one at 256 bits, `avx512` at 512.
//!
//! # Safety
//! Every function here requires AVX2 and F16C; the caller checks that the machine runs the
//! AVX2 tier ([`crate::isa::Isa::Avx2`]). Loads and stores go through slices whose bounds
//! were checked by indexing.

// Intrinsics became safe inside `#[target_feature]` functions after our MSRV (1.85).
#![allow(unused_unsafe)]

use super::{RNE_MAGIC, RNE_MAGIC_BITS};
use crate::formats::grouped::Scheme;
use std::arch::x86_64::*;

/// What [`encode_chunks`] did: the number of leading groups encoded (a multiple of 8) and
/// how many of them have the scale word +0 or 0x0001 (the encode driver's statistics).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Chunks {
    pub groups: usize,
    pub zero: u64,
    pub rescued: u64,
}

/// The chunk encoder ([`encode_chunks`]) compiled for the target features `$feat`, over
/// the tier's `amax8` and `codes32` (module docs of the tier modules).
macro_rules! chunk_kernel {
    ($feat:literal) => {
        /// Encodes the leading whole chunks of 8 groups of row `x` (its logical values) straight
        /// into the row's `row_split_k128_v1` plane rows `lo`, `hi`, `sc` (lengths of
        /// `row_plane_bytes`). Stops before the first chunk holding a non-finite value or a scale
        /// overflow, and does nothing for a scheme other than q4/q5/q6 with G = 64 or q8 with
        /// G = 32. The caller encodes the remaining groups (and the padding) by the scalar path.
        ///
        /// # Safety
        /// The CPU must run the tier of the expansion.
        #[target_feature(enable = $feat)]
        pub(crate) unsafe fn encode_chunks(
            s: &Scheme,
            x: &[f32],
            lo: &mut [u8],
            hi: &mut [u8],
            sc: &mut [u8],
        ) -> Chunks {
            let mut done = Chunks::default();
            let g = s.group;
            if !matches!((s.bits, g), (4..=6, 64) | (8, 32)) || s.encoder_qmax <= 0 {
                return done;
            }
            let chunk = 8 * g;
            // SAFETY (whole body): the tier's features are enabled (caller contract); every pointer below
            // comes from a slice indexed to the exact length it is read or written through.
            unsafe {
                let den = _mm256_set1_ps(s.encoder_qmax as f32);
                let one = _mm256_set1_ps(1.0);
                let finite_max = _mm256_set1_epi32(0x7f7f_ffff);
                let k = Consts::new(s);
                for (c, xc) in x.chunks_exact(chunk).enumerate() {
                    let p = xc.as_ptr();
                    // Ask for the source PREFETCH bytes ahead: the loads below wait on memory
                    // otherwise (a prefetch past the row's end is harmless: it never faults).
                    for line in (0..chunk * 4).step_by(64) {
                        let ahead = p.cast::<i8>().wrapping_add(PREFETCH + line);
                        _mm_prefetch::<_MM_HINT_T0>(ahead);
                    }
                    let amax = amax8(p, g);
                    if _mm256_movemask_epi8(_mm256_cmpgt_epi32(amax, finite_max)) != 0 {
                        break;
                    }
                    let raw = _mm256_div_ps(_mm256_castsi256_ps(amax), den);
                    let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(raw);
                    if _mm_movemask_epi8(_mm_cmpeq_epi16(h, _mm_set1_epi16(0x7c00))) != 0 {
                        break;
                    }
                    let zero32 = _mm256_cmpeq_epi32(amax, _mm256_setzero_si256());
                    let zero16 = _mm_packs_epi32(
                        _mm256_castsi256_si128(zero32),
                        _mm256_extracti128_si256::<1>(zero32),
                    );
                    let rescue = _mm_andnot_si128(zero16, _mm_cmpeq_epi16(h, _mm_setzero_si128()));
                    let h = _mm_or_si128(h, _mm_and_si128(rescue, _mm_set1_epi16(1)));
                    _mm_storeu_si128(sc[c * 16..c * 16 + 16].as_mut_ptr().cast(), h);
                    done.zero += u64::from(_mm_movemask_epi8(zero16).count_ones() / 2);
                    // As the scalar driver counts them: every 0x0001 scale word.
                    let ones = _mm_cmpeq_epi16(h, _mm_set1_epi16(1));
                    done.rescued += u64::from(_mm_movemask_epi8(ones).count_ones() / 2);
                    // A zero group's scale is +0: its multiplier is 0 (its values are ±0) so that
                    // its codes are 0, as the scalar path writes them.
                    let inv = _mm256_div_ps(one, _mm256_cvtph_ps(h));
                    let inv = _mm256_andnot_ps(_mm256_castsi256_ps(zero32), inv);
                    let mut invs = [0f32; 8];
                    _mm256_storeu_ps(invs.as_mut_ptr(), inv);
                    for (j, &iv) in invs.iter().enumerate() {
                        let gi = c * 8 + j;
                        let q = p.add(j * g);
                        if g == 32 {
                            let codes = codes32(&k, q, iv);
                            _mm256_storeu_si256(
                                lo[gi * 32..gi * 32 + 32].as_mut_ptr().cast(),
                                codes,
                            );
                        } else {
                            let c0 = codes32(&k, q, iv);
                            let c1 = codes32(&k, q.add(32), iv);
                            let l = nibbles64(c0, c1);
                            _mm256_storeu_si256(lo[gi * 32..gi * 32 + 32].as_mut_ptr().cast(), l);
                            match s.bits {
                                5 => {
                                    let b0 =
                                        _mm256_movemask_epi8(_mm256_slli_epi16::<3>(c0)) as u32;
                                    let b1 =
                                        _mm256_movemask_epi8(_mm256_slli_epi16::<3>(c1)) as u32;
                                    let w = u64::from(b0) | (u64::from(b1) << 32);
                                    hi[gi * 8..gi * 8 + 8].copy_from_slice(&w.to_le_bytes());
                                }
                                6 => {
                                    let t = crumbs64(c0, c1);
                                    _mm_storeu_si128(
                                        hi[gi * 16..gi * 16 + 16].as_mut_ptr().cast(),
                                        t,
                                    );
                                }
                                _ => {}
                            }
                        }
                    }
                    done.groups += 8;
                }
            }
            done
        }
    };
}

chunk_kernel!("avx2,f16c");

/// How far ahead of the chunk being encoded the source is prefetched, in bytes.
pub(super) const PREFETCH: usize = 4096;

/// Constants of the code selection (broadcast by each tier's `codes32`).
pub(crate) struct Consts {
    pub(super) qmin: f32,
    pub(super) qmax: f32,
}

impl Consts {
    pub(crate) fn new(s: &Scheme) -> Consts {
        Consts {
            qmin: s.qmin as f32,
            qmax: s.qmax as f32,
        }
    }
}

/// Lane j = the amax bit pattern of group j of the 8 groups of `g` values at `p`.
///
/// # Safety
/// AVX2; `p` readable for `8 · g` values (`g` a multiple of 8).
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn amax8(p: *const f32, g: usize) -> __m256i {
    // SAFETY: the caller's contract.
    unsafe {
        let abs = _mm256_set1_epi32(0x7fff_ffff);
        let mut m = [_mm256_setzero_si256(); 8];
        for (j, mj) in m.iter_mut().enumerate() {
            for v in 0..g / 8 {
                let b = _mm256_castps_si256(_mm256_loadu_ps(p.add(j * g + v * 8)));
                *mj = _mm256_max_epi32(*mj, _mm256_and_si256(b, abs));
            }
        }
        reduce8(&m)
    }
}

/// Lane j = the maximum of the 8 lanes of `m[j]` (a transpose-and-reduce).
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn reduce8(m: &[__m256i; 8]) -> __m256i {
    // SAFETY: AVX2 is enabled.
    unsafe {
        let pair = |a: __m256i, b: __m256i| {
            _mm256_max_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b))
        };
        let quad = |a: __m256i, b: __m256i| {
            _mm256_max_epi32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b))
        };
        // Per 128-bit half: [m0, m1, m2, m3] reduced over that half's 4 lanes.
        let u = quad(pair(m[0], m[1]), pair(m[2], m[3]));
        let v = quad(pair(m[4], m[5]), pair(m[6], m[7]));
        _mm256_max_epi32(
            _mm256_permute2x128_si256::<0x20>(u, v),
            _mm256_permute2x128_si256::<0x31>(u, v),
        )
    }
}

/// The codes of 32 values at `p` with multiplier `inv`, as 32 ordered bytes:
/// `clamp(rne(x · inv))` (module docs).
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn codes32(k: &Consts, p: *const f32, inv: f32) -> __m256i {
    // SAFETY: AVX2 is enabled; the caller passes 32 readable values.
    unsafe {
        let inv = _mm256_set1_ps(inv);
        let (qmin, qmax) = (_mm256_set1_ps(k.qmin), _mm256_set1_ps(k.qmax));
        let (magic, magic_bits) = (_mm256_set1_ps(RNE_MAGIC), _mm256_set1_epi32(RNE_MAGIC_BITS));
        let code8 = |i: usize| {
            let v = _mm256_mul_ps(_mm256_loadu_ps(p.add(i)), inv);
            let v = _mm256_max_ps(_mm256_min_ps(v, qmax), qmin);
            // The sum's pattern minus the constant's is the rounded integer (in [qmin, qmax]).
            _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(v, magic)), magic_bits)
        };
        let ab = _mm256_packs_epi32(code8(0), code8(8));
        let cd = _mm256_packs_epi32(code8(16), code8(24));
        // Dwords of 4 codes, in the order [0, 2, 4, 6, 1, 3, 5, 7] of the 8 values' blocks.
        let abcd = _mm256_packs_epi16(ab, cd);
        _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }
}

/// Plane 0 of 64 codes (`c0` codes 0..32, `c1` codes 32..64): two low nibbles a byte,
/// the earlier in the low nibble.
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn nibbles64(c0: __m256i, c1: __m256i) -> __m256i {
    // SAFETY: AVX2 is enabled.
    unsafe {
        let m = _mm256_set1_epi8(0x0f);
        let w = _mm256_set1_epi16(0x1001); // bytes [1, 16]: even + 16 · odd ≤ 255
        let n0 = _mm256_maddubs_epi16(_mm256_and_si256(c0, m), w);
        let n1 = _mm256_maddubs_epi16(_mm256_and_si256(c1, m), w);
        _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(n0, n1))
    }
}

/// q6's plane 1 of 64 codes: bits 5..4 of each code, four 2-bit fields a byte, the
/// earlier in the less significant bits.
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn crumbs64(c0: __m256i, c1: __m256i) -> __m128i {
    // SAFETY: AVX2 is enabled.
    unsafe {
        let m = _mm256_set1_epi8(0x03);
        let w4 = _mm256_set1_epi16(0x0401); // bytes [1, 4]
        let w16 = _mm256_set1_epi32(0x0010_0001); // words [1, 16]
        let d = |c: __m256i| {
            let t = _mm256_and_si256(_mm256_srli_epi16::<4>(c), m);
            _mm256_madd_epi16(_mm256_maddubs_epi16(t, w4), w16)
        };
        let w = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi32(d(c0), d(c1)));
        _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w))
    }
}
