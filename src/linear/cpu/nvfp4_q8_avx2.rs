//! The x86 kernel of nvfp4 against q8_1 activations, in exactly the order of
//! [`super::nvfp4_q8`]'s module docs: one source ([`kernels!`]) compiled once per tier —
//! [`avx2`] (AVX2 + FMA + F16C: `vpmaddubsw` + `vpmaddwd`), [`avxvnni`] (256-bit
//! `vpdpbusd`, no i16 step) and [`avx512`] (a whole chunk per 512-bit `vpdpbusd`, its own
//! chunk sums, below; compiled a second time with GFNI and VBMI for their unpacking,
//! [`avx512::gfni`]) — the same exact block sums, then the same f32 operations on each
//! block: the same bits on every tier. The 256-bit tiers share their chunk sums
//! ([`chunk256!`]), described here:
//!
//! A chunk is 128 values: 8 nvfp4 blocks (64 code bytes, 8 scale words) against 4 q8_1
//! blocks. The activation codes of each 64-value pair of q8_1 blocks are rearranged once per
//! forward as [even elements, odd elements] ([`arrange`]), the order of the low and high
//! nibbles of 32 code bytes. One `vpshufb` turns each nibble into `u = 2·e2m1 + 12`
//! (0 ..= 24, unsigned); `vpmaddubsw(u, q)` pairs are ≤ 2·24·127 = 6096 in i16, the low- and
//! high-nibble vectors added ≤ 12192 < 32767 (q8_1 codes are in [−127, 127], never −128),
//! then `vpmaddwd` by 1 widens to i32: lanes 2i, 2i+1 of a 32-byte step hold block i of the
//! step. One `vphaddd` of the chunk's two steps gives the eight raw block sums in lane order
//! [`Q`] = blocks (0, 1, 4, 5, 2, 3, 6, 7); `S_b = raw_b − 12·Σq_b` with the activation's
//! exact 16-value code sums (`Rows::sum16`), exact. The chunk's 8 scale words are read in
//! place (4 contiguous words in each of two 128×4 tiles of the swizzled plane), interleaved
//! into the same order and placed into binary16 (`word << 7` = sf/256 for a valid word,
//! exact), converted by F16C, times `128·dx` (exact): `C_b` of the reference. One
//! `vcvtdq2ps` and one fma serve the eight blocks; lane i of the accumulator is reference
//! lane `Q[i]`, put back in order at the end. Blocks past the last whole chunk run the
//! scalar reference step, and the division by d_w follows the lane tree as in the
//! reference.
//!
//! Whether a row is fast is decided on the way (no separate pass over its scales): a
//! byte-wise running maximum of the words of the row group ([`fast_given_max`]: with
//! 2688·2⁻¹²⁷ ≤ d_w ≤ 2¹¹⁶ every valid row is fast, so only the largest word matters; other
//! divisors, or an invalid word in the group, scan the row's own words). A row found not
//! fast at the end (rare) discards its sums and runs the scalar exact-weight order
//! instead, as the reference does.
//!
//! Pass shapes (those of `grouped_q8_avx2`): with one activation row, up to four weight rows
//! share each activation load (with a software prefetch of the next row group's codes and
//! scale lines; on the AVX-512 tier four consecutive rows of one 32-row stripe of the
//! swizzled plane, whose words lie 16 bytes apart, read and convert their scale words
//! together: two masked loads, one `vpermt2d` and two 16-value conversions per chunk in
//! place of four of each, 1.15× at M = 1 on an Intel Xeon; and there two chunks per step,
//! `avx512::rows_paired`: one reduction, conversion and scale product for sixteen blocks,
//! then the two fmas of each lane in block order, 1.03–1.05×);
//! with several, one weight row is unpacked once per chunk for up to four activation rows.

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::finish_lanes;
use super::grouped_q8_avx2::NIBBLES;
use super::nvfp4_q8::{NRow, blocks_scalar, exact_weights, fast_given_max, scales_span};
use crate::layouts::block_scale::TILE_BYTES;
use crate::linear::q8_1::{Row, Rows};
use std::arch::x86_64::*;

/// Lane i of a chunk's vectors holds block `Q[i]` of the chunk (what `vphaddd` leaves). `Q`
/// is its own inverse.
const Q: [i32; 8] = [0, 1, 4, 5, 2, 3, 6, 7];
/// The q8_1 block (of the chunk's four) of lane i: `Q[i] / 2`.
const QD: [i32; 8] = [0, 0, 2, 2, 1, 1, 3, 3];

/// The activation rows as this kernel reads them ([`Rows::arrange_pairs`]).
pub(super) fn arrange(mut rows: Rows) -> Rows {
    rows.arrange_pairs(&NIBBLES, false);
    rows
}

/// The 256-bit tiers' chunk: two 32-byte steps, one `vphaddd`, lane order [`Q`]; the
/// calling module imports the tier's `sum4x2_small`.
macro_rules! chunk256 {
    ($feat:tt) => {
        /// Lane i of a chunk's vectors holds block `ORDER[i]`.
        const ORDER: [i32; 8] = Q;
        /// The q8_1 block of lane i.
        const ORDER_D: [i32; 8] = QD;
        /// The activation codes and the unpacked weights of a chunk.
        type X = [__m256i; 4];
        type W = [__m256i; 4];

        /// `u = 2·e2m1(c) + 12` for every code word c, in both 128-bit lanes.
        #[inline]
        #[target_feature(enable = $feat)]
        fn table() -> __m256i {
            _mm256_setr_epi8(
                12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0, //
                12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,
            )
        }

        /// The unsigned weights of the 64 values at code byte `p` (32 bytes): [low nibbles = even
        /// elements, high nibbles = odd elements].
        ///
        /// # Safety
        /// AVX2 available; 32 bytes at `p`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn unpack(p: *const u8, table: __m256i) -> [__m256i; 2] {
            // SAFETY: the caller's contract.
            let v = unsafe { _mm256_loadu_si256(p.cast()) };
            let m = _mm256_set1_epi8(0x0F);
            let lo = _mm256_and_si256(v, m);
            let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
            [
                _mm256_shuffle_epi8(table, lo),
                _mm256_shuffle_epi8(table, hi),
            ]
        }

        /// The arranged activation codes of a chunk (128 values at `xp`).
        ///
        /// # Safety
        /// AVX2 available; 128 bytes at `xp`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn xcodes(xp: *const i8) -> [__m256i; 4] {
            // SAFETY: the caller's contract.
            unsafe { std::array::from_fn(|i| _mm256_loadu_si256(xp.add(32 * i).cast())) }
        }

        /// The chunk's eight raw block sums Σu·q in lane order [`Q`].
        #[inline]
        #[target_feature(enable = $feat)]
        fn raw(u: &[__m256i; 4], x: &[__m256i; 4]) -> __m256i {
            // AVX2's i16 bound: each pair ≤ 2·24·127 = 6096, the two added ≤ 12192 < 32767.
            let step = |j: usize| sum4x2_small(u[2 * j], x[2 * j], u[2 * j + 1], x[2 * j + 1]);
            _mm256_hadd_epi32(step(0), step(1))
        }

        /// The unsigned weights of a chunk (64 code bytes at `p`).
        ///
        /// # Safety
        /// AVX2 available; 64 bytes at `p`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn unpack_chunk(p: *const u8, table: __m256i) -> W {
            // SAFETY: the caller's contract.
            let ([u0, u1], [u2, u3]) = unsafe { (unpack(p, table), unpack(p.add(32), table)) };
            [u0, u1, u2, u3]
        }

        /// The 8 scale words of the chunk at block b (a multiple of 8) of the row whose first word
        /// is at `p` (4 contiguous words in tile b/4 and 4 in the next), in lane order [`Q`]: the
        /// 16-bit interleave of the two tiles' words gives blocks (0, 1, 4, 5, 2, 3, 6, 7). The
        /// high 8 bytes are 0.
        ///
        /// # Safety
        /// AVX2 available; tiles b/4 and b/4 + 1 lie in the row's scale span.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn words(p: *const u8, b: usize) -> __m128i {
            // SAFETY: the caller's contract.
            unsafe {
                let t = p.add(b / 4 * TILE_BYTES);
                let lo = t.cast::<i32>().read_unaligned();
                let hi = t.add(TILE_BYTES).cast::<i32>().read_unaligned();
                _mm_unpacklo_epi16(_mm_cvtsi32_si128(lo), _mm_cvtsi32_si128(hi))
            }
        }

        /// Whether the tier reads four rows' scale words at once ([`scales4`]): not these.
        const QUAD: bool = false;

        /// Not on these tiers ([`QUAD`]).
        ///
        /// # Safety
        /// Never called.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn scales4(_p: *const u8, _b: usize, _max: &mut __m128i) -> [__m256; 4] {
            unreachable!("the 256-bit tiers read each row's scale words")
        }
    };
}

/// Whether the four rows `ws` form a quad: scale words 16 bytes apart (four consecutive
/// rows of one 32-row stripe of the swizzled plane), row 0's slice reaching row 3's last
/// word, so that a tier may read their words at once through row 0's pointer.
fn quad(ws: &[NRow<'_>], nb: usize) -> bool {
    let p = ws[0].scales.as_ptr();
    ws.len() == 4
        && (1..4).all(|i| ws[i].scales.as_ptr() == p.wrapping_add(16 * i))
        && ws[0].scales.len() >= scales_span(nb) + 48
}

/// The kernels of one tier, compiled for its features `$feat` (a string literal); the
/// calling module imports the tier's exact i32 sums `sum4x2_small` of `legacy_avx2` (each
/// i32 lane: the u8 × i8 products of its 4-byte group in both operand pairs).
macro_rules! kernels {
    ($feat:tt) => {
        kernels!($feat, rows);
    };
    ($feat:tt, $rows:ident) => {
        /// An activation row's factors for the chunk at block b (lane order `ORDER`): `128·dx` of each
        /// lane's q8_1 block and `12·Σq` of each lane's 16 codes.
        ///
        /// # Safety
        /// AVX2 available; q8_1 blocks b/2 .. b/2 + 4 lie in `x`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn xfactors(x: &Row<'_>, b: usize) -> (__m256, __m256i) {
            // SAFETY: the caller's contract.
            unsafe {
                let d = _mm256_castps128_ps256(_mm_loadu_ps(x.d.as_ptr().add(b / 2)));
                let d = _mm256_permutevar8x32_ps(d, _mm256_loadu_si256(ORDER_D.as_ptr().cast()));
                // Exact: dx is a binary16 value, 128·dx < 2²⁴.
                let d = _mm256_mul_ps(d, _mm256_set1_ps(128.0));
                let s = _mm256_cvtepi16_epi32(_mm_loadu_si128(x.sum16.as_ptr().add(b).cast()));
                let s = _mm256_permutevar8x32_epi32(s, _mm256_loadu_si256(ORDER.as_ptr().cast()));
                // Exact: |12·Σq| ≤ 12·16·127.
                (d, _mm256_mullo_epi32(s, _mm256_set1_epi32(12)))
            }
        }

        /// The chunk's scales `sf/256` (lane order `ORDER`) from its words in that order
        /// ([`words`]): a valid E4M3FN word shifted left by 7 is the binary16 of its value / 256
        /// (the exponent biases differ by 8; subnormals alike).
        #[inline]
        #[target_feature(enable = $feat)]
        fn scales(w: __m128i) -> __m256 {
            _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(w), 7))
        }

        /// The largest byte of `max` and of the words of blocks `whole .. nb` of every row of `ws`.
        #[inline]
        #[target_feature(enable = $feat)]
        fn largest(max: __m128i, ws: &[NRow<'_>], whole: usize, nb: usize) -> u8 {
            let mut a = [0u8; 16];
            // SAFETY: 16 bytes into `a`.
            unsafe { _mm_storeu_si128(a.as_mut_ptr().cast(), max) };
            let mut m = a.iter().copied().max().unwrap_or(0);
            for w in ws {
                for b in whole..nb {
                    m = m.max(w.word(b));
                }
            }
            m
        }

        /// # Safety
        /// The features this instance is compiled for (`$feat`) available; the activation
        /// rows' `pairs` are arranged ([`arrange`]). (Lengths are checked here.)
        #[target_feature(enable = $feat)]
        pub(in crate::linear::cpu) unsafe fn dot_row_group(
            ws: &[NRow<'_>],
            xs: &[Row<'_>],
            out: &mut [f32],
        ) {
            let Some(first) = xs.first() else {
                return;
            };
            // The bounds checks: every pointer read below stays inside these.
            let nb = 2 * first.d.len();
            let whole = nb / 8 * 8;
            for x in xs {
                assert!(2 * x.d.len() == nb && x.qs.len() >= 16 * nb && x.sum16.len() >= nb);
                assert!(x.pairs.len() >= 16 * whole);
            }
            let span = scales_span(nb);
            assert!(
                ws.iter()
                    .all(|w| w.codes.len() >= 8 * nb && w.scales.len() >= span)
            );
            passes!(
                ws,
                xs,
                out,
                res,
                // SAFETY: the features (caller); bounds just checked.
                rows | R,
                wr,
                x0 | unsafe { $rows::<R>(wr, x0, &mut res) },
                // SAFETY: as above.
                tile | C,
                w,
                x | unsafe { tile::<C>(w, x, &mut res) },
            );
        }

        /// The reference lanes of `acc` (lane order `ORDER`), the scalar tail blocks `whole .. nb`,
        /// the lane tree and the division by d_w.
        #[inline]
        #[target_feature(enable = $feat)]
        fn finish(acc: __m256, w: &NRow<'_>, x: &Row<'_>, whole: usize, nb: usize) -> f32 {
            // SAFETY: `ORDER` holds 8 i32.
            let q = unsafe { _mm256_loadu_si256(ORDER.as_ptr().cast()) };
            // ORDER is its own inverse.
            let acc = _mm256_permutevar8x32_ps(acc, q);
            finish_lanes(acc, whole < nb, |a| blocks_scalar(w, x, whole, nb, a)) / w.d
        }

        /// The R rows' outputs from their accumulators `acc` and the running maximum `max` of
        /// their scale words: [`finish`] for the rows found fast ([`fast_given_max`]), the
        /// exact-weight order for the others.
        #[inline]
        #[target_feature(enable = $feat)]
        fn results<const R: usize>(
            acc: &[__m256; R],
            max: __m128i,
            ws: &[NRow<'_>],
            x: &Row<'_>,
            res: &mut [f32; 4],
        ) {
            let nb = 2 * x.d.len();
            let whole = nb / 8 * 8;
            let gmax = largest(max, ws, whole, nb);
            for (i, w) in ws.iter().enumerate() {
                res[i] = if fast_given_max(w, gmax, nb) {
                    finish(acc[i], w, x, whole, nb)
                } else {
                    exact_weights(w, x)
                };
            }
        }

        /// One weight row against C activation rows, into `res[..C]`.
        ///
        /// # Safety
        /// As [`dot_row_group`] (bounds checked there).
        #[inline(never)]
        #[target_feature(enable = $feat)]
        unsafe fn tile<const C: usize>(w: &NRow<'_>, xs: &[Row<'_>], res: &mut [f32; 4]) {
            let nb = 2 * xs[0].d.len();
            let whole = nb / 8 * 8;
            let (wp, sp) = (w.codes.as_ptr(), w.scales.as_ptr());
            let t = table();
            // SAFETY (all loads): chunks b .. b + 8 ≤ nb lie in the weight row and every
            // activation row (the caller's checks).
            unsafe {
                let mut acc = [_mm256_setzero_ps(); C];
                let mut max = _mm_setzero_si128();
                let mut b = 0;
                while b < whole {
                    let u = unpack_chunk(wp.add(8 * b), t);
                    let ws = words(sp, b);
                    max = _mm_max_epu8(max, ws);
                    let sf = scales(ws);
                    for c in 0..C {
                        let x = xcodes(xs[c].pairs.as_ptr().add(16 * b));
                        let (dx, off) = xfactors(&xs[c], b);
                        let s = _mm256_sub_epi32(raw(&u, &x), off);
                        acc[c] =
                            _mm256_fmadd_ps(_mm256_mul_ps(sf, dx), _mm256_cvtepi32_ps(s), acc[c]);
                    }
                    b += 8;
                }
                let fast = fast_given_max(w, largest(max, std::slice::from_ref(w), whole, nb), nb);
                for c in 0..C {
                    res[c] = if fast {
                        finish(acc[c], w, &xs[c], whole, nb)
                    } else {
                        exact_weights(w, &xs[c])
                    };
                }
            }
        }

        /// R weight rows against one activation row, into `res[..R]`.
        ///
        /// Whether rows are fast is first asked of the whole group's largest scale word (one
        /// running maximum for all R rows; [`fast_given_max`]).
        ///
        /// # Safety
        /// As [`dot_row_group`] (bounds checked there).
        #[inline(never)]
        #[target_feature(enable = $feat)]
        unsafe fn rows<const R: usize>(ws: &[NRow<'_>], x: &Row<'_>, res: &mut [f32; 4]) {
            let nb = 2 * x.d.len();
            let whole = nb / 8 * 8;
            let wp: [*const u8; R] = std::array::from_fn(|i| ws[i].codes.as_ptr());
            let sp: [*const u8; R] = std::array::from_fn(|i| ws[i].scales.as_ptr());
            // Rows are consecutive in the code plane: the next group's row i is R rows ahead.
            let pf_dist = R * ws[0].codes.len();
            let xp = x.pairs.as_ptr();
            let t = table();
            // A quad's scale words may be read at once, through row 0's pointer.
            let quad = QUAD && quad(ws, nb);
            // SAFETY (all loads): chunks b .. b + 8 ≤ nb lie in every row (the caller's checks).
            unsafe {
                let mut acc = [_mm256_setzero_ps(); R];
                let mut max = _mm_setzero_si128();
                // One chunk of row i: its sums against the activation codes `xv`, times `sf·dx`.
                let chunk = |i: usize, b: usize, xv: &X, off: __m256i| {
                    let w = wp[i].add(8 * b);
                    // The same chunk of the next group's row i (one cache line): each row is only
                    // a few KiB, too short for the hardware prefetcher to follow four.
                    _mm_prefetch::<_MM_HINT_T1>(w.wrapping_add(pf_dist).cast());
                    _mm256_cvtepi32_ps(_mm256_sub_epi32(raw(&unpack_chunk(w, t), xv), off))
                };
                let mut b = 0;
                while b < whole {
                    let xv = xcodes(xp.add(16 * b));
                    let (dx, off) = xfactors(x, b);
                    // The next row group's scale words of this chunk: the next 64 bytes of both
                    // tiles (rows 16 bytes apart; at a 32-row boundary they are the tiles' first
                    // line, read 8 groups earlier).
                    let tile = sp[0].wrapping_add(b / 4 * TILE_BYTES + 64);
                    _mm_prefetch::<_MM_HINT_T1>(tile.cast());
                    _mm_prefetch::<_MM_HINT_T1>(tile.wrapping_add(TILE_BYTES).cast());
                    if quad {
                        let sf = scales4(sp[0], b, &mut max);
                        for i in 0..R {
                            let s = chunk(i, b, &xv, off);
                            acc[i] = _mm256_fmadd_ps(_mm256_mul_ps(sf[i], dx), s, acc[i]);
                        }
                    } else {
                        for i in 0..R {
                            let wd = words(sp[i], b);
                            max = _mm_max_epu8(max, wd);
                            let s = chunk(i, b, &xv, off);
                            acc[i] = _mm256_fmadd_ps(_mm256_mul_ps(scales(wd), dx), s, acc[i]);
                        }
                    }
                    b += 8;
                }
                results(&acc, max, &ws[..R], x, res);
            }
        }
    };
}

/// The AVX2 tier: `vpmaddubsw` (i16 pair sums) widened by `vpmaddwd`.
pub(super) mod avx2 {
    use super::*;
    use crate::linear::cpu::legacy_avx2::avx2::sum4x2_small;
    chunk256!("avx2,fma,f16c");
    kernels!("avx2,fma,f16c");
}

/// The AVX-512 tier: a whole chunk per 512-bit vector, two `vpdpbusd`, lanes in block
/// order. Its activation codes are arranged per 128 values (a chunk) as [64 even elements,
/// 64 odd elements], the order of the low and high nibbles of the chunk's 64 code bytes;
/// i32 lane l of the products then sums elements 8l .. 8l + 8, so lanes 2j, 2j + 1 are
/// block j's, and one shift, add and `vpmovqd` leave the eight raw block sums in block
/// order (the scale words are read in that order too, and no lane is permuted back).
pub(super) mod avx512 {
    use super::*;

    /// Lane i of a chunk's vectors holds block i.
    const ORDER: [i32; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
    /// The q8_1 block of lane i.
    const ORDER_D: [i32; 8] = [0, 0, 1, 1, 2, 2, 3, 3];
    /// The activation codes and the unpacked weights of a chunk.
    type X = [__m512i; 2];
    type W = [__m512i; 2];

    /// This tier's arrangement of a chunk's 128 activation codes: `pairs[64h + p]` = element
    /// 2p + h.
    const EVEN_ODD: [u8; 128] = {
        let mut p = [0u8; 128];
        let mut j = 0;
        while j < 128 {
            p[j] = (2 * (j % 64) + j / 64) as u8;
            j += 1;
        }
        p
    };

    /// The activation rows as this tier's kernel reads them ([`Rows::arrange_pairs`]).
    pub(in crate::linear::cpu) fn arrange(mut rows: Rows) -> Rows {
        rows.arrange_pairs(&EVEN_ODD, false);
        rows
    }

    /// `u = 2·e2m1(c) + 12` for every code word c, in every 128-bit lane.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    fn table() -> __m512i {
        _mm512_broadcast_i32x4(_mm_setr_epi8(
            12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,
        ))
    }

    /// The unsigned weights of a chunk (64 code bytes at `p`): [low nibbles = even
    /// elements, high nibbles = odd elements].
    ///
    /// # Safety
    /// The features of this tier; 64 bytes at `p`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn unpack_chunk(p: *const u8, table: __m512i) -> W {
        // SAFETY: the caller's contract.
        let v = unsafe { _mm512_loadu_si512(p.cast()) };
        let m = _mm512_set1_epi8(0x0F);
        [
            _mm512_shuffle_epi8(table, _mm512_and_si512(v, m)),
            _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16::<4>(v), m)),
        ]
    }

    /// The arranged activation codes of a chunk (128 values at `xp`).
    ///
    /// # Safety
    /// The features of this tier; 128 bytes at `xp`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn xcodes(xp: *const i8) -> X {
        // SAFETY: the caller's contract.
        unsafe {
            [
                _mm512_loadu_si512(xp.cast()),
                _mm512_loadu_si512(xp.add(64).cast()),
            ]
        }
    }

    /// The chunk's eight raw block sums Σu·q in block order (each lane ≤ 8·24·127).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    fn raw(u: &W, x: &X) -> __m256i {
        let z = _mm512_setzero_si512();
        let z = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, u[0], x[0]), u[1], x[1]);
        _mm512_cvtepi64_epi32(_mm512_add_epi32(z, _mm512_srli_epi64::<32>(z)))
    }

    /// The 8 scale words of the chunk at block b (a multiple of 8) of the row whose first
    /// word is at `p` (4 contiguous words in tile b/4, blocks b .. b + 4, and 4 in the next),
    /// in block order. The high 8 bytes are 0.
    ///
    /// # Safety
    /// The features of this tier; tiles b/4 and b/4 + 1 lie in the row's scale span.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn words(p: *const u8, b: usize) -> __m128i {
        // SAFETY: the caller's contract.
        unsafe {
            let t = p.add(b / 4 * TILE_BYTES);
            let lo = t.cast::<i32>().read_unaligned();
            let hi = t.add(TILE_BYTES).cast::<i32>().read_unaligned();
            _mm_unpacklo_epi32(_mm_cvtsi32_si128(lo), _mm_cvtsi32_si128(hi))
        }
    }

    /// Whether the tier reads four rows' scale words at once ([`scales4`]).
    const QUAD: bool = true;

    /// The chunk's scales (as [`scales`], block order) of four rows whose first words lie at
    /// `p`, `p + 16`, `p + 32` and `p + 48`, by two masked loads (the four rows' words of
    /// each tile), one `vpermt2d` into row order and two 16-value conversions; `max` takes
    /// their largest bytes.
    ///
    /// # Safety
    /// The features of this tier; tiles b/4 and b/4 + 1 lie in the scale span of each of the
    /// four rows, and the slice at `p` reaches the last of those words (row 3's, 48 bytes
    /// past row 0's).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales4(p: *const u8, b: usize, max: &mut __m128i) -> [__m256; 4] {
        // SAFETY: the caller's contract; the masked loads read only dwords 0, 4, 8 and 12
        // (the rows' words).
        let (lo, hi) = unsafe {
            let t = p.add(b / 4 * TILE_BYTES);
            (
                _mm512_maskz_loadu_epi32(0x1111, t.cast()),
                _mm512_maskz_loadu_epi32(0x1111, t.add(TILE_BYTES).cast()),
            )
        };
        // Row i's words of blocks b .. b + 4 (lo, dword 4i) and b + 4 .. b + 8 (hi) to
        // dwords 2i, 2i + 1.
        let idx = _mm512_setr_epi32(0, 16, 4, 20, 8, 24, 12, 28, 0, 0, 0, 0, 0, 0, 0, 0);
        let w = _mm512_castsi512_si256(_mm512_permutex2var_epi32(lo, idx, hi));
        let m = _mm_max_epu8(_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w));
        *max = _mm_max_epu8(*max, m);
        let h = _mm512_slli_epi16::<7>(_mm512_cvtepu8_epi16(w));
        let a = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
        let c = _mm512_cvtph_ps(_mm512_extracti64x4_epi64::<1>(h));
        let high = |v: __m512| _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
        [
            _mm512_castps512_ps256(a),
            high(a),
            _mm512_castps512_ps256(c),
            high(c),
        ]
    }

    /// [`xfactors`] of the two chunks at blocks b and b + 8: lanes 0..8 the first chunk's,
    /// 8..16 the second's.
    ///
    /// # Safety
    /// The features of this tier; q8_1 blocks b/2 .. b/2 + 8 lie in `x`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn xfactors2(x: &Row<'_>, b: usize) -> (__m512, __m512i) {
        // SAFETY: the caller's contract.
        unsafe {
            let d = _mm512_castps256_ps512(_mm256_loadu_ps(x.d.as_ptr().add(b / 2)));
            let idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
            // Exact: dx is a binary16 value, 128·dx < 2²⁴.
            let d = _mm512_mul_ps(_mm512_permutexvar_ps(idx, d), _mm512_set1_ps(128.0));
            let s = _mm512_cvtepi16_epi32(_mm256_loadu_si256(x.sum16.as_ptr().add(b).cast()));
            // Exact: |12·Σq| ≤ 12·16·127.
            (d, _mm512_mullo_epi32(s, _mm512_set1_epi32(12)))
        }
    }

    /// [`raw`] of two chunks: lanes 0..8 the first chunk's eight raw block sums, 8..16 the
    /// second's (each block's two i32 lanes gathered by two `vpermt2d` and added).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    fn raw2(u: &[W; 2], x: &[X; 2]) -> __m512i {
        let z = |c: usize| {
            let z = _mm512_setzero_si512();
            _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, u[c][0], x[c][0]), u[c][1], x[c][1])
        };
        crate::linear::cpu::pair_sums(z(0), z(1))
    }

    /// The scales of the two chunks at blocks b and b + 8 (as [`scales4`]) of four rows whose
    /// first words lie at `p`, `p + 16`, `p + 32` and `p + 48`: row i's 16 words gathered
    /// into dwords 4i .. 4i + 4 by four masked loads (one per tile: the rows' words lie in
    /// its dwords 0, 4, 8 and 12), then converted 16 at a time; `max` takes their largest
    /// bytes.
    ///
    /// # Safety
    /// The features of this tier; tiles b/4 .. b/4 + 4 lie in the scale span of each of the
    /// four rows, and the slice at `p` reaches the last of those words (row 3's, 48 bytes
    /// past row 0's).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn scales4x2(p: *const u8, b: usize, max: &mut __m512i) -> [__m512; 4] {
        let t = p.wrapping_add(b / 4 * TILE_BYTES);
        // Tile j's words to dwords 4i + j: loaded from 4j bytes before the tile, so that
        // only the enabled dwords 4i + j, the tile's dwords 4i, are read.
        let tile = |j: usize| {
            t.wrapping_add(j * TILE_BYTES)
                .wrapping_sub(4 * j)
                .cast::<i32>()
        };
        // SAFETY: the caller's contract; masked loads read only their enabled dwords.
        let w = unsafe {
            let w = _mm512_maskz_loadu_epi32(0x1111, tile(0));
            let w = _mm512_mask_loadu_epi32(w, 0x2222, tile(1));
            let w = _mm512_mask_loadu_epi32(w, 0x4444, tile(2));
            _mm512_mask_loadu_epi32(w, 0x8888, tile(3))
        };
        *max = _mm512_max_epu8(*max, w);
        let h = |v: __m256i| _mm512_slli_epi16::<7>(_mm512_cvtepu8_epi16(v));
        let (a, c) = (
            h(_mm512_castsi512_si256(w)),
            h(_mm512_extracti64x4_epi64::<1>(w)),
        );
        [
            _mm512_cvtph_ps(_mm512_castsi512_si256(a)),
            _mm512_cvtph_ps(_mm512_extracti64x4_epi64::<1>(a)),
            _mm512_cvtph_ps(_mm512_castsi512_si256(c)),
            _mm512_cvtph_ps(_mm512_extracti64x4_epi64::<1>(c)),
        ]
    }

    /// The quad pass of one activation row two chunks at a time, where that is possible.
    macro_rules! paired {
        ($feat:tt) => {
            /// [`rows`], with the four rows of a quad (scale words 16 bytes apart) taken two
            /// chunks per step: one reduction, one conversion and one product of the scales
            /// for sixteen blocks, then the same two fmas per lane in block order
            /// ([`fma2`](crate::linear::cpu::fma2)), so the same bits. Other row groups run
            /// [`rows`].
            ///
            /// # Safety
            /// As [`rows`].
            #[inline(never)]
            #[target_feature(enable = $feat)]
            unsafe fn rows_paired<const R: usize>(
                ws: &[NRow<'_>],
                x: &Row<'_>,
                res: &mut [f32; 4],
            ) {
                let nb = 2 * x.d.len();
                let whole = nb / 8 * 8;
                if !quad(ws, nb) || whole < 16 {
                    // SAFETY: the caller's contract.
                    return unsafe { rows::<R>(ws, x, res) };
                }
                let wp: [*const u8; R] = std::array::from_fn(|i| ws[i].codes.as_ptr());
                let sp = ws[0].scales.as_ptr();
                // Rows are consecutive in the code plane: the next group's row i is R rows
                // ahead.
                let pf_dist = R * ws[0].codes.len();
                let xp = x.pairs.as_ptr();
                let t = table();
                // SAFETY (all loads): chunks b .. b + 8 ≤ nb lie in every row (the caller's
                // checks).
                unsafe {
                    let mut acc = [_mm256_setzero_ps(); R];
                    let mut max = _mm512_setzero_si512();
                    let prefetch = |b: usize| {
                        // The next row group's scale words of this chunk (as in [`rows`]).
                        let tile = sp.wrapping_add(b / 4 * TILE_BYTES + 64);
                        _mm_prefetch::<_MM_HINT_T1>(tile.cast());
                        _mm_prefetch::<_MM_HINT_T1>(tile.wrapping_add(TILE_BYTES).cast());
                    };
                    let mut b = 0;
                    while b + 16 <= whole {
                        let xv = [xcodes(xp.add(16 * b)), xcodes(xp.add(16 * b + 128))];
                        let (dx, off) = xfactors2(x, b);
                        prefetch(b);
                        prefetch(b + 8);
                        let sf = scales4x2(sp, b, &mut max);
                        for i in 0..R {
                            let w = wp[i].add(8 * b);
                            _mm_prefetch::<_MM_HINT_T1>(w.wrapping_add(pf_dist).cast());
                            _mm_prefetch::<_MM_HINT_T1>(w.wrapping_add(pf_dist + 64).cast());
                            let u = [unpack_chunk(w, t), unpack_chunk(w.add(64), t)];
                            let s = _mm512_sub_epi32(raw2(&u, &xv), off);
                            acc[i] = crate::linear::cpu::fma2(_mm512_mul_ps(sf[i], dx), s, acc[i]);
                        }
                        b += 16;
                    }
                    // The largest bytes of the four 128-bit lanes.
                    let max = _mm512_max_epu8(max, _mm512_shuffle_i64x2::<0x4E>(max, max));
                    let max = _mm512_castsi512_si256(max);
                    let mut max = _mm_max_epu8(
                        _mm256_castsi256_si128(max),
                        _mm256_extracti128_si256::<1>(max),
                    );
                    if b < whole {
                        // The last whole chunk, as in [`rows`].
                        let xv = xcodes(xp.add(16 * b));
                        let (dx, off) = xfactors(x, b);
                        let sf = scales4(sp, b, &mut max);
                        for i in 0..R {
                            let u = unpack_chunk(wp[i].add(8 * b), t);
                            let s = _mm256_cvtepi32_ps(_mm256_sub_epi32(raw(&u, &xv), off));
                            acc[i] = _mm256_fmadd_ps(_mm256_mul_ps(sf[i], dx), s, acc[i]);
                        }
                    }
                    results(&acc, max, &ws[..R], x, res);
                }
            }
        };
    }

    kernels!(
        "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni",
        rows_paired
    );
    paired!("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni");

    /// The AVX-512 tier's kernels with GFNI and AVX-512 VBMI: the low nibbles looked up by
    /// one `vpermb` (its 64-entry table is [`table`], four copies of the 16 entries, so the
    /// high nibble's bits 4, 5 in the index change nothing: no mask), the high nibbles moved
    /// down by one `vgf2p8affineqb` (bits 4..8 to 0..4, the rest cleared) where a shift and
    /// a mask were two. The same weights, so the same bits (M = 1 1.05–1.06× on an Intel
    /// Xeon).
    pub(in crate::linear::cpu) mod gfni {
        use super::*;

        /// The unsigned weights of a chunk (64 code bytes at `p`), as
        /// [`super::unpack_chunk`].
        ///
        /// # Safety
        /// The features of this variant; 64 bytes at `p`.
        #[inline]
        #[target_feature(
            enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni,avx512vbmi"
        )]
        unsafe fn unpack_chunk(p: *const u8, table: __m512i) -> W {
            // SAFETY: the caller's contract.
            let v = unsafe { _mm512_loadu_si512(p.cast()) };
            // Result bit i takes source bit 4 + i (i < 4): matrix byte 7 − i = 1 << (4 + i).
            let hi = _mm512_set1_epi64(0x1020_4080_0000_0000);
            [
                _mm512_permutexvar_epi8(v, table),
                _mm512_shuffle_epi8(table, _mm512_gf2p8affine_epi64_epi8::<0>(v, hi)),
            ]
        }

        kernels!(
            "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni,avx512vbmi",
            rows_paired
        );
        paired!("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni,avx512vbmi");
    }
}

/// The AVX-VNNI tier: 256-bit VEX `vpdpbusd`, the AVX2 tier's lanes.
pub(super) mod avxvnni {
    use super::*;
    use crate::linear::cpu::legacy_avx2::avxvnni::sum4x2_small;
    chunk256!("avx2,fma,f16c,avxvnni");
    kernels!("avx2,fma,f16c,avxvnni");
}
