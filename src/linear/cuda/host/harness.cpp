// The CUDA kernels' arithmetic compiled for the host (tests only): the same nf_*.cuh
// functions the device kernels call, composed in the order the kernels compose them, so a
// test compares them bit for bit with the library's CPU path.
#include "../kernels/nf_blocks.cuh"
#include "../kernels/nf_q8_1.cuh"

#include <vector>

namespace {

// The exact-activation family: every output in the CPU's order.
template <int F>
void exact_rows(const nf_weight& w, const float* x, int m, float* y) {
    const int n = w.rows, k = w.cols;
    std::vector<char> xok(m, 0);
    for (int r = 0; r < m; r++) {
        if (F == NF_FMT_NVFP4) xok[r] = nf_scaled_x(x + (size_t)r * k, k, -116, 116);
        if (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_FP8_E4M3FN_ROW_FP16)
            xok[r] = nf_scaled_x(x + (size_t)r * k, k, -109, 126);
    }
    for (int i = 0; i < n; i++) {
        nf_wrow row = nf_row<F>(w, i);
        float rs = 0.0f;
        bool row_ok = false;
        if constexpr (F == NF_FMT_NVFP4) {
            rs = nf_nvfp4_divisor(row);
            row_ok = nf_nvfp4_scaled_row(rs);
        } else if constexpr (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_FP8_E4M3FN_ROW_FP16) {
            rs = nf_fp8_scale<F>(row);
            row_ok = nf_fp8_scaled_row(rs);
        }
        for (int r = 0; r < m; r++) {
            bool scaled = row_ok && xok[r];
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            const float* xr = x + (size_t)r * k;
            for (int j = 0; j < k; j++) acc[j % 8] = nf_fma(nf_value<F>(row, j, scaled, rs), xr[j], acc[j % 8]);
            y[(size_t)r * n + i] = nf_finish<F>(nf_tree8(acc), scaled, rs);
        }
    }
}

// The q8_1 family on activations already quantized (codes q [m][k], block scales d and
// code sums [m][k/32]).
template <int F>
void q8_rows(const nf_weight& w, const nf_i8* q, const float* d, int m, float* y) {
    const int n = w.rows, k = w.cols;
    constexpr int V = nf_q8_block_values<F>();
    const int nb = k / V;
    for (int i = 0; i < n; i++) {
        nf_wrow row = nf_row<F>(w, i);
        bool fast = true;
        if constexpr (F == NF_FMT_NVFP4) fast = nf_nvfp4_fast_row(row, w.nkb);
        for (int r = 0; r < m; r++) {
            const nf_i8* qr = q + (size_t)r * k;
            const float* dr = d + (size_t)r * (k / 32);
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, accm[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            float out;
            if (fast) {
                for (int b = 0; b < nb; b++) {
                    nf_bdot p = nf_q8_block<F>(row, b, qr + V * b, dr[V * b / 32]);
                    nf_q8_step<F>(acc, accm, b % 8, p);
                }
                out = nf_q8_finish<F>(acc, accm);
                if constexpr (F == NF_FMT_NVFP4) out = nf_div(out, nf_nvfp4_divisor(row));
            } else {
                // nvfp4 rows outside the block order's range: the exact weights times x̂.
                float dw = nf_nvfp4_divisor(row);
                for (int j = 0; j < k; j++) {
                    float xh = nf_mul(dr[j / 32], (float)qr[j]);
                    acc[j % 8] = nf_fma(nf_nvfp4_exact_weight(row, j, dw), xh, acc[j % 8]);
                }
                out = nf_tree8(acc);
            }
            y[(size_t)r * n + i] = out;
        }
    }
}

// Rows first .. first + count decoded element by element, as nf_decode<F> does.
template <int F>
void decode_rows(const nf_weight& w, int first, int count, float* out) {
    const int k = w.cols;
    for (int i = 0; i < count; i++) {
        nf_wrow row = nf_row<F>(w, first + i);
        for (int e = 0; e < k; e++) out[(size_t)i * k + e] = nf_decoded<F>(row, e);
    }
}

}  // namespace

extern "C" {

// q8_1 blocks of m rows of k values (k a multiple of 32): codes, stored scales as binary32
// and code sums per block.
void nfh_q8_1(const float* x, int m, int k, nf_i8* q, float* d, nf_i32* sum) {
    for (long b = 0; b < (long)m * (k / 32); b++) d[b] = nf_q8_1_block(x + 32 * b, q + 32 * b, sum + b);
}

// y [m][n] = x [m][k] · Wᵀ in the exact profile (x as f32). 0, or -1 for a format the
// kernels do not cover.
int nfh_exact(int fmt, const nf_weight* w, const float* x, int m, float* y) {
    switch (fmt) {
#define NF_EXACT(F) \
    case F:         \
        exact_rows<F>(*w, x, m, y); \
        return 0;
        NF_EXACT(NF_FMT_BF16)
        NF_EXACT(NF_FMT_FP32)
        NF_EXACT(NF_FMT_Q2_G64_FP16)
        NF_EXACT(NF_FMT_T2_G128_FP16)
        NF_EXACT(NF_FMT_Q4_G64_FP16)
        NF_EXACT(NF_FMT_Q5_G64_FP16)
        NF_EXACT(NF_FMT_Q6_G64_FP16)
        NF_EXACT(NF_FMT_Q8_G32_FP16)
        NF_EXACT(NF_FMT_FP8_E4M3FN_ROW_BF16)
        NF_EXACT(NF_FMT_FP8_E4M3FN_ROW_FP16)
        NF_EXACT(NF_FMT_NVFP4)
#undef NF_EXACT
    }
    return -1;
}

// y [m][n] in the q8_1 profile from x [m][k] (quantized here by nf_q8_1_block).
int nfh_q8(int fmt, const nf_weight* w, const float* x, int m, float* y) {
    const int k = w->cols;
    std::vector<nf_i8> q((size_t)m * k);
    std::vector<float> d((size_t)m * (k / 32));
    std::vector<nf_i32> s((size_t)m * (k / 32));
    nfh_q8_1(x, m, k, q.data(), d.data(), s.data());
    switch (fmt) {
#define NF_Q8(F) \
    case F:      \
        q8_rows<F>(*w, q.data(), d.data(), m, y); \
        return 0;
        NF_Q8(NF_FMT_GGUF_Q8_0)
        NF_Q8(NF_FMT_GGUF_Q4_0)
        NF_Q8(NF_FMT_GGUF_Q5_0)
        NF_Q8(NF_FMT_GGUF_Q2_0)
        NF_Q8(NF_FMT_GGUF_IQ4_NL)
        NF_Q8(NF_FMT_GGUF_IQ4_XS)
        NF_Q8(NF_FMT_GGUF_IQ2_XXS)
        NF_Q8(NF_FMT_GGUF_IQ2_XS)
        NF_Q8(NF_FMT_GGUF_IQ2_S)
        NF_Q8(NF_FMT_GGUF_IQ3_XXS)
        NF_Q8(NF_FMT_GGUF_IQ3_S)
        NF_Q8(NF_FMT_GGUF_IQ1_S)
        NF_Q8(NF_FMT_GGUF_IQ1_M)
        NF_Q8(NF_FMT_GGUF_Q2_K)
        NF_Q8(NF_FMT_GGUF_Q3_K)
        NF_Q8(NF_FMT_GGUF_Q4_K)
        NF_Q8(NF_FMT_GGUF_Q5_K)
        NF_Q8(NF_FMT_GGUF_Q6_K)
        NF_Q8(NF_FMT_Q2_G64_FP16)
        NF_Q8(NF_FMT_T2_G128_FP16)
        NF_Q8(NF_FMT_Q4_G64_FP16)
        NF_Q8(NF_FMT_Q5_G64_FP16)
        NF_Q8(NF_FMT_Q6_G64_FP16)
        NF_Q8(NF_FMT_Q8_G32_FP16)
        NF_Q8(NF_FMT_NVFP4)
#undef NF_Q8
    }
    return -1;
}

// Rows first .. first + count of the weight decoded as nf_decode<F> decodes them (out
// [count][K] f32). 0, or -1 for a format the kernels do not decode.
int nfh_decode(int fmt, const nf_weight* w, int first, int count, float* out) {
    switch (fmt) {
#define NF_DECODE(F) \
    case F:          \
        decode_rows<F>(*w, first, count, out); \
        return 0;
        NF_DECODE(NF_FMT_BF16)
        NF_DECODE(NF_FMT_FP32)
        NF_DECODE(NF_FMT_Q2_G64_FP16)
        NF_DECODE(NF_FMT_T2_G128_FP16)
        NF_DECODE(NF_FMT_Q4_G64_FP16)
        NF_DECODE(NF_FMT_Q5_G64_FP16)
        NF_DECODE(NF_FMT_Q6_G64_FP16)
        NF_DECODE(NF_FMT_Q8_G32_FP16)
        NF_DECODE(NF_FMT_FP8_E4M3FN_ROW_BF16)
        NF_DECODE(NF_FMT_FP8_E4M3FN_ROW_FP16)
        NF_DECODE(NF_FMT_NVFP4)
        NF_DECODE(NF_FMT_GGUF_Q8_0)
        NF_DECODE(NF_FMT_GGUF_Q4_0)
        NF_DECODE(NF_FMT_GGUF_Q5_0)
        NF_DECODE(NF_FMT_GGUF_Q2_0)
        NF_DECODE(NF_FMT_GGUF_Q2_K)
        NF_DECODE(NF_FMT_GGUF_Q3_K)
        NF_DECODE(NF_FMT_GGUF_Q4_K)
        NF_DECODE(NF_FMT_GGUF_Q5_K)
        NF_DECODE(NF_FMT_GGUF_Q6_K)
        NF_DECODE(NF_FMT_GGUF_IQ2_XXS)
        NF_DECODE(NF_FMT_GGUF_IQ2_XS)
        NF_DECODE(NF_FMT_GGUF_IQ2_S)
        NF_DECODE(NF_FMT_GGUF_IQ3_XXS)
        NF_DECODE(NF_FMT_GGUF_IQ3_S)
        NF_DECODE(NF_FMT_GGUF_IQ1_S)
        NF_DECODE(NF_FMT_GGUF_IQ1_M)
        NF_DECODE(NF_FMT_GGUF_IQ4_NL)
        NF_DECODE(NF_FMT_GGUF_IQ4_XS)
#undef NF_DECODE
    }
    return -1;
}

// The nvfp4 swizzle offset, to compare with the layout codec's.
nf_u64 nfh_nvfp4_scale_offset(nf_u64 m, nf_u64 kb, nf_u64 nkb) { return nf_nvfp4_scale_offset(m, kb, nkb); }

// Word conversions, to compare with the library's on every word.
float nfh_f16_to_f32(nf_u32 h) { return nf_f16_to_f32(h); }
nf_u32 nfh_f32_to_f16(float f) { return nf_f32_to_f16(f); }
nf_u32 nfh_f32_to_bf16(float f) { return nf_f32_to_bf16(f); }
float nfh_e4m3fn_to_f32(nf_u32 w) { return nf_e4m3fn_to_f32(w); }
}
