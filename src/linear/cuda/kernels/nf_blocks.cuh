// The per-format arithmetic of the CUDA products: where a weight row's planes are, the
// value of one element (the exact-activation family) and the exact integer sum of one
// block against q8_1 codes (the q8_1 family). The orders are the CPU's (docs/linear.md,
// "Evaluation orders"):
//
// - exact family: acc[k mod 8] <- fma(w_k, x_k, acc[k mod 8]) in increasing k, then
//   tree8 and the row's finish (fp8 scaled order: times 256·s; nvfp4 scaled: / d_w);
// - q8_1 family: per block b, acc[b mod 8] <- fma(D_b, T_b, acc[b mod 8]) (k-quants with
//   mins also accm[b mod 8] <- fma(Dm_b, M_b, ...)), then tree8 (of acc - accm).
//
// A block of the q8_1 family is 32 values, except nvfp4's 16.
#pragma once
#include "nf_math.cuh"
#include "nf_tables.cuh"

// A weight in device (or host) memory as the kernels address it. Filled by the library
// from the view's planes (`src/linear/cuda/mod.rs`).
struct nf_weight {
    const nf_u8* plane[3];
    // Bytes per row in each plane (0 where the plane is not row-major).
    nf_u64 stride[3];
    int rows;
    int cols;
    // nvfp4: rows per stacked source (one divisor each) and K-blocks per row.
    int rows_per_source;
    int nkb;
    // fp8: 1 for row_interleaved_v1 (the scale word before each row's codes).
    int interleaved;
};

// One weight row: its planes from the row's first byte. nvfp4: p1 is the row's first scale
// word in the swizzled plane, p2 its source's divisor.
struct nf_wrow {
    const nf_u8* p0;
    const nf_u8* p1;
    const nf_u8* p2;
};

// The byte offset of row m's scale of K-block kb in nvfp4's swizzled plane
// (block_scale_k16_m128x4_v1; docs/layouts.md).
NF_HD nf_u64 nf_nvfp4_scale_offset(nf_u64 m, nf_u64 kb, nf_u64 nkb) {
    nf_u64 kt = (nkb + 3) / 4;
    return (m / 128) * kt * 512 + (kb / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + kb % 4;
}

template <int F>
NF_HD nf_wrow nf_row(const nf_weight& w, int r) {
    nf_wrow o;
    nf_u64 rr = (nf_u64)r;
    if constexpr (F == NF_FMT_NVFP4) {
        o.p0 = w.plane[0] + rr * w.stride[0];
        o.p1 = w.plane[1] + nf_nvfp4_scale_offset(rr, 0, (nf_u64)w.nkb);
        o.p2 = w.plane[2] + 4 * (rr / (nf_u64)w.rows_per_source);
    } else if constexpr (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_FP8_E4M3FN_ROW_FP16) {
        if (w.interleaved) {
            o.p1 = w.plane[0] + rr * w.stride[0];
            o.p0 = o.p1 + 2;
        } else {
            o.p0 = w.plane[0] + rr * w.stride[0];
            o.p1 = w.plane[1] + rr * w.stride[1];
        }
        o.p2 = 0;
    } else {
        o.p0 = w.plane[0] + rr * w.stride[0];
        o.p1 = w.plane[1] ? w.plane[1] + rr * w.stride[1] : 0;
        o.p2 = w.plane[2] ? w.plane[2] + rr * w.stride[2] : 0;
    }
    return o;
}

// ---- grouped formats (row_split_k128_v1) ----

template <int F>
NF_HD constexpr int nf_group() {
    return F == NF_FMT_Q8_G32_FP16 ? 32 : F == NF_FMT_T2_G128_FP16 ? 128 : 64;
}

template <int F>
NF_HD constexpr bool nf_is_grouped() {
    return F == NF_FMT_Q2_G64_FP16 || F == NF_FMT_T2_G128_FP16 || F == NF_FMT_Q4_G64_FP16 ||
           F == NF_FMT_Q5_G64_FP16 || F == NF_FMT_Q6_G64_FP16 || F == NF_FMT_Q8_G32_FP16;
}

// The signed code of element k with its arithmetic meaning (q8 0x80 is -128, t2 0b10 -2).
template <int F>
NF_HD nf_i32 nf_grouped_code(const nf_wrow& w, int k) {
    nf_i32 nib = (w.p0[k / 2] >> (4 * (k % 2))) & 0x0F;
    if constexpr (F == NF_FMT_Q2_G64_FP16) {
        return ((w.p0[k / 4] >> (2 * (k % 4))) & 3) - 1;
    } else if constexpr (F == NF_FMT_T2_G128_FP16) {
        nf_i32 u = (w.p0[k / 4] >> (2 * (k % 4))) & 3;
        return u >= 2 ? u - 4 : u;
    } else if constexpr (F == NF_FMT_Q4_G64_FP16) {
        return nib >= 8 ? nib - 16 : nib;
    } else if constexpr (F == NF_FMT_Q5_G64_FP16) {
        nf_i32 u = nib | (((w.p1[k / 8] >> (k % 8)) & 1) << 4);
        return u >= 16 ? u - 32 : u;
    } else if constexpr (F == NF_FMT_Q6_G64_FP16) {
        nf_i32 u = nib | (((w.p1[k / 4] >> (2 * (k % 4))) & 3) << 4);
        return u >= 32 ? u - 64 : u;
    } else {
        return (nf_i32)(nf_i8)w.p0[k];
    }
}

// The binary16 scale of group g as binary32 (exact).
NF_HD float nf_grouped_scale(const nf_wrow& w, int g) { return nf_f16_to_f32(nf_u16_at(w.p2 + 2 * g)); }

// ---- the exact-activation family: element values ----

// The order an fp8 / nvfp4 output runs in: the plain values, or the scaled ones (fp8:
// e4m3fn(c)/256, times 256·s at the end; nvfp4: ±|e2m1|·sf, divided by d_w at the end).
// Chosen per output from the weight row's scale and the activation row's check
// (docs/linear.md, "scaled order").

// fp8 row: the multiplier's exact value.
template <int F>
NF_HD float nf_fp8_scale(const nf_wrow& w) {
    nf_u32 bits = nf_u16_at(w.p1);
    return F == NF_FMT_FP8_E4M3FN_ROW_FP16 ? nf_f16_to_f32(bits) : nf_bf16_to_f32(bits);
}

// fp8 rows with |s| < 2^119 may run scaled.
NF_HD bool nf_fp8_scaled_row(float s) { return nf_abs(s) < nf_from_bits((127u + 119u) << 23); }

// nvfp4 rows with 2^-115 <= |d| <= 2^116 may run scaled.
NF_HD bool nf_nvfp4_scaled_row(float d) {
    float a = nf_abs(d);
    return a >= nf_from_bits((127u - 115u) << 23) && a <= nf_from_bits((127u + 116u) << 23);
}

// The activation-row side: every element finite, every nonzero |x| >= 2^tiny,
// K <= 2^24 and K·max|x| <= 2^sum (fp8: tiny -109, sum 126; nvfp4: -116, 116).
// From the row's largest |x| bits `mx` and whether a nonzero |x| is below 2^tiny (`small`).
NF_HD bool nf_scaled_x_final(nf_u32 mx, bool small, int k, int sum) {
    if (mx >= 0x7F800000u || small || k > (1 << 24)) return false;
    double lim = 1.0;
    for (int i = 0; i < sum; i++) lim *= 2.0;
    return (double)k * (double)nf_from_bits(mx) <= lim;
}

// Whether |x| (bits a) is nonzero and below 2^tiny.
NF_HD bool nf_tiny(nf_u32 a, int tiny) { return a != 0 && a < ((nf_u32)(127 + tiny) << 23); }

NF_HD bool nf_scaled_x(const float* x, int k, int tiny, int sum) {
    nf_u32 mx = 0;
    bool small = false;
    for (int j = 0; j < k; j++) {
        nf_u32 a = nf_to_bits(x[j]) & 0x7FFFFFFFu;
        mx = a > mx ? a : mx;
        small = small || nf_tiny(a, tiny);
    }
    return nf_scaled_x_final(mx, small, k, sum);
}

// Activation element i of x in its dtype (native-endian words), as binary32 (exact).
NF_HD float nf_load_x(const void* x, int dtype, nf_u64 i) {
    if (dtype == NF_DTYPE_F32) return ((const float*)x)[i];
    nf_u32 h = ((const nf_u16*)x)[i];
    return dtype == NF_DTYPE_BF16 ? nf_bf16_to_f32(h) : nf_f16_to_f32(h);
}

// Stores output element i as f32 or bf16 (rounded to nearest even).
NF_HD void nf_store_y(void* y, int dtype, nf_u64 i, float v) {
    if (dtype == NF_DTYPE_F32)
        ((float*)y)[i] = v;
    else
        ((nf_u16*)y)[i] = (nf_u16)nf_f32_to_bf16(v);
}

// nvfp4 row r's divisor.
NF_HD float nf_nvfp4_divisor(const nf_wrow& w) { return nf_from_bits(nf_u32_at(w.p2)); }

// nvfp4 block b's scale word (4 contiguous words per 128x4 tile, tiles 512 bytes apart).
NF_HD nf_u32 nf_nvfp4_word(const nf_wrow& w, int b) { return w.p1[(b / 4) * 512 + b % 4]; }

// The value of element k of an exact-family row. `scaled` picks the fp8 / nvfp4 scaled
// values; `rs` is the fp8 row's multiplier or the nvfp4 row's divisor.
template <int F>
NF_HD float nf_value(const nf_wrow& w, int k, bool scaled, float rs) {
    if constexpr (F == NF_FMT_BF16) {
        return nf_bf16_to_f32(nf_u16_at(w.p0 + 2 * k));
    } else if constexpr (F == NF_FMT_FP32) {
        return nf_from_bits(nf_u32_at(w.p0 + 4 * k));
    } else if constexpr (nf_is_grouped<F>()) {
        return nf_mul(nf_grouped_scale(w, k / nf_group<F>()), (float)nf_grouped_code<F>(w, k));
    } else if constexpr (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_FP8_E4M3FN_ROW_FP16) {
        float c = nf_e4m3fn_to_f32(w.p0[k]);
        return scaled ? nf_mul(c, 0.00390625f) : nf_mul(c, rs);
    } else {
        static_assert(F == NF_FMT_NVFP4, "a format of the exact family");
        nf_u32 c = (w.p0[k / 2] >> (4 * (k % 2))) & 0x0Fu;
        float sf = nf_e4m3fn_to_f32(nf_nvfp4_word(w, k / 16));
        float mag = nf_mul(nf_e2m1_magnitudes[c & 7u], sf);
        if (!scaled) mag = nf_div(mag, rs);
        return nf_from_bits(nf_to_bits(mag) ^ ((c & 8u) << 28));
    }
}

// The output of an exact-family row from its tree: y·256s (fp8 scaled), y / d_w (nvfp4
// scaled), y otherwise.
template <int F>
NF_HD float nf_finish(float y, bool scaled, float rs) {
    if constexpr (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_FP8_E4M3FN_ROW_FP16) {
        return scaled ? nf_mul(y, nf_mul(256.0f, rs)) : y;
    } else if constexpr (F == NF_FMT_NVFP4) {
        return scaled ? nf_div(y, rs) : y;
    } else {
        return y;
    }
}

// ---- the q8_1 family: one block against the activation codes ----

// One block's contribution: acc <- fma(d, t, acc), and for k-quants with mins also
// accm <- fma(dm, tm, accm). t and tm are exact integers (|t| < 2^24).
struct nf_bdot {
    nf_i32 t;
    float d;
    nf_i32 tm;
    float dm;
};

template <int F>
NF_HD constexpr bool nf_has_min() {
    return F == NF_FMT_GGUF_Q2_K || F == NF_FMT_GGUF_Q4_K || F == NF_FMT_GGUF_Q5_K;
}

// Values per block of the q8_1 family (nvfp4: 16, every other format 32).
template <int F>
NF_HD constexpr int nf_q8_block_values() {
    return F == NF_FMT_NVFP4 ? 16 : 32;
}

// The k-quants' 6-bit scale and min of 32-value sub-block j from the 12 scale bytes s.
NF_HD void nf_scale_min_k4(int j, const nf_u8* s, nf_i32* sc, nf_i32* m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// The signed 6-bit scale si (0..16) of a Q3_K block: low nibble si / 8 of scales[si % 8],
// high 2 bits at 2·(si / 4) of scales[8 + si % 4], minus 32.
NF_HD nf_i32 nf_q3_k_scale(const nf_u8* blk, int si) {
    const nf_u8* s = blk + NF_Q3_K_SCALES;
    nf_i32 lo = (s[si % 8] >> (4 * (si / 8))) & 15;
    nf_i32 hi = (s[8 + si % 4] >> (2 * (si / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}

// The 6-bit scale of 32-value group g of an IQ4_XS block (before ggml's − 32): nibble g % 2
// of scales_l[g / 2], high 2 bits at 2g of scales_h.
NF_HD nf_u32 nf_iq4_xs_scale(const nf_u8* blk, int g) {
    return ((blk[NF_IQ4_XS_SCALES_L + g / 2] >> (4 * (g % 2))) & 0x0Fu) |
           (((nf_u16_at(blk + NF_IQ4_XS_SCALES_H) >> (2 * g)) & 3u) << 4);
}

// The binary16 bits of an IQ1_M block's super-scale: nibble i is the top nibble of the
// u16 scales word i.
NF_HD nf_u32 nf_iq1_m_super_scale_bits(const nf_u8* blk) {
    nf_u32 bits = 0;
    for (int i = 0; i < 4; i++) bits |= (nf_u16_at(blk + NF_IQ1_M_SCALES + 2 * i) >> 12) << (4 * i);
    return bits;
}

// The grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M).
template <int F>
NF_HD constexpr bool nf_is_iquant() {
    return F == NF_FMT_GGUF_IQ2_XXS || F == NF_FMT_GGUF_IQ2_XS || F == NF_FMT_GGUF_IQ2_S || F == NF_FMT_GGUF_IQ3_XXS ||
           F == NF_FMT_GGUF_IQ3_S || F == NF_FMT_GGUF_IQ1_S || F == NF_FMT_GGUF_IQ1_M;
}

// sc · Σ_j grid_j · ±1 · x_j over one 8-value run (sign bit j of `signs` set: negative).
NF_HD nf_i32 nf_iq_run(const nf_i8* x, nf_i32 sc, nf_u64 grid, nf_u32 signs) {
    nf_i32 s = 0;
    for (int j = 0; j < 8; j++) {
        nf_i32 g = (nf_i32)((grid >> (8 * j)) & 0xFFu);
        s += ((signs & nf_kmask_iq2xs[j]) ? -g : g) * x[j];
    }
    return sc * s;
}

// sc · Σ_j (8·grid_j + delta)·x_j over one 8-value IQ1 run (grid bytes are i8 -1, 0, 1).
NF_HD nf_i32 nf_iq1_run(const nf_i8* x, nf_i32 sc, nf_u64 grid, nf_i32 delta) {
    nf_i32 s = 0;
    for (int j = 0; j < 8; j++) s += (8 * (nf_i32)(nf_i8)((grid >> (8 * j)) & 0xFFu) + delta) * x[j];
    return sc * s;
}

// Group g (32 values) of an i-quant super-block: the exact integer sum against x and the
// super-block's factor d·c (c = 1/8, 1/4 or 1: docs/linear.md, grid i-quants).
template <int F>
NF_HD nf_i32 nf_iq_group(const nf_u8* blk, int g, const nf_i8* x, float* dc) {
    nf_i32 t = 0;
    if constexpr (F == NF_FMT_GGUF_IQ2_XXS) {
        const nf_u8* q = blk + NF_IQ2_XXS_QS + 8 * g;
        nf_u32 aux = nf_u32_at(q + 4);
        nf_i32 sc = 2 * (nf_i32)(aux >> 28) + 1;
        for (int l = 0; l < 4; l++) t += nf_iq_run(x + 8 * l, sc, nf_iq2xxs_grid[q[l]], nf_ksigns_iq2xs[(aux >> (7 * l)) & 127u]);
        *dc = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), 0.125f);
    } else if constexpr (F == NF_FMT_GGUF_IQ2_XS) {
        nf_u32 s = blk[NF_IQ2_XS_SCALES + g];
        for (int l = 0; l < 4; l++) {
            nf_u32 q = nf_u16_at(blk + NF_IQ2_XS_QS + 8 * g + 2 * l);
            nf_i32 sc = 2 * (nf_i32)((s >> (4 * (l / 2))) & 15u) + 1;
            t += nf_iq_run(x + 8 * l, sc, nf_iq2xs_grid[q & 511u], nf_ksigns_iq2xs[q >> 9]);
        }
        *dc = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), 0.125f);
    } else if constexpr (F == NF_FMT_GGUF_IQ2_S) {
        const nf_u8 *qs = blk + NF_IQ2_S_QS, *signs = blk + NF_IQ2_S_SIGNS, *qh = blk + NF_IQ2_S_QH,
                    *scales = blk + NF_IQ2_S_SCALES;
        for (int l = 0; l < 4; l++) {
            int r = 4 * g + l;
            nf_u32 idx = qs[r] | (((qh[g] >> (2 * l)) & 3u) << 8);
            nf_i32 sc = 2 * (nf_i32)((scales[g] >> (4 * (l / 2))) & 15u) + 1;
            t += nf_iq_run(x + 8 * l, sc, nf_iq2s_grid[idx], signs[r]);
        }
        *dc = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), 0.125f);
    } else if constexpr (F == NF_FMT_GGUF_IQ3_XXS) {
        nf_u32 aux = nf_u32_at(blk + NF_IQ3_XXS_SCALES_AND_SIGNS + 4 * g);
        nf_i32 sc = 2 * (nf_i32)(aux >> 28) + 1;
        const nf_u8* qs = blk + NF_IQ3_XXS_QS;
        for (int l = 0; l < 4; l++) {
            nf_u64 g1 = nf_iq3xxs_grid[qs[8 * g + 2 * l]], g2 = nf_iq3xxs_grid[qs[8 * g + 2 * l + 1]];
            t += nf_iq_run(x + 8 * l, sc, g1 | (g2 << 32), nf_ksigns_iq2xs[(aux >> (7 * l)) & 127u]);
        }
        *dc = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), 0.25f);
    } else if constexpr (F == NF_FMT_GGUF_IQ3_S) {
        const nf_u8 *qs = blk + NF_IQ3_S_QS, *qh = blk + NF_IQ3_S_QH, *signs = blk + NF_IQ3_S_SIGNS,
                    *scales = blk + NF_IQ3_S_SCALES;
        nf_i32 sc = 2 * (nf_i32)((scales[g / 2] >> (4 * (g % 2))) & 15u) + 1;
        for (int l = 0; l < 4; l++) {
            int r = 4 * g + l;
            nf_u32 i1 = qs[2 * r] | (((qh[g] >> (2 * l)) & 1u) << 8);
            nf_u32 i2 = qs[2 * r + 1] | (((qh[g] >> (2 * l + 1)) & 1u) << 8);
            nf_u64 grid = (nf_u64)nf_iq3s_grid[i1] | ((nf_u64)nf_iq3s_grid[i2] << 32);
            t += nf_iq_run(x + 8 * l, sc, grid, signs[r]);
        }
        *dc = nf_f16_to_f32(nf_u16_at(blk));
    } else if constexpr (F == NF_FMT_GGUF_IQ1_S) {
        nf_u32 qh = nf_u16_at(blk + NF_IQ1_S_QH + 2 * g);
        nf_i32 sc = 2 * (nf_i32)((qh >> 12) & 7u) + 1;
        nf_i32 delta = (qh & 0x8000u) ? -1 : 1;
        for (int l = 0; l < 4; l++) {
            nf_u32 idx = blk[NF_IQ1_S_QS + 4 * g + l] | (((qh >> (3 * l)) & 7u) << 8);
            t += nf_iq1_run(x + 8 * l, sc, nf_iq1s_grid[idx], delta);
        }
        *dc = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), 0.125f);
    } else {
        static_assert(F == NF_FMT_GGUF_IQ1_M, "an i-quant");
        nf_u32 sw = nf_u16_at(blk + NF_IQ1_M_SCALES + 2 * (g / 2));
        for (int l = 0; l < 4; l++) {
            nf_u32 nib = blk[NF_IQ1_M_QH + 2 * g + l / 2] >> (4 * (l % 2));
            nf_u32 idx = blk[NF_IQ1_M_QS + 4 * g + l] | ((nib & 7u) << 8);
            nf_i32 delta = (nib & 8u) ? -1 : 1;
            nf_i32 sc = 2 * (nf_i32)((sw >> (6 * (g % 2) + 3 * (l / 2))) & 7u) + 1;
            t += nf_iq1_run(x + 8 * l, sc, nf_iq1s_grid[idx], delta);
        }
        *dc = nf_mul(nf_f16_to_f32(nf_iq1_m_super_scale_bits(blk)), 0.125f);
    }
    return t;
}

template <int F>
NF_HD constexpr int nf_iq_block_bytes() {
    return F == NF_FMT_GGUF_IQ2_XXS ? NF_IQ2_XXS_BYTES
           : F == NF_FMT_GGUF_IQ2_XS ? NF_IQ2_XS_BYTES
           : F == NF_FMT_GGUF_IQ2_S  ? NF_IQ2_S_BYTES
           : F == NF_FMT_GGUF_IQ3_XXS ? NF_IQ3_XXS_BYTES
           : F == NF_FMT_GGUF_IQ3_S  ? NF_IQ3_S_BYTES
           : F == NF_FMT_GGUF_IQ1_S  ? NF_IQ1_S_BYTES
                                     : NF_IQ1_M_BYTES;
}

// Four entries of a 16-entry table of signed bytes t (four little-endian words): byte i of
// the result is entry (n >> 8i) & 15 (each byte of n holds an index in its low nibble).
// Two byte permutations pick among entries 0..7 and 8..15; bit 3 of each index chooses.
NF_HD nf_u32 nf_lookup16(nf_u32 n, const nf_u32* t) {
    nf_u32 v = n & 0x07070707u;
    v |= v >> 4;
    const nf_u32 sel = (v & 0xFFu) | ((v >> 8) & 0xFF00u);
    const nf_u32 lo = nf_perm(t[0], t[1], sel), hi = nf_perm(t[2], t[3], sel);
    const nf_u32 m = ((n >> 3) & 0x01010101u) * 0xFFu;
    return (hi & m) | (lo & ~m);
}

// Bits 0..3 of n moved to bit 4 of bytes 0..3 (the four shifted copies do not overlap, so
// the product carries nothing).
NF_HD nf_u32 nf_spread4(nf_u32 n) { return ((n * 0x00204081u) & 0x01010101u) << 4; }

// The exact sum of the four signed bytes of a.
NF_HD nf_i32 nf_sum4(nf_u32 a, nf_i32 c) { return nf_dot4(0x01010101u, a, c); }

// The exact sum of 32 signed weight bytes at q (any alignment) times 32 activation codes
// (4-byte aligned).
NF_HD nf_i32 nf_dot32(const nf_u8* q, const nf_i8* xq) {
    nf_i32 s = 0;
    for (int h = 0; h < 2; h++) {
        nf_u32 c[4];
        nf_words4(q + 16 * h, c);
        for (int e = 0; e < 4; e++) s = nf_dot4(c[e], nf_x4(xq, 4 * h + e), s);
    }
    return s;
}

// Block b of row w against the block's activation codes xq (32 values; nvfp4 16) and the
// activation block's stored scale dx (nvfp4: of the 32-value block holding it).
template <int F>
NF_HD nf_bdot nf_q8_block(const nf_wrow& w, int b, const nf_i8* xq, float dx) {
    nf_bdot o;
    o.tm = 0;
    o.dm = 0.0f;
    nf_i32 s = 0;
    if constexpr (F == NF_FMT_GGUF_Q8_0) {
        const nf_u8* blk = w.p0 + NF_Q8_0_BYTES * b;
        s = nf_dot32(blk + NF_Q8_0_QS, xq);
        o.t = s;
        o.d = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), dx);
    } else if constexpr (F == NF_FMT_GGUF_Q4_0) {
        // Byte e holds value e (low nibble) and e + 16 (high); q = nibble - 8.
        const nf_u8* blk = w.p0 + NF_Q4_0_BYTES * b;
        nf_i32 sx = 0;
        for (int e = 0; e < 4; e++) {
            nf_u32 c = nf_u32_le(blk + NF_Q4_0_QS + 4 * e);
            nf_u32 lo = nf_x4(xq, e), hi = nf_x4(xq, e + 4);
            s = nf_dot4(c & 0x0F0F0F0Fu, lo, s);
            s = nf_dot4((c >> 4) & 0x0F0F0F0Fu, hi, s);
            sx = nf_sum4(lo, nf_sum4(hi, sx));
        }
        o.t = s - 8 * sx;
        o.d = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), dx);
    } else if constexpr (F == NF_FMT_GGUF_IQ4_NL) {
        // Byte e holds the indices of values e (low nibble) and e + 16 (high).
        const nf_u8* blk = w.p0 + NF_IQ4_NL_BYTES * b;
        const nf_u32 t[4] = NF_IQ4NL_WORDS;
        for (int e = 0; e < 4; e++) {
            nf_u32 c = nf_u32_le(blk + NF_IQ4_NL_QS + 4 * e);
            s = nf_dot4(nf_lookup16(c & 0x0F0F0F0Fu, t), nf_x4(xq, e), s);
            s = nf_dot4(nf_lookup16((c >> 4) & 0x0F0F0F0Fu, t), nf_x4(xq, e + 4), s);
        }
        o.t = s;
        o.d = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), dx);
    } else if constexpr (F == NF_FMT_GGUF_Q5_0) {
        const nf_u8* blk = w.p0 + NF_Q5_0_BYTES * b;
        // Word e of qs: values 4e .. 4e + 3 (low nibbles, bits 4e .. of qh as bit 4) and
        // 16 + 4e .. (high nibbles, bits 16 + 4e ..); code - 16, so sum c·x = sum u·x -
        // 16·sum x.
        const nf_u32 qh = nf_u32_le(blk + NF_Q5_0_QH);
        nf_i32 sx = 0;
        for (int e = 0; e < 4; e++) {
            const nf_u32 c = nf_u32_le(blk + NF_Q5_0_QS + 4 * e);
            const nf_u32 lo = (c & 0x0F0F0F0Fu) | nf_spread4((qh >> (4 * e)) & 15u);
            const nf_u32 hi = ((c >> 4) & 0x0F0F0F0Fu) | nf_spread4((qh >> (16 + 4 * e)) & 15u);
            const nf_u32 x0 = nf_x4(xq, e), x1 = nf_x4(xq, e + 4);
            s = nf_dot4(lo, x0, nf_dot4(hi, x1, s));
            sx = nf_sum4(x0, nf_sum4(x1, sx));
        }
        o.t = s - 16 * sx;
        o.d = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), dx);
    } else if constexpr (F == NF_FMT_GGUF_Q2_0) {
        const nf_u8* blk = w.p0 + NF_Q2_0_BYTES * (b / 2);
        for (int e = 0; e < 32; e++) {
            int j = 32 * (b % 2) + e;
            s += ((nf_i32)((blk[NF_Q2_0_QS + j / 4] >> (2 * (j % 4))) & 3) - 1) * xq[e];
        }
        o.t = s;
        o.d = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), dx);
    } else if constexpr (F == NF_FMT_GGUF_IQ4_XS) {
        int sb = b / 8, j = b % 8;
        const nf_u8* blk = w.p0 + NF_IQ4_XS_BYTES * sb;
        nf_u32 ls = nf_iq4_xs_scale(blk, j);
        const nf_u32 t[4] = NF_IQ4NL_WORDS;
        nf_u32 cw[4];
        nf_words4(blk + NF_IQ4_XS_QS + 16 * j, cw);
        for (int e = 0; e < 4; e++) {
            nf_u32 c = cw[e];
            s = nf_dot4(nf_lookup16(c & 0x0F0F0F0Fu, t), nf_x4(xq, e), s);
            s = nf_dot4(nf_lookup16((c >> 4) & 0x0F0F0F0Fu, t), nf_x4(xq, e + 4), s);
        }
        o.t = ((nf_i32)ls - 32) * s;
        o.d = nf_mul(nf_f16_to_f32(nf_u16_at(blk)), dx);
    } else if constexpr (nf_is_iquant<F>()) {
        float dc;
        o.t = nf_iq_group<F>(w.p0 + nf_iq_block_bytes<F>() * (b / 8), b % 8, xq, &dc);
        o.d = nf_mul(dc, dx);
    } else if constexpr (F == NF_FMT_Q8_G32_FP16) {
        s = nf_dot32(w.p0 + 32 * b, xq);
        o.t = s;
        o.d = nf_mul(nf_grouped_scale(w, b), dx);
    } else if constexpr (F == NF_FMT_Q4_G64_FP16) {
        // Word e holds values 8e .. 8e + 7, value 2i + h in nibble h of byte i; code c =
        // (nibble ^ 8) - 8, so sum c·x = sum (nibble ^ 8)·x - 8·sum x.
        nf_i32 sx = 0;
        nf_u32 cw[4];
        nf_words4(w.p0 + 16 * b, cw);
        for (int e = 0; e < 4; e++) {
            nf_u32 c = cw[e] ^ 0x88888888u;
            nf_u32 x0 = nf_x4(xq, 2 * e), x1 = nf_x4(xq, 2 * e + 1);
            nf_u32 even = nf_perm(x0, x1, 0x6420u), odd = nf_perm(x0, x1, 0x7531u);
            s = nf_dot4(c & 0x0F0F0F0Fu, even, s);
            s = nf_dot4((c >> 4) & 0x0F0F0F0Fu, odd, s);
            sx = nf_sum4(x0, nf_sum4(x1, sx));
        }
        o.t = s - 8 * sx;
        o.d = nf_mul(nf_grouped_scale(w, 32 * b / nf_group<F>()), dx);
    } else if constexpr (nf_is_grouped<F>()) {
        for (int e = 0; e < 32; e++) s += nf_grouped_code<F>(w, 32 * b + e) * xq[e];
        o.t = s;
        o.d = nf_mul(nf_grouped_scale(w, 32 * b / nf_group<F>()), dx);
    } else if constexpr (F == NF_FMT_NVFP4) {
        // 16-value block b: S_b = sum 2·e2m1(c)·q, C_b = sf_b·(dx/2).
        // Word h holds values 8h .. 8h + 7, value 2i + n in nibble n of byte i.
        const nf_u32 t[4] = NF_TWICE_E2M1_WORDS;
        for (int h = 0; h < 2; h++) {
            const nf_u32 c = nf_u32_le(w.p0 + 8 * b + 4 * h);
            const nf_u32 x0 = nf_x4(xq, 2 * h), x1 = nf_x4(xq, 2 * h + 1);
            s = nf_dot4(nf_lookup16(c & 0x0F0F0F0Fu, t), nf_perm(x0, x1, 0x6420u), s);
            s = nf_dot4(nf_lookup16((c >> 4) & 0x0F0F0F0Fu, t), nf_perm(x0, x1, 0x7531u), s);
        }
        o.t = s;
        o.d = nf_mul(nf_e4m3fn_to_f32(nf_nvfp4_word(w, b)), nf_mul(0.5f, dx));
    } else {
        // k-quants: 32-value sub-block j of super-block sb, with a scale and a min per 16.
        int sb = b / 8, j = b % 8;
        nf_i32 sm = 0;
        float d, dmin = 0.0f;
        if constexpr (F == NF_FMT_GGUF_Q2_K) {
            const nf_u8* blk = w.p0 + NF_Q2_K_BYTES * sb;
            // Value v = 32j + e: quant byte 32·(j / 4) + e at shift 2·(j % 4), scale byte
            // v / 16 = 2j + e / 16 (low nibble scale, high nibble min).
            const nf_u8* qs = blk + NF_Q2_K_QS + 32 * (j / 4);
            const int shift = 2 * (j % 4);
            // Per half of 16 values: four words of codes at the shift, and the sum of x.
            nf_i32 q0 = 0, q1 = 0, x0 = 0, x1 = 0;
            for (int e = 0; e < 4; e++) {
                const nf_u32 xa = nf_x4(xq, e), xb = nf_x4(xq, e + 4);
                q0 = nf_dot4((nf_u32_le(qs + 4 * e) >> shift) & 0x03030303u, xa, q0);
                q1 = nf_dot4((nf_u32_le(qs + 16 + 4 * e) >> shift) & 0x03030303u, xb, q1);
                x0 = nf_sum4(xa, x0);
                x1 = nf_sum4(xb, x1);
            }
            const nf_u32 b0 = blk[NF_Q2_K_SCALES + 2 * j], b1 = blk[NF_Q2_K_SCALES + 2 * j + 1];
            s = (nf_i32)(b0 & 15) * q0 + (nf_i32)(b1 & 15) * q1;
            sm = (nf_i32)(b0 >> 4) * x0 + (nf_i32)(b1 >> 4) * x1;
            d = nf_f16_to_f32(nf_u16_at(blk + NF_Q2_K_D));
            dmin = nf_f16_to_f32(nf_u16_at(blk + NF_Q2_K_DMIN));
        } else if constexpr (F == NF_FMT_GGUF_Q3_K) {
            const nf_u8* blk = w.p0 + NF_Q3_K_BYTES * sb;
            // Value v = 32j + e: quant byte 32·(j / 4) + e at shift 2·(j % 4), high bit j of
            // hmask[e], scale v / 16 = 2j + e / 16.
            const nf_u8* qs = blk + NF_Q3_K_QS + 32 * (j / 4);
            const int shift = 2 * (j % 4);
            const nf_i32 sc0 = nf_q3_k_scale(blk, 2 * j), sc1 = nf_q3_k_scale(blk, 2 * j + 1);
            // Byte by byte: the 110-byte blocks are only 2-byte aligned, and word loads
            // of them (with their alignment tests) measured 20% slower on an H200.
            nf_i32 s0 = 0, s1 = 0;
            for (int e = 0; e < 16; e++) {
                nf_i32 lo0 = (qs[e] >> shift) & 3, lo1 = (qs[e + 16] >> shift) & 3;
                s0 += (((blk[NF_Q3_K_HMASK + e] >> j) & 1) ? lo0 : lo0 - 4) * xq[e];
                s1 += (((blk[NF_Q3_K_HMASK + e + 16] >> j) & 1) ? lo1 : lo1 - 4) * xq[e + 16];
            }
            s = sc0 * s0 + sc1 * s1;
            d = nf_f16_to_f32(nf_u16_at(blk + NF_Q3_K_D));
        } else if constexpr (F == NF_FMT_GGUF_Q4_K || F == NF_FMT_GGUF_Q5_K) {
            constexpr bool five = F == NF_FMT_GGUF_Q5_K;
            static_assert(NF_Q4_K_D == NF_Q5_K_D && NF_Q4_K_DMIN == NF_Q5_K_DMIN && NF_Q4_K_SCALES == NF_Q5_K_SCALES,
                          "Q4_K and Q5_K share d, dmin and scales");
            const nf_u8* blk = w.p0 + (five ? NF_Q5_K_BYTES : NF_Q4_K_BYTES) * sb;
            nf_i32 sc, m;
            nf_scale_min_k4(j, blk + NF_Q4_K_SCALES, &sc, &m);
            // Word e: values 4e .. 4e + 3 of the sub-block, nibble j % 2 of quant bytes
            // 32·(j / 2) + 4e .. (Q5_K: bit j of qh bytes 4e .. as bit 4).
            nf_i32 q = 0, sx = 0;
            nf_u32 cw[8];
            nf_words4(blk + (five ? NF_Q5_K_QS : NF_Q4_K_QS) + 32 * (j / 2), cw);
            nf_words4(blk + (five ? NF_Q5_K_QS : NF_Q4_K_QS) + 32 * (j / 2) + 16, cw + 4);
            for (int e = 0; e < 8; e++) {
                nf_u32 c = (cw[e] >> (4 * (j % 2))) & 0x0F0F0F0Fu;
                if (five) c |= ((nf_u32_le(blk + NF_Q5_K_QH + 4 * e) >> j) & 0x01010101u) << 4;
                const nf_u32 x = nf_x4(xq, e);
                q = nf_dot4(c, x, q);
                sx = nf_sum4(x, sx);
            }
            s = sc * q;
            sm = m * sx;
            d = nf_f16_to_f32(nf_u16_at(blk + NF_Q4_K_D));
            dmin = nf_f16_to_f32(nf_u16_at(blk + NF_Q4_K_DMIN));
        } else {
            static_assert(F == NF_FMT_GGUF_Q6_K, "a format of the q8_1 family");
            const nf_u8* blk = w.p0 + NF_Q6_K_BYTES * sb;
            // Value v = 32j + e (h = j / 4, i = j % 4): low nibble i / 2 of ql byte 64h +
            // 32·(i % 2) + e, high bits 2i of qh byte 32h + e, code - 32, scale v / 16.
            // Per half of 16 values: sum (c - 32)·x = sum c·x - 32·sum x.
            const int h = j / 4, i = j % 4;
            nf_i32 half[2];
            for (int g = 0; g < 2; g++) {
                nf_i32 q = 0, sx = 0;
                for (int e = 4 * g; e < 4 * g + 4; e++) {
                    const nf_u32 lo = (nf_u32_le(blk + NF_Q6_K_QL + 64 * h + 32 * (i % 2) + 4 * e) >> (4 * (i / 2))) & 0x0F0F0F0Fu;
                    const nf_u32 hi = ((nf_u32_le(blk + NF_Q6_K_QH + 32 * h + 4 * e) >> (2 * i)) & 0x03030303u) << 4;
                    const nf_u32 x = nf_x4(xq, e);
                    q = nf_dot4(lo | hi, x, q);
                    sx = nf_sum4(x, sx);
                }
                half[g] = (nf_i32)(nf_i8)blk[NF_Q6_K_SCALES + 2 * j + g] * (q - 32 * sx);
            }
            s = half[0] + half[1];
            d = nf_f16_to_f32(nf_u16_at(blk + NF_Q6_K_D));
        }
        o.t = s;
        o.d = nf_mul(d, dx);
        o.tm = sm;
        o.dm = nf_mul(dmin, dx);
    }
    return o;
}

// The lane step of the q8_1 family.
template <int F>
NF_HD void nf_q8_step(float* acc, float* accm, int lane, const nf_bdot& p) {
    acc[lane] = nf_fma(p.d, (float)p.t, acc[lane]);
    if constexpr (nf_has_min<F>()) accm[lane] = nf_fma(p.dm, (float)p.tm, accm[lane]);
}

// The q8_1 family's output from its lanes.
template <int F>
NF_HD float nf_q8_finish(const float* acc, const float* accm) {
    if constexpr (nf_has_min<F>()) {
        float l[8];
        for (int j = 0; j < 8; j++) l[j] = nf_sub(acc[j], accm[j]);
        return nf_tree8(l);
    } else {
        return nf_tree8(acc);
    }
}

// ---- nvfp4 under q8_1: which rows take the block order ----

// `nf_nvfp4_fast_row`'s test from the row's divisor d, its largest scale word mx and its
// smallest nonzero one mn (0xFF when there is none); the kernels scan the scale words with
// several threads.
NF_HD bool nf_nvfp4_fast_final(float d, nf_u32 mx, nf_u32 mn) {
    if (!(nf_is_finite(d) && d > 0.0f)) return false;
    if (mx > 0x7Eu) return false;
    if (mx == 0) return true;
    double lo = nf_e4m3fn_to_f32(mn), hi = nf_e4m3fn_to_f32(mx), dd = d;
    double p126 = 1.0, p127;
    for (int i = 0; i < 126; i++) p126 *= 0.5;
    p127 = 1.0;
    for (int i = 0; i < 127; i++) p127 *= 2.0;
    return 0.5 * lo >= p126 * dd && 6.0 * hi <= p127 * dd;
}

// Whether an nvfp4 row runs the fast block order under q8_1: d_w finite and > 0, every
// scale word valid (<= 0x7E), and 0.5·sf_min/d_w >= 2^-126, 6·sf_max/d_w <= 2^127 over its
// nonzero scale words (exact in double). Other rows run the exact-weight order.
NF_HD bool nf_nvfp4_fast_row(const nf_wrow& w, int nkb) {
    nf_u32 mx = 0, mn = 0xFFu;
    for (int b = 0; b < nkb; b++) {
        nf_u32 s = nf_nvfp4_word(w, b);
        mx = s > mx ? s : mx;
        if (s != 0 && s < mn) mn = s;
    }
    return nf_nvfp4_fast_final(nf_nvfp4_divisor(w), mx, mn);
}

// Element k of a non-fast nvfp4 row under q8_1: the exact profile's plain weight.
NF_HD float nf_nvfp4_exact_weight(const nf_wrow& w, int k, float d) { return nf_value<NF_FMT_NVFP4>(w, k, false, d); }

// ---- the GEMV kernels' chunks: 256 values of 16 rows staged in shared memory ----

#define NF_CK 256

// Bytes of plane p per NF_CK values of a row, for the planes the GEMV kernels stage (0: the
// plane is read where it lies: nvfp4's swizzled scales and divisors, fp8's row scales).
// Every staged plane is row-major and holds a whole number of bytes per 128 values, so a
// chunk starting at a multiple of NF_CK starts at byte k0·C/NF_CK of its row, and every
// block, group and super-block index relative to the chunk's start is the same index
// relative to the row's start minus a multiple of 8 blocks.
template <int F>
NF_HD constexpr int nf_chunk_bytes(int p) {
    if constexpr (F == NF_FMT_BF16) return p == 0 ? 512 : 0;
    else if constexpr (F == NF_FMT_FP32) return p == 0 ? 1024 : 0;
    else if constexpr (F == NF_FMT_Q2_G64_FP16 || F == NF_FMT_T2_G128_FP16)
        return p == 0 ? 64 : p == 2 ? 2 * NF_CK / nf_group<F>() : 0;
    else if constexpr (F == NF_FMT_Q4_G64_FP16) return p == 0 ? 128 : p == 2 ? 8 : 0;
    else if constexpr (F == NF_FMT_Q5_G64_FP16) return p == 0 ? 128 : p == 1 ? 32 : 8;
    else if constexpr (F == NF_FMT_Q6_G64_FP16) return p == 0 ? 128 : p == 1 ? 64 : 8;
    else if constexpr (F == NF_FMT_Q8_G32_FP16) return p == 0 ? 256 : p == 2 ? 16 : 0;
    else if constexpr (F == NF_FMT_NVFP4) return p == 0 ? 128 : 0;
    else if constexpr (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_FP8_E4M3FN_ROW_FP16) return p == 0 ? 256 : 0;
    else if constexpr (F == NF_FMT_GGUF_Q8_0) return p == 0 ? 8 * NF_Q8_0_BYTES : 0;
    else if constexpr (F == NF_FMT_GGUF_Q4_0 || F == NF_FMT_GGUF_IQ4_NL) return p == 0 ? 8 * NF_Q4_0_BYTES : 0;
    else if constexpr (F == NF_FMT_GGUF_Q5_0) return p == 0 ? 8 * NF_Q5_0_BYTES : 0;
    else if constexpr (F == NF_FMT_GGUF_Q2_0) return p == 0 ? 4 * NF_Q2_0_BYTES : 0;
    else if constexpr (F == NF_FMT_GGUF_Q2_K) return p == 0 ? NF_Q2_K_BYTES : 0;
    else if constexpr (F == NF_FMT_GGUF_Q3_K) return p == 0 ? NF_Q3_K_BYTES : 0;
    else if constexpr (F == NF_FMT_GGUF_Q4_K) return p == 0 ? NF_Q4_K_BYTES : 0;
    else if constexpr (F == NF_FMT_GGUF_Q5_K) return p == 0 ? NF_Q5_K_BYTES : 0;
    else if constexpr (F == NF_FMT_GGUF_Q6_K) return p == 0 ? NF_Q6_K_BYTES : 0;
    else if constexpr (F == NF_FMT_GGUF_IQ4_XS) return p == 0 ? NF_IQ4_XS_BYTES : 0;
    else return p == 0 ? nf_iq_block_bytes<F>() : 0;
}

// Values per row of the staged planes: K rounded up to the layout's padding (128 for the
// grouped formats' row_split_k128_v1).
template <int F>
NF_HD int nf_plane_cols(int k) {
    if constexpr (nf_is_grouped<F>()) return (k + 127) / 128 * 128;
    else return k;
}

// The staged row of a chunk: the staged planes at their shared-memory copies, the others
// where they lie, rebased so that block and element indices count from the chunk's start
// k0 (nvfp4's scale words: 512 bytes per 4 K-blocks of 16 values).
template <int F>
NF_HD nf_wrow nf_chunk_row(const nf_wrow& g, const nf_u8* s0, const nf_u8* s1, const nf_u8* s2, int k0) {
    nf_wrow o = g;
    if (nf_chunk_bytes<F>(0)) o.p0 = s0;
    if (nf_chunk_bytes<F>(1)) o.p1 = s1;
    if (nf_chunk_bytes<F>(2)) o.p2 = s2;
    if constexpr (F == NF_FMT_NVFP4) o.p1 = g.p1 + (nf_u64)(k0 / 64) * 512;
    return o;
}

// Rows' output word: y (+ bias) as f32 or bf16.
NF_HD float nf_with_bias(float y, const float* bias, int n) { return bias ? nf_add(y, bias[n]) : y; }

// ---- GGUF rows: element values (ggml's dequantize_row_*) ----

template <int F>
NF_HD constexpr bool nf_is_gguf() {
    return F == NF_FMT_GGUF_Q8_0 || F == NF_FMT_GGUF_Q4_0 || F == NF_FMT_GGUF_Q5_0 || F == NF_FMT_GGUF_Q2_0 ||
           F == NF_FMT_GGUF_Q2_K || F == NF_FMT_GGUF_Q3_K || F == NF_FMT_GGUF_Q4_K || F == NF_FMT_GGUF_Q5_K ||
           F == NF_FMT_GGUF_Q6_K || F == NF_FMT_GGUF_IQ2_XXS || F == NF_FMT_GGUF_IQ2_XS || F == NF_FMT_GGUF_IQ2_S ||
           F == NF_FMT_GGUF_IQ3_XXS || F == NF_FMT_GGUF_IQ3_S || F == NF_FMT_GGUF_IQ1_S || F == NF_FMT_GGUF_IQ1_M ||
           F == NF_FMT_GGUF_IQ4_NL || F == NF_FMT_GGUF_IQ4_XS;
}

// ±1 for element j of an i-quant sign byte (bit set: negative).
NF_HD float nf_iq_sign(nf_u32 signs, int j) { return (signs & nf_kmask_iq2xs[j]) ? -1.0f : 1.0f; }

// Byte j of an i-quant grid point.
NF_HD nf_u32 nf_grid_byte(nf_u64 grid, int j) { return (nf_u32)((grid >> (8 * j)) & 0xFFu); }

// An i-quant group scale: d·(0.5 + s)·c (c = 0.25, or 0.5 for IQ3_XXS).
NF_HD float nf_iq_db(float d, nf_u32 s, float c) { return nf_mul(nf_mul(d, nf_add(0.5f, (float)s)), c); }

// ±0.125, negative when bit `bit` of `bits` is set (IQ1_S / IQ1_M's delta).
NF_HD float nf_iq1_delta(nf_u32 bits, int bit) { return ((bits >> bit) & 1u) ? -0.125f : 0.125f; }

// The value of element k of a GGUF row (its blocks from `row`): the f32 that ggml's
// dequantize_row_* (and the library's CPU dequantizers) compute, the same operations in
// the same order (no contraction).
template <int F>
NF_HD float nf_gguf_value(const nf_u8* row, int k) {
    if constexpr (F == NF_FMT_GGUF_Q8_0) {
        const nf_u8* b = row + NF_Q8_0_BYTES * (k / 32);
        return nf_mul((float)(nf_i8)b[NF_Q8_0_QS + k % 32], nf_f16_to_f32(nf_u16_at(b + NF_Q8_0_D)));
    } else if constexpr (F == NF_FMT_GGUF_Q4_0 || F == NF_FMT_GGUF_IQ4_NL) {
        const nf_u8* b = row + NF_Q4_0_BYTES * (k / 32);
        int e = k % 32;
        nf_u32 c = (b[NF_Q4_0_QS + e % 16] >> (4 * (e / 16))) & 0x0Fu;
        float d = nf_f16_to_f32(nf_u16_at(b + NF_Q4_0_D));
        if constexpr (F == NF_FMT_GGUF_Q4_0) return nf_mul((float)((nf_i32)c - 8), d);
        else return nf_mul(d, (float)nf_kvalues_iq4nl[c]);
    } else if constexpr (F == NF_FMT_GGUF_Q5_0) {
        const nf_u8* b = row + NF_Q5_0_BYTES * (k / 32);
        int e = k % 32;
        nf_u32 c = ((b[NF_Q5_0_QS + e % 16] >> (4 * (e / 16))) & 0x0Fu) | (((nf_u32_at(b + NF_Q5_0_QH) >> e) & 1u) << 4);
        return nf_mul((float)((nf_i32)c - 16), nf_f16_to_f32(nf_u16_at(b + NF_Q5_0_D)));
    } else if constexpr (F == NF_FMT_GGUF_Q2_0) {
        const nf_u8* b = row + NF_Q2_0_BYTES * (k / 64);
        int e = k % 64;
        nf_u32 c = (b[NF_Q2_0_QS + e / 4] >> (2 * (e % 4))) & 3u;
        return nf_mul((float)((nf_i32)c - 1), nf_f16_to_f32(nf_u16_at(b + NF_Q2_0_D)));
    } else if constexpr (F == NF_FMT_GGUF_Q2_K) {
        const nf_u8* b = row + NF_Q2_K_BYTES * (k / 256);
        int v = k % 256, h = v / 128, i = (v / 32) % 4, l = v % 32;
        nf_u32 sc = b[NF_Q2_K_SCALES + v / 16], q = (b[NF_Q2_K_QS + 32 * h + l] >> (2 * i)) & 3u;
        float dl = nf_mul(nf_f16_to_f32(nf_u16_at(b + NF_Q2_K_D)), (float)(sc & 0x0Fu));
        float ml = nf_mul(nf_f16_to_f32(nf_u16_at(b + NF_Q2_K_DMIN)), (float)(sc >> 4));
        return nf_sub(nf_mul(dl, (float)q), ml);
    } else if constexpr (F == NF_FMT_GGUF_Q3_K) {
        const nf_u8* b = row + NF_Q3_K_BYTES * (k / 256);
        int v = k % 256, h = v / 128, i = (v / 32) % 4, l = v % 32;
        nf_i32 low = (b[NF_Q3_K_QS + 32 * h + l] >> (2 * i)) & 3;
        nf_i32 sub = ((b[NF_Q3_K_HMASK + l] >> (4 * h + i)) & 1) ? 0 : 4;
        float dl = nf_mul(nf_f16_to_f32(nf_u16_at(b + NF_Q3_K_D)), (float)nf_q3_k_scale(b, v / 16));
        return nf_mul(dl, (float)(low - sub));
    } else if constexpr (F == NF_FMT_GGUF_Q4_K || F == NF_FMT_GGUF_Q5_K) {
        constexpr bool five = F == NF_FMT_GGUF_Q5_K;
        const nf_u8* b = row + (five ? NF_Q5_K_BYTES : NF_Q4_K_BYTES) * (k / 256);
        int v = k % 256, j = v / 32, l = v % 32;
        nf_i32 sc, m;
        nf_scale_min_k4(j, b + NF_Q4_K_SCALES, &sc, &m);
        nf_u32 q = (b[(five ? NF_Q5_K_QS : NF_Q4_K_QS) + 32 * (j / 2) + l] >> (4 * (j % 2))) & 0x0Fu;
        if (five) q |= ((b[NF_Q5_K_QH + l] >> j) & 1u) << 4;
        float d1 = nf_mul(nf_f16_to_f32(nf_u16_at(b + NF_Q4_K_D)), (float)sc);
        float m1 = nf_mul(nf_f16_to_f32(nf_u16_at(b + NF_Q4_K_DMIN)), (float)m);
        return nf_sub(nf_mul(d1, (float)q), m1);
    } else if constexpr (F == NF_FMT_GGUF_Q6_K) {
        const nf_u8* b = row + NF_Q6_K_BYTES * (k / 256);
        int v = k % 256, h = v / 128, i = (v / 32) % 4, l = v % 32;
        nf_i32 lo = (b[NF_Q6_K_QL + 64 * h + 32 * (i % 2) + l] >> (4 * (i / 2))) & 15;
        nf_i32 hi = (b[NF_Q6_K_QH + 32 * h + l] >> (2 * i)) & 3;
        float sc = (float)(nf_i8)b[NF_Q6_K_SCALES + v / 16];
        return nf_mul(nf_mul(nf_f16_to_f32(nf_u16_at(b + NF_Q6_K_D)), sc), (float)((lo | (hi << 4)) - 32));
    } else if constexpr (F == NF_FMT_GGUF_IQ4_XS) {
        const nf_u8* b = row + NF_IQ4_XS_BYTES * (k / 256);
        int v = k % 256, g = v / 32, e = v % 32;
        float dl = nf_mul(nf_f16_to_f32(nf_u16_at(b + NF_IQ4_XS_D)), (float)((nf_i32)nf_iq4_xs_scale(b, g) - 32));
        nf_u32 c = (b[NF_IQ4_XS_QS + 16 * g + e % 16] >> (4 * (e / 16))) & 0x0Fu;
        return nf_mul(dl, (float)nf_kvalues_iq4nl[c]);
    } else {
        static_assert(nf_is_iquant<F>(), "a GGUF format");
        const nf_u8* b = row + nf_iq_block_bytes<F>() * (k / 256);
        int v = k % 256, g = v / 32, l = (v / 8) % 4, j = v % 8;
        float d = nf_f16_to_f32(nf_u16_at(b));
        if constexpr (F == NF_FMT_GGUF_IQ1_S || F == NF_FMT_GGUF_IQ1_M) {
            float dl, delta;
            nf_u32 idx;
            if constexpr (F == NF_FMT_GGUF_IQ1_S) {
                nf_u32 qh = nf_u16_at(b + NF_IQ1_S_QH + 2 * g);
                dl = nf_mul(d, (float)(2 * (nf_i32)((qh >> 12) & 7u) + 1));
                delta = nf_iq1_delta(qh, 15);
                idx = b[NF_IQ1_S_QS + 4 * g + l] | (((qh >> (3 * l)) & 7u) << 8);
            } else {
                nf_u32 sc = nf_u16_at(b + NF_IQ1_M_SCALES + 2 * (g / 2));
                nf_u32 nib = b[NF_IQ1_M_QH + 2 * g + l / 2] >> (4 * (l % 2));
                dl = nf_mul(nf_f16_to_f32(nf_iq1_m_super_scale_bits(b)),
                            (float)(2 * (nf_i32)((sc >> (6 * (g % 2) + 3 * (l / 2))) & 7u) + 1));
                delta = nf_iq1_delta(nib, 3);
                idx = b[NF_IQ1_M_QS + 4 * g + l] | ((nib & 7u) << 8);
            }
            float gv = (float)(nf_i8)nf_grid_byte(nf_iq1s_grid[idx], j);
            return nf_mul(dl, nf_add(gv, delta));
        } else {
            float db;
            nf_u64 grid;
            nf_u32 signs;
            if constexpr (F == NF_FMT_GGUF_IQ2_XXS) {
                const nf_u8* q = b + NF_IQ2_XXS_QS + 8 * g;
                nf_u32 aux = nf_u32_at(q + 4);
                db = nf_iq_db(d, aux >> 28, 0.25f);
                grid = nf_iq2xxs_grid[q[l]];
                signs = nf_ksigns_iq2xs[(aux >> (7 * l)) & 127u];
            } else if constexpr (F == NF_FMT_GGUF_IQ2_XS) {
                nf_u32 q = nf_u16_at(b + NF_IQ2_XS_QS + 8 * g + 2 * l);
                db = nf_iq_db(d, (b[NF_IQ2_XS_SCALES + g] >> (4 * (l / 2))) & 0x0Fu, 0.25f);
                grid = nf_iq2xs_grid[q & 511u];
                signs = nf_ksigns_iq2xs[q >> 9];
            } else if constexpr (F == NF_FMT_GGUF_IQ2_S) {
                int r = 4 * g + l;
                db = nf_iq_db(d, (b[NF_IQ2_S_SCALES + g] >> (4 * (l / 2))) & 0x0Fu, 0.25f);
                grid = nf_iq2s_grid[b[NF_IQ2_S_QS + r] | (((b[NF_IQ2_S_QH + g] >> (2 * l)) & 3u) << 8)];
                signs = b[NF_IQ2_S_SIGNS + r];
            } else if constexpr (F == NF_FMT_GGUF_IQ3_XXS) {
                nf_u32 aux = nf_u32_at(b + NF_IQ3_XXS_SCALES_AND_SIGNS + 4 * g);
                const nf_u8* qs = b + NF_IQ3_XXS_QS + 8 * g + 2 * l;
                db = nf_iq_db(d, aux >> 28, 0.5f);
                grid = (nf_u64)nf_iq3xxs_grid[qs[0]] | ((nf_u64)nf_iq3xxs_grid[qs[1]] << 32);
                signs = nf_ksigns_iq2xs[(aux >> (7 * l)) & 127u];
            } else {
                static_assert(F == NF_FMT_GGUF_IQ3_S, "a grid i-quant");
                int r = 4 * g + l;
                nf_u32 s = (b[NF_IQ3_S_SCALES + g / 2] >> (4 * (g % 2))) & 0x0Fu;
                db = nf_mul(d, (float)(1 + 2 * (nf_i32)s));
                nf_u32 i1 = b[NF_IQ3_S_QS + 2 * r] | (((b[NF_IQ3_S_QH + g] >> (2 * l)) & 1u) << 8);
                nf_u32 i2 = b[NF_IQ3_S_QS + 2 * r + 1] | (((b[NF_IQ3_S_QH + g] >> (2 * l + 1)) & 1u) << 8);
                grid = (nf_u64)nf_iq3s_grid[i1] | ((nf_u64)nf_iq3s_grid[i2] << 32);
                signs = b[NF_IQ3_S_SIGNS + r];
            }
            return nf_mul(nf_mul(db, (float)nf_grid_byte(grid, j)), nf_iq_sign(signs, j));
        }
    }
}

// The decoded value of element k of row r of any format the kernels decode: the exact
// represented value (the plain order's value; for GGUF, ggml's dequantized f32).
template <int F>
NF_HD float nf_decoded(const nf_wrow& r, int k) {
    if constexpr (nf_is_gguf<F>()) {
        return nf_gguf_value<F>(r.p0, k);
    } else {
        float rs = 0.0f;
        if constexpr (F == NF_FMT_NVFP4) rs = nf_nvfp4_divisor(r);
        if constexpr (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_FP8_E4M3FN_ROW_FP16) rs = nf_fp8_scale<F>(r);
        return nf_value<F>(r, k, false, rs);
    }
}
