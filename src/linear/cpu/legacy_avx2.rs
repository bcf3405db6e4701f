//! The x86 kernels of the legacy family, in exactly the order of [`super::legacy`]'s
//! module docs: one source ([`kernels!`]) compiled once per tier, which differ only in how
//! the exact i32 sums of u8 × i8 products are formed — [`avx2`] (AVX2 + FMA + F16C:
//! `vpmaddubsw` + `vpmaddwd`), [`avx512`] (256-bit EVEX `vpdpbusd`; Q5_0's fifth bits
//! taken from the qh words as byte masks instead of `vpshufb` + compare) and [`avxvnni`]
//! (256-bit VEX `vpdpbusd`). Integer sums are exact, so every tier computes the same block
//! sums and then the same f32 operations in the same lanes: the same bits.
//!
//! With one activation row (GEMV), a pass takes up to four weight rows, eight 32-value
//! blocks at a time (a chunk); with several, a pass takes one weight row against up to four
//! activation rows, each weight pair unpacked once (`tile`). Blocks come in pairs
//! (b, b+1); the activation codes are rearranged once per forward in the order of the
//! weight bytes ([`arrange`]), so a pair's activation halves are plain loads. Each
//! (weight row, activation row) pair of blocks gives one vector of eight
//! i32 partial sums, lanes 0..4 for block b and 4..8 for block b+1. Three `vphaddd` turn
//! a chunk's four pair vectors into the eight exact block sums, in lane order
//! [`P`] = blocks (0, 2, 4, 6, 1, 3, 5, 7) of the chunk; the scales, activation sums and
//! activation scales are loaded in that order, one `vcvtdq2ps` and one fma serve eight
//! blocks, and the accumulator is put back in block order (b mod 8) at the end. Blocks past
//! the last whole chunk run the scalar reference step.
//!
//! AVX2's `vpmaddubsw` pair sums (i16) never saturate: unsigned codes (Q4_0 ≤ 15, Q5_0 ≤ 31,
//! Q2_0 ≤ 3) times q8_1 codes (|x| ≤ 127, never −128) give pairs ≤ 2·31·127 = 7874, and two
//! such vectors are added (≤ 15748) before `vpmaddwd`; signed codes go through a sign
//! transfer, Q8_0 as |q| (u8 ≤ 128: −128 reads as 128) times ±x, IQ4 as |x| times ±kvalue
//! (|kvalue| ≤ 127): pairs ≤ 2·128·127 = 32512 < 32767, each widened by its own
//! `vpmaddwd` before any addition.
//! On the VNNI tiers `vpdpbusd` has no i16 step; Q8_0 takes its codes unsigned there
//! (q + 128 ≤ 255, the offset 128·Σx subtracted as for the nibble types: |T| ≤ 32·255·127).

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::legacy::{Legacy, blocks_scalar};
use super::{P, finish_unpermuted};
use crate::formats::gguf::blocks::{iq4_nl, iq4_xs, q2_0, q4_0, q5_0, q8_0};
use crate::formats::gguf::grids::KVALUES_IQ4NL;
use crate::linear::q8_1::{Row, Rows};
use std::arch::x86_64::*;

/// The pair arrangement of the nibble types and Q8_0: [A 0..16, B 0..16, A 16..32,
/// B 16..32] for blocks A, B of a pair, so that `lo`/`hi` are two plain loads.
const HALVES: [u8; 64] = {
    let mut p = [0u8; 64];
    let mut j = 0;
    while j < 64 {
        p[j] = [0, 32, 16, 48][j / 16] + (j % 16) as u8;
        j += 1;
    }
    p
};

/// Q2_0's pair arrangement: eight 8-byte segments X0_A X0_B X2_A X2_B | X1_A X1_B X3_A
/// X3_B, byte i of Xk_A being value 4i + k of block A (the order of the 2-bit fields).
const Q2_FIELDS: [u8; 64] = {
    let mut p = [0u8; 64];
    let mut j = 0;
    while j < 64 {
        let (k, blk) = [
            (0, 0),
            (0, 1),
            (2, 0),
            (2, 1),
            (1, 0),
            (1, 1),
            (3, 0),
            (3, 1),
        ][j / 8];
        p[j] = 32 * blk + 4 * (j % 8) as u8 + k;
        j += 1;
    }
    p
};

/// The activation rows as these kernels read them ([`Rows::arrange_pairs`]).
pub(super) fn arrange(kind: Legacy, mut rows: Rows) -> Rows {
    match kind {
        Legacy::Q2_0 => rows.arrange_pairs(&Q2_FIELDS, false),
        Legacy::Iq4Nl | Legacy::Iq4Xs => rows.arrange_pairs(&HALVES, true),
        _ => rows.arrange_pairs(&HALVES, false),
    }
    rows
}

/// Q5_0's unsigned 5-bit codes of a block pair (A, B) from their code bytes `v` = [qs_A |
/// qs_B]: the nibbles `lo` = [A 0..16 | B 0..16] and `hi` = [A 16..32 | B 16..32] with
/// bit 4 of value e from bit e of the block's qh word (at `qa` for A, `qc` for B). On the
/// AVX2 tiers each byte picks its qh byte by `vpshufb` and tests its bit by `vpcmpeqb`.
///
/// # Safety
/// AVX2 (the callers' target features); 16 readable bytes at `qa` and at `qc`.
#[inline(always)]
unsafe fn q5_codes_shuffle(v: __m256i, qa: *const u8, qc: *const u8) -> (__m256i, __m256i) {
    // SAFETY: the caller's contract.
    unsafe {
        let m = _mm256_set1_epi8(0x0F);
        let (lo, hi) = (
            _mm256_and_si256(v, m),
            _mm256_and_si256(_mm256_srli_epi16(v, 4), m),
        );
        // qh words in bytes 0..4 of each lane (bytes 4..16 are qs, never selected); byte e
        // of `lo` (value e) tests bit e, byte e of `hi` (value 16 + e) bit 16 + e.
        let qh = _mm256_loadu2_m128i(qc.cast(), qa.cast());
        let sel = _mm256_set1_epi64x(0x8040201008040201u64 as i64);
        let bit4 = |ctl: __m256i| {
            let s = _mm256_and_si256(_mm256_shuffle_epi8(qh, ctl), sel);
            _mm256_and_si256(_mm256_cmpeq_epi8(s, sel), _mm256_set1_epi8(0x10))
        };
        let ctl_lo = _mm256_unpacklo_epi64(_mm256_setzero_si256(), _mm256_set1_epi8(1));
        let ctl_hi = _mm256_unpacklo_epi64(_mm256_set1_epi8(2), _mm256_set1_epi8(3));
        (
            _mm256_or_si256(lo, bit4(ctl_lo)),
            _mm256_or_si256(hi, bit4(ctl_hi)),
        )
    }
}

/// The kernels of one tier, compiled for its features `$feat` (a string literal); the
/// calling module defines `VNNI` (whether the tier has `vpdpbusd`) and the tier's exact i32 sums over each 4-byte group of u8 × i8
/// products of two operand pairs: `sum4x2(u0, s0, u1, s1)` (every adjacent pair sum fits
/// i16), and `sum4x2_small`, the same where the two operands' pair sums also add up
/// within i16.
macro_rules! kernels {
    ($feat:tt) => {
        /// One block type's unpacking, as a type so that each kernel is monomorphized.
        trait Block {
            /// The block's code offset: T = Σ u·x − OFFSET·Σx with u the unsigned stored code.
            const OFFSET: i32;
            /// Activation codes of a block pair, arranged as this type's `dot` needs them.
            type X: Copy;
            /// Unpacked weight codes of a block pair.
            type W: Copy;
            /// The activation codes of blocks b, b+1 (b even).
            ///
            /// # Safety
            /// AVX2 available; blocks b, b+1 lie in the arranged rows of `x`.
            unsafe fn load_x(x: &XPtr, b: usize) -> Self::X;
            /// The weight codes of blocks b, b+1 (b even), arranged as the activation pairs.
            ///
            /// # Safety
            /// AVX2 available; blocks b, b+1 lie in the weight row at `w`.
            unsafe fn unpack(w: *const u8, b: usize) -> Self::W;
            /// The pair's partial sums: lanes 0..4 add up to block b's raw sum, lanes 4..8 to
            /// block b+1's (before the offset and integer scale).
            ///
            /// # Safety
            /// AVX2 available.
            unsafe fn dot(q: &Self::W, x: &Self::X) -> __m256i;
            /// The weight scales d_w of the chunk's blocks `b + P[i]` (b a multiple of 8).
            ///
            /// # Safety
            /// AVX2 available; the chunk lies in the weight row at `w`.
            unsafe fn scales(w: *const u8, b: usize) -> __m256;
            /// The chunk's integer block factors (lane order P), if the type has them.
            ///
            /// # Safety
            /// AVX2 available; the chunk lies in the weight row at `w`.
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn factors(_w: *const u8, _b: usize) -> __m256i {
                _mm256_setzero_si256()
            }
            /// T from the raw sums (lane order P), `osum` = OFFSET·Σx and the chunk's `factors`.
            ///
            /// # Safety
            /// AVX2 available.
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn totals(raw: __m256i, osum: __m256i, _factors: __m256i) -> __m256i {
                if Self::OFFSET == 0 {
                    raw
                } else {
                    _mm256_sub_epi32(raw, osum)
                }
            }
        }

        /// Eight binary16 words at `w + bb·(b + P[i])`, as f32.
        ///
        /// # Safety
        /// F16C available; the eight words lie in the row.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn f16x8(w: *const u8, bb: usize, b: usize) -> __m256 {
            // SAFETY: the caller's contract; unaligned 2-byte reads.
            unsafe {
                // Packed in general registers (two moves to the vector side instead of eight
                // word inserts).
                let h = |i: usize| w.add(bb * (b + i)).cast::<u16>().read_unaligned() as u64;
                let lo = h(0) | h(2) << 16 | h(4) << 32 | h(6) << 48;
                let hi = h(1) | h(3) << 16 | h(5) << 32 | h(7) << 48;
                _mm256_cvtph_ps(_mm_set_epi64x(hi as i64, lo as i64))
            }
        }

        /// 16 bytes at `lo` in the low lane, 16 at `hi` in the high lane.
        ///
        /// # Safety
        /// AVX2 available; both 16-byte ranges readable.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn load2(hi: *const u8, lo: *const u8) -> __m256i {
            // SAFETY: the caller's contract.
            unsafe { _mm256_loadu2_m128i(hi.cast(), lo.cast()) }
        }

        /// The arranged activation codes of one row ([`arrange`]).
        struct XPtr {
            pairs: *const i8,
            abs: *const i8,
        }

        /// Activation codes of a pair as two vectors in the arranged order: for [`HALVES`],
        /// `lo` = [x_b[0..16] | x_b+1[0..16]] and `hi` = the values 16..32.
        #[derive(Clone, Copy)]
        struct Halves {
            lo: __m256i,
            hi: __m256i,
        }

        /// # Safety
        /// AVX2 available; blocks b, b+1 (64 bytes from 32b) lie in the arranged row at `p`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn halves(p: *const i8, b: usize) -> Halves {
            // SAFETY: the caller's contract.
            unsafe {
                Halves {
                    lo: _mm256_loadu_si256(p.add(32 * b).cast()),
                    hi: _mm256_loadu_si256(p.add(32 * b + 32).cast()),
                }
            }
        }

        /// Q8_0's unpacked pair: the codes and their magnitudes (shared by a tile's rows; on a
        /// VNNI tier both hold the unsigned codes q + 128).
        #[derive(Clone, Copy)]
        struct Q8W {
            q: Halves,
            a: Halves,
        }

        /// [`Halves`] of the codes and of their magnitudes (the IQ4 types).
        #[derive(Clone, Copy)]
        struct AbsHalves {
            x: Halves,
            a: Halves,
        }

        /// A signed-code half as the (u8, i8) operands of [`sum4`]: |q| and x·sign q (`aq` = |q|).
        #[inline]
        #[target_feature(enable = $feat)]
        fn signed_half(q: __m256i, aq: __m256i, x: __m256i) -> (__m256i, __m256i) {
            (aq, _mm256_sign_epi8(x, q))
        }

        /// Σ over two unsigned-code halves (pair sums ≤ 7874 each, so their i16 sum fits).
        #[inline]
        #[target_feature(enable = $feat)]
        fn unsigned_halves(lo: __m256i, hi: __m256i, x: &Halves) -> __m256i {
            sum4x2_small(lo, x.lo, hi, x.hi)
        }

        /// `block_q8_0 { f16 d; i8 qs[32]; }`.
        ///
        /// On a VNNI tier the codes are taken unsigned, q + 128 (the sign bit flipped), and
        /// the offset 128·Σx comes back through the activation sums: no sign transfer.
        struct Q8_0;
        impl Block for Q8_0 {
            const OFFSET: i32 = if VNNI { 128 } else { 0 };
            type X = Halves;
            type W = Q8W;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn load_x(x: &XPtr, b: usize) -> Halves {
                // SAFETY: the caller's contract.
                unsafe { halves(x.pairs, b) }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, b: usize) -> Q8W {
                // SAFETY: 32 code bytes from offset 2 of blocks b and b+1.
                let q = unsafe {
                    let (a, c) = (w.add(q8_0::BYTES * b), w.add(q8_0::BYTES * (b + 1)));
                    let (a, c) = (a.add(q8_0::QS.at), c.add(q8_0::QS.at));
                    Halves {
                        lo: load2(c, a),
                        hi: load2(c.add(16), a.add(16)),
                    }
                };
                if VNNI {
                    let flip = _mm256_set1_epi8(i8::MIN);
                    let u = Halves {
                        lo: _mm256_xor_si256(q.lo, flip),
                        hi: _mm256_xor_si256(q.hi, flip),
                    };
                    return Q8W { q: u, a: u };
                }
                // |q| as u8: −128 reads as 128.
                let a = Halves {
                    lo: _mm256_sign_epi8(q.lo, q.lo),
                    hi: _mm256_sign_epi8(q.hi, q.hi),
                };
                Q8W { q, a }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(w: &Q8W, x: &Halves) -> __m256i {
                if VNNI {
                    // q + 128 ≤ 255 times |x| ≤ 127: vpdpbusd has no i16 step.
                    return sum4x2(w.q.lo, x.lo, w.q.hi, x.hi);
                }
                let (u0, s0) = signed_half(w.q.lo, w.a.lo, x.lo);
                let (u1, s1) = signed_half(w.q.hi, w.a.hi, x.hi);
                sum4x2(u0, s0, u1, s1)
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn scales(w: *const u8, b: usize) -> __m256 {
                // SAFETY: the caller's contract.
                unsafe { f16x8(w, q8_0::BYTES, b) }
            }
        }

        /// The low and high nibbles of 32 bytes (16 of each block of a pair).
        #[inline]
        #[target_feature(enable = $feat)]
        fn nibbles(v: __m256i) -> (__m256i, __m256i) {
            let m = _mm256_set1_epi8(0x0F);
            (
                _mm256_and_si256(v, m),
                _mm256_and_si256(_mm256_srli_epi16(v, 4), m),
            )
        }

        /// `block_q4_0 { f16 d; u8 qs[16]; }`: low nibbles are values 0..16, high 16..32; − 8.
        struct Q4_0;
        impl Block for Q4_0 {
            const OFFSET: i32 = 8;
            type X = Halves;
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn load_x(x: &XPtr, b: usize) -> Halves {
                // SAFETY: the caller's contract.
                unsafe { halves(x.pairs, b) }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, b: usize) -> Halves {
                // SAFETY: 16 code bytes from offset 2 of blocks b and b+1; AVX2 (caller).
                let (a, c) = (
                    q4_0::BYTES * b + q4_0::QS.at,
                    q4_0::BYTES * (b + 1) + q4_0::QS.at,
                );
                let (lo, hi) = nibbles(unsafe { load2(w.add(c), w.add(a)) });
                Halves { lo, hi }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &Halves) -> __m256i {
                unsigned_halves(q.lo, q.hi, x)
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn scales(w: *const u8, b: usize) -> __m256 {
                // SAFETY: the caller's contract.
                unsafe { f16x8(w, q4_0::BYTES, b) }
            }
        }

        /// `block_q5_0 { f16 d; u32 qh; u8 qs[16]; }`: nibbles as Q4_0 plus bit e of qh as bit 4
        /// of value e; − 16.
        struct Q5_0;
        impl Block for Q5_0 {
            const OFFSET: i32 = 16;
            type X = Halves;
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn load_x(x: &XPtr, b: usize) -> Halves {
                // SAFETY: the caller's contract.
                unsafe { halves(x.pairs, b) }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, b: usize) -> Halves {
                // SAFETY: qh (4 bytes at 2) and qs (16 bytes at 6) of blocks b and b+1; AVX2.
                unsafe {
                    let (a, c) = (w.add(q5_0::BYTES * b), w.add(q5_0::BYTES * (b + 1)));
                    let v = load2(c.add(q5_0::QS.at), a.add(q5_0::QS.at));
                    let (lo, hi) = q5_codes(v, a.add(q5_0::QH.at), c.add(q5_0::QH.at));
                    Halves { lo, hi }
                }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &Halves) -> __m256i {
                unsigned_halves(q.lo, q.hi, x)
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn scales(w: *const u8, b: usize) -> __m256 {
                // SAFETY: the caller's contract.
                unsafe { f16x8(w, q5_0::BYTES, b) }
            }
        }

        /// `kvalues_iq4nl` in both lanes.
        #[inline]
        #[target_feature(enable = $feat)]
        fn kvalues() -> __m256i {
            // SAFETY: KVALUES_IQ4NL is 16 bytes.
            unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(KVALUES_IQ4NL.as_ptr().cast())) }
        }

        /// A half of IQ4 values `q` (in [−127, 113], never −128) as the (u8, i8) operands of
        /// [`sum4`]: the sign moves onto the code, |x| and q·sign x; pairs ≤ 2·127·127 = 32258.
        #[inline]
        #[target_feature(enable = $feat)]
        fn iq4_half(q: __m256i, x: __m256i, ax: __m256i) -> (__m256i, __m256i) {
            (ax, _mm256_sign_epi8(q, x))
        }

        /// 32 IQ4 code bytes (16 per block of a pair) → their kvalues, in halves.
        #[inline]
        #[target_feature(enable = $feat)]
        fn iq4_unpack(v: __m256i) -> Halves {
            let (lo, hi) = nibbles(v);
            let t = kvalues();
            Halves {
                lo: _mm256_shuffle_epi8(t, lo),
                hi: _mm256_shuffle_epi8(t, hi),
            }
        }

        /// An IQ4 pair against the activation halves and their magnitudes.
        #[inline]
        #[target_feature(enable = $feat)]
        fn iq4_dot(q: &Halves, x: &AbsHalves) -> __m256i {
            let (u0, s0) = iq4_half(q.lo, x.x.lo, x.a.lo);
            let (u1, s1) = iq4_half(q.hi, x.x.hi, x.a.hi);
            sum4x2(u0, s0, u1, s1)
        }

        /// # Safety
        /// As [`halves`], for the codes and their magnitudes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn abs_halves(x: &XPtr, b: usize) -> AbsHalves {
            // SAFETY: the caller's contract.
            unsafe {
                AbsHalves {
                    x: halves(x.pairs, b),
                    a: halves(x.abs, b),
                }
            }
        }

        /// `block_iq4_nl { f16 d; u8 qs[16]; }`: nibbles as Q4_0, each an index into kvalues.
        struct Iq4Nl;
        impl Block for Iq4Nl {
            const OFFSET: i32 = 0;
            type X = AbsHalves;
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn load_x(x: &XPtr, b: usize) -> AbsHalves {
                // SAFETY: the caller's contract.
                unsafe { abs_halves(x, b) }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, b: usize) -> Halves {
                // SAFETY: 16 code bytes from offset 2 of blocks b and b+1.
                let (a, c) = (
                    iq4_nl::BYTES * b + iq4_nl::QS.at,
                    iq4_nl::BYTES * (b + 1) + iq4_nl::QS.at,
                );
                iq4_unpack(unsafe { load2(w.add(c), w.add(a)) })
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &AbsHalves) -> __m256i {
                iq4_dot(q, x)
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn scales(w: *const u8, b: usize) -> __m256 {
                // SAFETY: the caller's contract.
                unsafe { f16x8(w, iq4_nl::BYTES, b) }
            }
        }

        /// `block_iq4_xs { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]; }`: sub-blocks j, j+1
        /// are 32 consecutive code bytes; integer factors ls − 32 applied to the block sums.
        struct Iq4Xs;
        impl Block for Iq4Xs {
            const OFFSET: i32 = 0;
            type X = AbsHalves;
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn load_x(x: &XPtr, b: usize) -> AbsHalves {
                // SAFETY: the caller's contract.
                unsafe { abs_halves(x, b) }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, b: usize) -> Halves {
                // SAFETY: qs[16j .. 16j + 32] of the super-block (j = b % 8 even, ≤ 6).
                iq4_unpack(unsafe {
                    _mm256_loadu_si256(
                        w.add(iq4_xs::BYTES * (b / 8) + iq4_xs::QS.at + 16 * (b % 8))
                            .cast(),
                    )
                })
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &AbsHalves) -> __m256i {
                iq4_dot(q, x)
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn scales(w: *const u8, b: usize) -> __m256 {
                // SAFETY: the super-block's d (caller).
                unsafe {
                    let h = w
                        .add(iq4_xs::BYTES * (b / 8) + iq4_xs::D.at)
                        .cast::<i16>()
                        .read_unaligned();
                    _mm256_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h as i32))))
                }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn factors(w: *const u8, b: usize) -> __m256i {
                // SAFETY: the words at 0 (d | scales_h << 16) and 4 (scales_l) of the super-block.
                unsafe {
                    let blk = w.add(iq4_xs::BYTES * (b / 8));
                    let w0 = _mm256_set1_epi32(blk.cast::<i32>().read_unaligned());
                    let sl = _mm256_set1_epi32(
                        blk.add(iq4_xs::SCALES_L.at).cast::<i32>().read_unaligned(),
                    );
                    // Lane i is sub-block j = P[i]: nibble j of scales_l; bits 2j, 2j+1 of
                    // scales_h (bits 16 + 2j.. of w0) moved to bits 4, 5.
                    let lo = _mm256_srlv_epi32(sl, _mm256_setr_epi32(0, 8, 16, 24, 4, 12, 20, 28));
                    let hi =
                        _mm256_srlv_epi32(w0, _mm256_setr_epi32(12, 16, 20, 24, 14, 18, 22, 26));
                    let ls = _mm256_or_si256(
                        _mm256_and_si256(lo, _mm256_set1_epi32(0x0F)),
                        _mm256_and_si256(hi, _mm256_set1_epi32(0x30)),
                    );
                    _mm256_sub_epi32(ls, _mm256_set1_epi32(32))
                }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn totals(raw: __m256i, _: __m256i, factors: __m256i) -> __m256i {
                // |raw| ≤ 32·127·127 and |ls − 32| ≤ 32: the product fits i32 (and f32).
                _mm256_mullo_epi32(raw, factors)
            }
        }

        /// `block_q2_0 { f16 d; u8 qs[16]; }` over 64 values (blocks b, b+1): value j is bits
        /// 2(j%4).. of qs[j/4]; − 1.
        struct Q2_0;
        impl Block for Q2_0 {
            const OFFSET: i32 = 1;
            type X = Halves;
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn load_x(x: &XPtr, b: usize) -> Halves {
                // SAFETY: the caller's contract ([`Q2_FIELDS`]: `lo` = fields 0 and 2, `hi` = 1 and 3).
                unsafe { halves(x.pairs, b) }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, b: usize) -> Halves {
                // SAFETY: the 16 code bytes of Q2_0 block b/2; AVX2.
                let at = q2_0::BYTES * b / 2 + q2_0::QS.at;
                let v = unsafe { _mm_loadu_si128(w.add(at).cast()) };
                let m = _mm256_set1_epi8(3);
                // Fields k = 0, 2 and k = 1, 3 (bytes 0..8 of each are block b, 8..16 block b+1).
                let lo = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
                let hi = _mm256_set_m128i(_mm_srli_epi16(v, 6), _mm_srli_epi16(v, 2));
                Halves {
                    lo: _mm256_and_si256(lo, m),
                    hi: _mm256_and_si256(hi, m),
                }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &Halves) -> __m256i {
                // i32 lanes [b b b+1 b+1 | b b b+1 b+1] → [b ×4 | b+1 ×4].
                _mm256_permute4x64_epi64(unsigned_halves(q.lo, q.hi, x), 0b11_01_10_00)
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn scales(w: *const u8, b: usize) -> __m256 {
                // SAFETY: the d of Q2_0 blocks b/2 .. b/2 + 4 (caller).
                unsafe {
                    let h = |i: usize| {
                        w.add(q2_0::BYTES * (b / 2 + i))
                            .cast::<i16>()
                            .read_unaligned()
                    };
                    // Lanes P = (0, 2, 4, 6, 1, 3, 5, 7) are Q2_0 blocks (0, 1, 2, 3, 0, 1, 2, 3).
                    let f = _mm_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), 0, 0, 0, 0));
                    _mm256_set_m128(f, f)
                }
            }
        }

        /// # Safety
        /// The features `$feat` available.
        #[target_feature(enable = $feat)]
        pub(in crate::linear::cpu) unsafe fn dot_row_group(
            kind: Legacy,
            ws: &[&[u8]],
            xs: &[Row<'_>],
            out: &mut [f32],
        ) {
            // SAFETY (all): the caller's contract.
            unsafe {
                match kind {
                    Legacy::Q8_0 => group::<Q8_0>(kind, ws, xs, out),
                    Legacy::Q4_0 => group::<Q4_0>(kind, ws, xs, out),
                    Legacy::Q5_0 => group::<Q5_0>(kind, ws, xs, out),
                    Legacy::Q2_0 => group::<Q2_0>(kind, ws, xs, out),
                    Legacy::Iq4Nl => group::<Iq4Nl>(kind, ws, xs, out),
                    Legacy::Iq4Xs => group::<Iq4Xs>(kind, ws, xs, out),
                }
            }
        }

        /// # Safety
        /// As [`dot_row_group`].
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn group<K: Block>(kind: Legacy, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
            let Some(first) = xs.first() else {
                return;
            };
            // The bounds checks: every pointer read below stays inside these.
            let nb = first.d.len();
            let whole = nb / 8 * 8;
            let abs = matches!(kind, Legacy::Iq4Nl | Legacy::Iq4Xs);
            for x in xs {
                assert!(x.d.len() == nb && x.qs.len() >= 32 * nb && x.sum.len() >= nb);
                assert!(x.pairs.len() >= 32 * whole && (!abs || x.pairs_abs.len() >= 32 * whole));
            }
            assert!(ws.iter().all(|w| w.len() >= kind.row_bytes(nb)));
            // GEMV: the weight rows share each activation pair; several activation rows:
            // each weight pair is unpacked once for up to four of them.
            passes!(
                ws,
                xs,
                out,
                res,
                // SAFETY: the features (caller); bounds just checked.
                rows | R,
                wr,
                x0 | unsafe { rows::<R, K>(kind, wr, x0, &mut res) },
                // SAFETY: as above.
                tile | C,
                w,
                x | unsafe { tile::<C, K>(kind, w, x, &mut res) },
            );
        }

        /// One weight row against C activation rows, into `res[..C]` (the same order as
        /// [`rows`]: only which values share registers differs).
        ///
        /// # Safety
        /// As [`rows`], for every row of `xs`.
        #[inline(never)]
        #[target_feature(enable = $feat)]
        unsafe fn tile<const C: usize, K: Block>(
            kind: Legacy,
            w: &[u8],
            xs: &[Row<'_>],
            res: &mut [f32; 4],
        ) {
            let nb = xs[0].d.len();
            let whole = nb / 8 * 8;
            let wp = w.as_ptr();
            let xp: [XPtr; C] = std::array::from_fn(|c| XPtr {
                pairs: xs[c].pairs.as_ptr(),
                abs: xs[c].pairs_abs.as_ptr(),
            });
            // SAFETY (all loads): chunks b .. b + 8 ≤ nb lie in the weight row and every
            // activation row (the caller's checks).
            unsafe {
                let perm = _mm256_loadu_si256(P.as_ptr().cast());
                let mut acc = [_mm256_setzero_ps(); C];
                let mut b = 0;
                while b < whole {
                    // The next weight row, as in `rows`.
                    let ahead = kind.row_bytes(b) + kind.row_bytes(nb);
                    let mut o = 0;
                    while o < kind.row_bytes(8) {
                        _mm_prefetch::<_MM_HINT_T1>(wp.wrapping_add(ahead + o).cast());
                        o += 64;
                    }
                    let q = [
                        K::unpack(wp, b),
                        K::unpack(wp, b + 2),
                        K::unpack(wp, b + 4),
                        K::unpack(wp, b + 6),
                    ];
                    let dw = K::scales(wp, b);
                    let f = K::factors(wp, b);
                    for c in 0..C {
                        let x = &xp[c];
                        let pair = |j: usize| K::dot(&q[j], &K::load_x(x, b + 2 * j));
                        let h0 = _mm256_hadd_epi32(pair(0), pair(1));
                        let h1 = _mm256_hadd_epi32(pair(2), pair(3));
                        let dx = _mm256_loadu_ps(xs[c].d.as_ptr().add(b));
                        let dx = _mm256_permutevar8x32_ps(dx, perm);
                        let osum = if K::OFFSET == 0 {
                            _mm256_setzero_si256()
                        } else {
                            let s = _mm256_loadu_si256(xs[c].sum.as_ptr().add(b).cast());
                            let s = _mm256_permutevar8x32_epi32(s, perm);
                            _mm256_mullo_epi32(s, _mm256_set1_epi32(K::OFFSET))
                        };
                        let t = K::totals(_mm256_hadd_epi32(h0, h1), osum, f);
                        acc[c] =
                            _mm256_fmadd_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(t), acc[c]);
                    }
                    b += 8;
                }
                for c in 0..C {
                    res[c] = finish_unpermuted(acc[c], whole < nb, |a| {
                        blocks_scalar(kind, w, &xs[c], whole, nb, a)
                    });
                }
            }
        }

        /// R weight rows against one activation row, into `res[..R]`.
        ///
        /// # Safety
        /// AVX2, FMA and F16C available; every `ws[i]` holds the whole blocks of `x`'s length, `x`
        /// holds 32 codes, a scale and a sum per block.
        #[inline(never)]
        #[target_feature(enable = $feat)]
        unsafe fn rows<const R: usize, K: Block>(
            kind: Legacy,
            ws: &[&[u8]],
            x: &Row<'_>,
            res: &mut [f32; 4],
        ) {
            let nb = x.d.len();
            let whole = nb / 8 * 8;
            let wp: [*const u8; R] = std::array::from_fn(|i| ws[i].as_ptr());
            let (pd, ps) = (x.d.as_ptr(), x.sum.as_ptr());
            let pf_dist = R * kind.row_bytes(nb);
            let xq = XPtr {
                pairs: x.pairs.as_ptr(),
                abs: x.pairs_abs.as_ptr(),
            };
            // SAFETY (all loads): chunks b .. b + 8 ≤ nb lie in every row (the caller's checks).
            unsafe {
                let perm = _mm256_loadu_si256(P.as_ptr().cast());
                let mut acc = [_mm256_setzero_ps(); R];
                let mut b = 0;
                while b < whole {
                    let dx = _mm256_permutevar8x32_ps(_mm256_loadu_ps(pd.add(b)), perm);
                    let osum = if K::OFFSET == 0 {
                        _mm256_setzero_si256()
                    } else {
                        let s =
                            _mm256_permutevar8x32_epi32(_mm256_loadu_si256(ps.add(b).cast()), perm);
                        _mm256_mullo_epi32(s, _mm256_set1_epi32(K::OFFSET))
                    };
                    let x0 = K::load_x(&xq, b);
                    let x1 = K::load_x(&xq, b + 2);
                    let x2 = K::load_x(&xq, b + 4);
                    let x3 = K::load_x(&xq, b + 6);
                    for i in 0..R {
                        let w = wp[i];
                        // The same part of the next group's row i (rows are consecutive in the
                        // plane): each row is only a few KiB, too short for the hardware
                        // prefetcher to follow four of them from their first line.
                        let ahead = kind.row_bytes(b) + pf_dist;
                        let mut o = 0;
                        while o < kind.row_bytes(8) {
                            _mm_prefetch::<_MM_HINT_T1>(w.wrapping_add(ahead + o).cast());
                            o += 64;
                        }
                        let pair = |b, x: &K::X| K::dot(&K::unpack(w, b), x);
                        let h0 = _mm256_hadd_epi32(pair(b, &x0), pair(b + 2, &x1));
                        let h1 = _mm256_hadd_epi32(pair(b + 4, &x2), pair(b + 6, &x3));
                        let t = K::totals(_mm256_hadd_epi32(h0, h1), osum, K::factors(w, b));
                        let d = _mm256_mul_ps(K::scales(w, b), dx);
                        acc[i] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(t), acc[i]);
                    }
                    b += 8;
                }
                for i in 0..R {
                    res[i] = finish_unpermuted(acc[i], whole < nb, |a| {
                        blocks_scalar(kind, ws[i], x, whole, nb, a)
                    });
                }
            }
        }
    };
}

/// The AVX2 tier: `vpmaddubsw` (i16 pair sums) widened by `vpmaddwd`. Its `sum4x2` and
/// `sum4x2_small` (and those of [`avx512`] and [`avxvnni`]) are also the grouped and nvfp4
/// kernels' sums of the same tier.
pub(super) mod avx2 {
    use super::*;

    const VNNI: bool = false;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn sum4(u: __m256i, s: __m256i) -> __m256i {
        _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(in crate::linear::cpu) fn sum4x2(
        u0: __m256i,
        s0: __m256i,
        u1: __m256i,
        s1: __m256i,
    ) -> __m256i {
        _mm256_add_epi32(sum4(u0, s0), sum4(u1, s1))
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(in crate::linear::cpu) fn sum4x2_small(
        u0: __m256i,
        s0: __m256i,
        u1: __m256i,
        s1: __m256i,
    ) -> __m256i {
        let p = _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1));
        _mm256_madd_epi16(p, _mm256_set1_epi16(1))
    }

    /// Q5_0's codes ([`q5_codes_shuffle`]).
    ///
    /// # Safety
    /// As [`q5_codes_shuffle`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn q5_codes(v: __m256i, qa: *const u8, qc: *const u8) -> (__m256i, __m256i) {
        // SAFETY: the caller's contract.
        unsafe { q5_codes_shuffle(v, qa, qc) }
    }

    kernels!("avx2,fma,f16c");
}

/// The VNNI tiers' sums: `vpdpbusd` accumulates the four u8 × i8 products of each group
/// straight into i32 (no i16 step); `$dp` is the tier's 256-bit form.
macro_rules! vnni_sums {
    ($feat:tt, $dp:ident) => {
        const VNNI: bool = true;

        #[inline]
        #[target_feature(enable = $feat)]
        pub(in crate::linear::cpu) fn sum4x2(
            u0: __m256i,
            s0: __m256i,
            u1: __m256i,
            s1: __m256i,
        ) -> __m256i {
            $dp($dp(_mm256_setzero_si256(), u0, s0), u1, s1)
        }

        #[inline]
        #[target_feature(enable = $feat)]
        pub(in crate::linear::cpu) fn sum4x2_small(
            u0: __m256i,
            s0: __m256i,
            u1: __m256i,
            s1: __m256i,
        ) -> __m256i {
            sum4x2(u0, s0, u1, s1)
        }
    };
}

/// The AVX-512 tier: 256-bit EVEX `vpdpbusd` (AVX512-VNNI + VL), the AVX2 tier's lanes.
pub(super) mod avx512 {
    use super::*;
    vnni_sums!(
        "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni",
        _mm256_dpbusd_epi32
    );

    /// Q5_0's codes ([`q5_codes_shuffle`]), the fifth bits as byte masks: the 16 bits of
    /// each half of the two qh words are the 32 bytes of `lo` and of `hi` that get bit 4.
    ///
    /// # Safety
    /// The tier's features; 4 readable bytes at `qa` and at `qc`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn q5_codes(v: __m256i, qa: *const u8, qc: *const u8) -> (__m256i, __m256i) {
        // SAFETY: the caller's contract.
        let (a, c) = unsafe {
            (
                qa.cast::<u32>().read_unaligned(),
                qc.cast::<u32>().read_unaligned(),
            )
        };
        let (m_lo, m_hi) = ((a & 0xFFFF) | (c << 16), (a >> 16) | (c & 0xFFFF_0000));
        let bit4 = _mm256_set1_epi8(0x10);
        // (nibble & 15) | (16 under the mask): one ternary-logic op per half (A & B | C).
        let or_bit4 = |v: __m256i, m: u32| {
            _mm256_ternarylogic_epi32::<0xEA>(
                v,
                _mm256_set1_epi8(0x0F),
                _mm256_maskz_mov_epi8(m, bit4),
            )
        };
        (or_bit4(v, m_lo), or_bit4(_mm256_srli_epi16(v, 4), m_hi))
    }

    kernels!("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni");
}

/// The AVX-VNNI tier: 256-bit VEX `vpdpbusd`, the AVX2 tier's lanes.
pub(super) mod avxvnni {
    use super::*;
    vnni_sums!("avx2,fma,f16c,avxvnni", _mm256_dpbusd_avx_epi32);

    /// Q5_0's codes ([`q5_codes_shuffle`]).
    ///
    /// # Safety
    /// As [`q5_codes_shuffle`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
    unsafe fn q5_codes(v: __m256i, qa: *const u8, qc: *const u8) -> (__m256i, __m256i) {
        // SAFETY: the caller's contract.
        unsafe { q5_codes_shuffle(v, qa, qc) }
    }

    kernels!("avx2,fma,f16c,avxvnni");
}
