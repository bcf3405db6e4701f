// q8_1 activation blocks on the device: ggml's quantize_row_q8_1_ref arithmetic, the same
// as the CPU's `linear::q8_1::quantize_block` (docs/linear.md, "q8_1 activations"):
//
//   amax = max |x_j|, d = amax / 127, id = 1/d (0 when d = 0),
//   q_j = roundf(x_j · id) (half away from zero), stored d = binary16(d).
//
// A block with a non-finite value gets d = NaN and zero codes; when 1/d overflows the codes
// are 0. The device keeps, per block, the stored d as its exact binary32 value and the exact
// code sum Σq (the kernels never read ggml's rounded s).
#pragma once
#include "nf_math.cuh"

// Values per q8_1 block.
#define NF_QK8_1 32

// Quantizes 32 values: codes into q[0..32], returns the stored d as binary32 (exact) and
// the code sum in *sum.
NF_HD float nf_q8_1_block(const float* x, nf_i8* q, nf_i32* sum) {
    bool finite = true;
    for (int j = 0; j < NF_QK8_1; j++) finite = finite && nf_is_finite(x[j]);
    *sum = 0;
    if (!finite) {
        for (int j = 0; j < NF_QK8_1; j++) q[j] = 0;
        return nf_f16_to_f32(0x7E00u);
    }
    float amax = 0.0f;
    for (int j = 0; j < NF_QK8_1; j++) {
        float a = nf_abs(x[j]);
        if (a > amax) amax = a;
    }
    float d = nf_div(amax, 127.0f);
    float id = d != 0.0f ? nf_div(1.0f, d) : 0.0f;
    nf_i32 s = 0;
    if (nf_is_finite(id)) {
        for (int j = 0; j < NF_QK8_1; j++) {
            // roundf: truncate, then step away from zero when the dropped part is ≥ 1/2
            // (|v| ≤ 127 + a few ulps, so the conversions are exact).
            float v = nf_mul(x[j], id);
            nf_i32 t = (nf_i32)v;
            float f = nf_sub(v, (float)t);
            nf_i32 r = t + (f >= 0.5f ? 1 : 0) - (f <= -0.5f ? 1 : 0);
            q[j] = (nf_i8)r;
            s += r;
        }
    } else {
        for (int j = 0; j < NF_QK8_1; j++) q[j] = 0;
    }
    *sum = s;
    return nf_f16_to_f32(nf_f32_to_f16(d));
}
