//! The x86 kernels of the six grouped formats (q2_g64, t2_g128, q4_g64, q5_g64, q6_g64,
//! q8_g32) against q8_1 activations, in exactly the order of [`super::grouped_q8`]'s module
//! docs: one source ([`kernels!`]) compiled once per tier — [`avx2`] (AVX2 + FMA + F16C)
//! and [`avxvnni`] (256-bit `vpdpbusd`), which differ only in how the exact i32 sums of
//! u8 × i8 products are formed (the sums of `legacy_avx2`'s tiers): the same block sums,
//! then the same f32 operations in the same lanes, so the same bits. (The AVX-512 tier has
//! kernels of its own, `grouped_q8_avx512`.)
//!
//! The pass shapes are those of `legacy_avx2`: with one activation row (GEMV) a pass takes
//! up to four weight rows, eight 32-value blocks at a time (a chunk); with several, one
//! weight row against up to four activation rows, each weight pair unpacked once. Blocks
//! come in pairs (b, b+1) whose activation codes are rearranged once per forward in the
//! order of the weight bytes ([`arrange`]): q2/t2/q4/q5/q6 as [A even, B even, A odd,
//! B odd] (byte i of a q4 block holds elements 2i and 2i+1 in its low and high nibble; the
//! 2-bit fields of q2/t2 and of q6's plane 1 are spread to that order by nibble, q5's bit 4
//! by a byte shuffle and a bit mask), q8 as [A 0..16,
//! B 0..16, A 16..32, B 16..32]. Each pair gives eight i32 partial sums (lanes 0..4 block
//! b, 4..8 block b+1); three `vphaddd` give a chunk's eight exact block sums in lane order
//! [`P`], the scales are loaded in that order, one `vcvtdq2ps` and one fma serve eight
//! blocks, and the accumulator is put back in block order at the end. Blocks past the last
//! whole chunk run the scalar reference step.
//!
//! `vpmaddubsw` pair sums (i16) never saturate: codes read unsigned (u = code + 2^e ≤ 63,
//! q6's bound; q5 ≤ 31, q4 ≤ 15, q2/t2 ≤ 3) times q8_1 codes (|x| ≤ 127, never −128) give
//! pairs ≤ 2·63·127 = 16002, two such vectors added ≤ 32004 < 32767; q8 codes go through a sign transfer, |q| (u8 ≤ 128: −128 reads as 128)
//! times ±x, pairs ≤ 2·128·127 = 32512 < 32767, each widened by its own `vpmaddwd`. The
//! VNNI tiers' `vpdpbusd` has no i16 step (the same u8 × i8 operands, summed into i32).

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::float::Grouped;
use super::grouped_q8::{GRow, blocks_scalar, check_rows, prefetch_next};
use super::{P, finish_unpermuted};
use crate::linear::q8_1::{Row, Rows};
use std::arch::x86_64::*;

/// q4's pair arrangement: [A even 16, B even 16, A odd 16, B odd 16] (also nvfp4's).
pub(super) const NIBBLES: [u8; 64] = {
    let mut p = [0u8; 64];
    let mut j = 0;
    while j < 64 {
        p[j] = [0, 32, 1, 33][j / 16] + 2 * (j % 16) as u8;
        j += 1;
    }
    p
};

/// q8's pair arrangement: [A 0..16, B 0..16, A 16..32, B 16..32].
const HALVES: [u8; 64] = {
    let mut p = [0u8; 64];
    let mut j = 0;
    while j < 64 {
        p[j] = [0, 32, 16, 48][j / 16] + (j % 16) as u8;
        j += 1;
    }
    p
};

/// The activation rows as these kernels read them ([`Rows::arrange_pairs`]).
pub(super) fn arrange(kind: Grouped, mut rows: Rows) -> Rows {
    match kind {
        Grouped::Q8 => rows.arrange_pairs(&HALVES, false),
        _ => rows.arrange_pairs(&NIBBLES, false),
    }
    rows
}

/// The kernels of one tier, compiled for its features `$feat` (a string literal); the
/// calling module imports the tier's exact i32 sums `sum4x2` and `sum4x2_small` of
/// `legacy_avx2` (each i32 lane: the u8 × i8 products of its 4-byte group in both operand
/// pairs).
macro_rules! kernels {
    ($feat:tt) => {
        /// One format's unpacking, as a type so that each kernel is monomorphized.
        trait Kernel {
            /// Code bytes per 32-value block.
            const BLOCK_BYTES: usize;
            /// Scale bytes per eight 32-value blocks (a chunk).
            const CHUNK_SCALE_BYTES: usize;
            /// Plane-1 bytes per 32-value block.
            const HI_BYTES: usize;
            /// Unpacked weight codes of a block pair.
            type W: Copy;
            /// The codes of blocks b, b+1 (b even), in the arranged order.
            ///
            /// # Safety
            /// AVX2 available; blocks b, b+1 lie in the code row at `w` and plane-1 row at `h`.
            unsafe fn unpack(w: *const u8, h: *const u8, b: usize) -> Self::W;
            /// The pair's partial sums against the arranged activations `x` (lanes 0..4 block b,
            /// 4..8 block b+1, before the offset).
            ///
            /// # Safety
            /// AVX2 available.
            unsafe fn dot(q: &Self::W, x: &Halves) -> __m256i;
            /// Codes are read unsigned as code + 2^OFFSET_LOG2 (T = raw − 2^OFFSET_LOG2·Σx), or
            /// signed when `None`.
            const OFFSET_LOG2: Option<i32>;
            /// The scales of the chunk's blocks `b + P[i]` (b a multiple of 8); by default those
            /// of a 64-value group format ([`g64_scales`]).
            ///
            /// # Safety
            /// AVX2 available; the chunk's groups lie in the scale row at `s`.
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn scales(s: *const u8, b: usize) -> __m256 {
                // SAFETY: the caller's contract.
                unsafe { g64_scales(s, b) }
            }
        }

        /// Activation codes of a pair in the arranged order.
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

        /// q4_g64_fp16: 16 bytes per block, one scale per two blocks.
        struct Q4;
        impl Kernel for Q4 {
            const BLOCK_BYTES: usize = 16;
            const CHUNK_SCALE_BYTES: usize = 8;
            const HI_BYTES: usize = 0;
            const OFFSET_LOG2: Option<i32> = Some(3);
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, _h: *const u8, b: usize) -> Halves {
                // SAFETY: 32 code bytes of blocks b, b+1 (caller).
                let v = unsafe { _mm256_loadu_si256(w.add(16 * b).cast()) };
                // Two's-complement nibble n → unsigned n ^ 8 = code + 8 (both nibbles at once).
                let v = _mm256_xor_si256(v, _mm256_set1_epi8(0x88u8 as i8));
                let m = _mm256_set1_epi8(0x0F);
                Halves {
                    lo: _mm256_and_si256(v, m),
                    hi: _mm256_and_si256(_mm256_srli_epi16(v, 4), m),
                }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &Halves) -> __m256i {
                // SAFETY: AVX2 (caller).
                unsafe { udot(q, x) }
            }
        }

        /// Unsigned codes `q` (≤ 63) times the arranged activation codes, per block: lanes 0..4
        /// block b, 4..8 block b+1 (lo/hi bytes 0..16 are block b, 16..32 block b+1).
        ///
        /// # Safety
        /// AVX2 available.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn udot(q: &Halves, x: &Halves) -> __m256i {
            // AVX2's i16 bound: each pair ≤ 2·63·127 = 16002, the two added ≤ 32004 < 32767.
            sum4x2_small(q.lo, x.lo, q.hi, x.hi)
        }

        /// The scales of a chunk of a 64-value-group format, in lane order [`P`].
        ///
        /// # Safety
        /// AVX2 available; groups b/2 .. b/2 + 4 lie in the scale row at `s`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn g64_scales(s: *const u8, b: usize) -> __m256 {
            // SAFETY: the 4 scale words of groups b/2 .. b/2 + 4 (8 bytes at byte b).
            let f = unsafe { _mm_cvtph_ps(_mm_loadl_epi64(s.add(b).cast())) };
            // Lanes P = (0, 2, 4, 6, 1, 3, 5, 7) are groups (0, 1, 2, 3, 0, 1, 2, 3).
            _mm256_set_m128(f, f)
        }

        /// The 2-bit fields of a block pair's 16 bytes at `p` (4 fields per byte, element k at
        /// bits 2(k mod 4) of byte k/4), as [even elements, odd elements] in the arranged order
        /// (lane 0 block b, lane 1 block b+1), each byte in 0..4.
        ///
        /// # Safety
        /// AVX2 available; 16 bytes at `p`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fields2(p: *const u8) -> Halves {
            // SAFETY: the caller's contract.
            let v = unsafe { _mm_loadu_si128(p.cast()) };
            let m = _mm_set1_epi8(0x0F);
            let (l, h) = (_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m));
            // Nibble i of a block (nibble i mod 2 of byte i/2) holds elements 2i (bits 0..2)
            // and 2i + 1 (bits 2..4).
            let n = _mm256_set_m128i(_mm_unpackhi_epi8(l, h), _mm_unpacklo_epi8(l, h));
            let three = _mm256_set1_epi8(3);
            Halves {
                lo: _mm256_and_si256(n, three),
                hi: _mm256_and_si256(_mm256_srli_epi16(n, 2), three),
            }
        }

        /// q2_g64_fp16: 8 bytes per block, words u = code + 1 read as they are.
        struct Q2;
        impl Kernel for Q2 {
            const BLOCK_BYTES: usize = 8;
            const CHUNK_SCALE_BYTES: usize = 8;
            const HI_BYTES: usize = 0;
            const OFFSET_LOG2: Option<i32> = Some(0);
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, _h: *const u8, b: usize) -> Halves {
                // SAFETY: 16 code bytes of blocks b, b+1 (caller).
                unsafe { fields2(w.add(8 * b)) }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &Halves) -> __m256i {
                // SAFETY: AVX2 (caller).
                unsafe { udot(q, x) }
            }
        }

        /// t2_g128_fp16: 8 bytes per block, two's-complement words read as u = word ^ 2 = code + 2.
        struct T2;
        impl Kernel for T2 {
            const BLOCK_BYTES: usize = 8;
            const CHUNK_SCALE_BYTES: usize = 4;
            const HI_BYTES: usize = 0;
            const OFFSET_LOG2: Option<i32> = Some(1);
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, _h: *const u8, b: usize) -> Halves {
                // SAFETY: 16 code bytes of blocks b, b+1 (caller).
                let f = unsafe { fields2(w.add(8 * b)) };
                let two = _mm256_set1_epi8(2);
                Halves {
                    lo: _mm256_xor_si256(f.lo, two),
                    hi: _mm256_xor_si256(f.hi, two),
                }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &Halves) -> __m256i {
                // SAFETY: AVX2 (caller).
                unsafe { udot(q, x) }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn scales(s: *const u8, b: usize) -> __m256 {
                // SAFETY: the 2 scale words of groups b/4, b/4 + 1 (4 bytes at byte b/2).
                let f = unsafe {
                    _mm_cvtph_ps(_mm_cvtsi32_si128(
                        s.add(b / 2).cast::<i32>().read_unaligned(),
                    ))
                };
                // Lanes P = (0, 2, 4, 6, 1, 3, 5, 7) are groups (0, 0, 1, 1, 0, 0, 1, 1).
                let f = _mm_unpacklo_ps(f, f);
                _mm256_set_m128(f, f)
            }
        }

        /// q5_g64_fp16: 16 nibble bytes + 4 bit-4 bytes per block, read as u = code + 16.
        struct Q5;
        impl Kernel for Q5 {
            const BLOCK_BYTES: usize = 16;
            const CHUNK_SCALE_BYTES: usize = 8;
            const HI_BYTES: usize = 4;
            const OFFSET_LOG2: Option<i32> = Some(4);
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, h: *const u8, b: usize) -> Halves {
                // SAFETY: 32 code bytes and 8 plane-1 bytes of blocks b, b+1 (caller).
                let (v, bits) = unsafe {
                    (
                        _mm256_loadu_si256(w.add(16 * b).cast()),
                        h.add(4 * b).cast::<i64>().read_unaligned(),
                    )
                };
                let m = _mm256_set1_epi8(0x0F);
                // Byte i of lane 0 (1) takes bit byte i/4 (4 + i/4) of the pair: elements 2i and
                // 2i + 1 of block b (b+1) are its bits 2(i mod 4) and 2(i mod 4) + 1.
                let idx = _mm256_setr_epi8(
                    0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, //
                    4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7,
                );
                let sel = _mm256_shuffle_epi8(_mm256_set1_epi64x(bits), idx);
                let even = _mm256_setr_epi8(
                    1, 4, 16, 64, 1, 4, 16, 64, 1, 4, 16, 64, 1, 4, 16, 64, //
                    1, 4, 16, 64, 1, 4, 16, 64, 1, 4, 16, 64, 1, 4, 16, 64,
                );
                let odd = _mm256_slli_epi16(even, 1); // 2, 8, 32, 128: no byte overflows
                let set = |mask: __m256i| _mm256_cmpeq_epi8(_mm256_and_si256(sel, mask), mask);
                // u = nibble + 16·(1 − bit 4) = word ^ 16 = code + 16.
                let sixteen = _mm256_set1_epi8(16);
                Halves {
                    lo: _mm256_or_si256(
                        _mm256_and_si256(v, m),
                        _mm256_andnot_si256(set(even), sixteen),
                    ),
                    hi: _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16(v, 4), m),
                        _mm256_andnot_si256(set(odd), sixteen),
                    ),
                }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &Halves) -> __m256i {
                // SAFETY: AVX2 (caller).
                unsafe { udot(q, x) }
            }
        }

        /// q6_g64_fp16: 16 nibble bytes + 8 two-bit bytes per block, read as u = code + 32.
        struct Q6;
        impl Kernel for Q6 {
            const BLOCK_BYTES: usize = 16;
            const CHUNK_SCALE_BYTES: usize = 8;
            const HI_BYTES: usize = 8;
            const OFFSET_LOG2: Option<i32> = Some(5);
            type W = Halves;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, h: *const u8, b: usize) -> Halves {
                // SAFETY: 32 code bytes and 16 plane-1 bytes of blocks b, b+1 (caller).
                let (v, f) = unsafe {
                    (
                        _mm256_loadu_si256(w.add(16 * b).cast()),
                        fields2(h.add(8 * b)),
                    )
                };
                let m = _mm256_set1_epi8(0x0F);
                // u = nibble | (top ^ 2) << 4 = word ^ 32 = code + 32 (top ≤ 3: no byte overflows).
                let top =
                    |t: __m256i| _mm256_xor_si256(_mm256_slli_epi16(t, 4), _mm256_set1_epi8(0x20));
                Halves {
                    lo: _mm256_or_si256(_mm256_and_si256(v, m), top(f.lo)),
                    hi: _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m), top(f.hi)),
                }
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(q: &Halves, x: &Halves) -> __m256i {
                // SAFETY: AVX2 (caller).
                unsafe { udot(q, x) }
            }
        }

        /// q8_g32_fp16: 32 bytes per block, one scale per block.
        struct Q8;
        impl Kernel for Q8 {
            const BLOCK_BYTES: usize = 32;
            const CHUNK_SCALE_BYTES: usize = 16;
            const HI_BYTES: usize = 0;
            const OFFSET_LOG2: Option<i32> = None;
            /// The codes and their magnitudes (|q| as u8: −128 reads as 128).
            type W = [Halves; 2];
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn unpack(w: *const u8, _h: *const u8, b: usize) -> [Halves; 2] {
                // SAFETY: 64 code bytes of blocks b, b+1 (caller).
                let q = unsafe {
                    let (a, c) = (w.add(32 * b), w.add(32 * b + 32));
                    Halves {
                        lo: _mm256_loadu2_m128i(c.cast(), a.cast()),
                        hi: _mm256_loadu2_m128i(c.add(16).cast(), a.add(16).cast()),
                    }
                };
                let a = Halves {
                    lo: _mm256_sign_epi8(q.lo, q.lo),
                    hi: _mm256_sign_epi8(q.hi, q.hi),
                };
                [q, a]
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn dot(w: &[Halves; 2], x: &Halves) -> __m256i {
                let [q, a] = w;
                // |q| times x·sign q (|x| ≤ 127: the sign transfer never overflows).
                let (slo, shi) = (_mm256_sign_epi8(x.lo, q.lo), _mm256_sign_epi8(x.hi, q.hi));
                sum4x2(a.lo, slo, a.hi, shi)
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn scales(s: *const u8, b: usize) -> __m256 {
                // SAFETY: the 8 scale words of blocks b .. b + 8 (caller).
                let v = unsafe { _mm_loadu_si128(s.add(2 * b).cast()) };
                // Words (0, 2, 4, 6, 1, 3, 5, 7): lane order P.
                let p = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
                _mm256_cvtph_ps(_mm_shuffle_epi8(v, p))
            }
        }

        /// # Safety
        /// AVX2, FMA and F16C available.
        #[target_feature(enable = $feat)]
        pub(in crate::linear::cpu) unsafe fn dot_row_group(
            kind: Grouped,
            ws: &[GRow<'_>],
            xs: &[Row<'_>],
            out: &mut [f32],
        ) {
            // SAFETY (all): the caller's contract.
            unsafe {
                match kind {
                    Grouped::Q4 => group::<Q4>(kind, ws, xs, out),
                    Grouped::Q8 => group::<Q8>(kind, ws, xs, out),
                    Grouped::Q5 => group::<Q5>(kind, ws, xs, out),
                    Grouped::Q6 => group::<Q6>(kind, ws, xs, out),
                    Grouped::Q2 => group::<Q2>(kind, ws, xs, out),
                    Grouped::T2 => group::<T2>(kind, ws, xs, out),
                }
            }
        }

        /// # Safety
        /// As [`dot_row_group`].
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn group<K: Kernel>(
            kind: Grouped,
            ws: &[GRow<'_>],
            xs: &[Row<'_>],
            out: &mut [f32],
        ) {
            if xs.is_empty() {
                return;
            }
            // The bounds checks: every pointer read below stays inside these.
            check_rows(kind, ws, xs, K::BLOCK_BYTES, K::HI_BYTES, true);
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

        /// The chunk's eight exact block sums T (lane order [`P`]) of the unpacked pairs `q`
        /// (blocks b .. b + 8) against the arranged activation row at `xp` with block sums at `ps`.
        ///
        /// # Safety
        /// AVX2; blocks b .. b + 8 lie in the activation row.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn totals<K: Kernel>(
            q: &[K::W; 4],
            xp: *const i8,
            ps: *const i32,
            b: usize,
        ) -> __m256i {
            // SAFETY: the caller's contract.
            unsafe {
                let pair = |j: usize| K::dot(&q[j], &halves(xp, b + 2 * j));
                sums::<K>([pair(0), pair(1), pair(2), pair(3)], ps, b)
            }
        }

        /// The chunk's eight exact block sums T (lane order [`P`]) from its four pairs' partial
        /// sums `p` ([`Kernel::dot`]): three `vphaddd`, less the offset 2^e·Σx of unsigned codes.
        ///
        /// # Safety
        /// AVX2; the sums of blocks b .. b + 8 lie at `ps`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn sums<K: Kernel>(p: [__m256i; 4], ps: *const i32, b: usize) -> __m256i {
            let raw =
                _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
            // SAFETY: the caller's contract.
            unsafe {
                match K::OFFSET_LOG2 {
                    Some(e) => {
                        let perm = _mm256_loadu_si256(P.as_ptr().cast());
                        let s =
                            _mm256_permutevar8x32_epi32(_mm256_loadu_si256(ps.add(b).cast()), perm);
                        // Exact: |2^e·Σx| ≤ 32·32·127.
                        _mm256_sub_epi32(raw, _mm256_sll_epi32(s, _mm_cvtsi32_si128(e)))
                    }
                    None => raw,
                }
            }
        }

        /// One weight row against C activation rows, into `res[..C]`.
        ///
        /// # Safety
        /// As [`rows`], for every row of `xs`.
        #[inline(never)]
        #[target_feature(enable = $feat)]
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
                let perm = _mm256_loadu_si256(P.as_ptr().cast());
                let mut acc = [_mm256_setzero_ps(); C];
                let mut b = 0;
                while b < whole {
                    let dw = K::scales(sp, b);
                    let q: [K::W; 4] = std::array::from_fn(|j| K::unpack(wp, hp, b + 2 * j));
                    for c in 0..C {
                        let t = totals::<K>(&q, xs[c].pairs.as_ptr(), xs[c].sum.as_ptr(), b);
                        let dx = _mm256_permutevar8x32_ps(
                            _mm256_loadu_ps(xs[c].d.as_ptr().add(b)),
                            perm,
                        );
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
        /// AVX2, FMA and F16C available; every `ws[i]` holds the codes and scales of `x`'s
        /// blocks, `x` holds 32 codes (arranged), a scale and a sum per block.
        #[inline(never)]
        #[target_feature(enable = $feat)]
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
            let (pd, ps, xp) = (x.d.as_ptr(), x.sum.as_ptr(), x.pairs.as_ptr());
            // SAFETY (all loads): chunks b .. b + 8 ≤ nb lie in every row (the caller's checks).
            unsafe {
                let perm = _mm256_loadu_si256(P.as_ptr().cast());
                let mut acc = [_mm256_setzero_ps(); R];
                let mut b = 0;
                while b < whole {
                    let dx = _mm256_permutevar8x32_ps(_mm256_loadu_ps(pd.add(b)), perm);
                    let (x0, x1, x2, x3) = (
                        halves(xp, b),
                        halves(xp, b + 2),
                        halves(xp, b + 4),
                        halves(xp, b + 6),
                    );
                    for i in 0..R {
                        let w = wp[i];
                        prefetch_next::<R>(
                            &ws[i],
                            ws[0],
                            b,
                            K::BLOCK_BYTES,
                            K::HI_BYTES,
                            K::CHUNK_SCALE_BYTES,
                        );
                        let pair =
                            |j: usize, x: &Halves| K::dot(&K::unpack(w, hp[i], b + 2 * j), x);
                        let p = [pair(0, &x0), pair(1, &x1), pair(2, &x2), pair(3, &x3)];
                        let t = sums::<K>(p, ps, b);
                        let d = _mm256_mul_ps(K::scales(sp[i], b), dx);
                        acc[i] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(t), acc[i]);
                    }
                    b += 8;
                }
                for i in 0..R {
                    res[i] = finish_unpermuted(acc[i], whole < nb, |a| {
                        blocks_scalar(kind, &ws[i], x, whole, nb, a)
                    });
                }
            }
        }
    };
}

/// The AVX2 tier: `vpmaddubsw` (i16 pair sums) widened by `vpmaddwd`.
pub(super) mod avx2 {
    use super::*;
    use crate::linear::cpu::legacy_avx2::avx2::{sum4x2, sum4x2_small};
    kernels!("avx2,fma,f16c");
}

/// The AVX-VNNI tier: 256-bit VEX `vpdpbusd`, the AVX2 tier's lanes.
pub(super) mod avxvnni {
    use super::*;
    use crate::linear::cpu::legacy_avx2::avxvnni::{sum4x2, sum4x2_small};
    kernels!("avx2,fma,f16c,avxvnni");
}
