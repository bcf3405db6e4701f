// Generated from the library's registry and tables by src/linear/cuda/host/mod.rs
// (`NINFER_REGEN_CUDA_TABLES=1 cargo test --lib cuda_tables`): do not edit.
#pragma once
#include "nf_math.cuh"

#define NF_FMT_BF16 0
#define NF_FMT_FP32 1
#define NF_FMT_INT32 2
#define NF_FMT_Q2_G64_FP16 3
#define NF_FMT_Q4_G64_FP16 4
#define NF_FMT_Q5_G64_FP16 5
#define NF_FMT_Q6_G64_FP16 6
#define NF_FMT_Q8_G32_FP16 7
#define NF_FMT_T2_G128_FP16 8
#define NF_FMT_NVFP4 9
#define NF_FMT_FP8_E4M3FN_ROW_BF16 10
#define NF_FMT_FP8_E4M3FN_ROW_FP16 11
#define NF_FMT_GGUF_Q8_0 12
#define NF_FMT_GGUF_Q4_0 13
#define NF_FMT_GGUF_Q5_0 14
#define NF_FMT_GGUF_Q2_0 15
#define NF_FMT_GGUF_Q2_K 16
#define NF_FMT_GGUF_Q3_K 17
#define NF_FMT_GGUF_Q4_K 18
#define NF_FMT_GGUF_Q5_K 19
#define NF_FMT_GGUF_Q6_K 20
#define NF_FMT_GGUF_IQ2_XXS 21
#define NF_FMT_GGUF_IQ2_XS 22
#define NF_FMT_GGUF_IQ3_XXS 23
#define NF_FMT_GGUF_IQ1_S 24
#define NF_FMT_GGUF_IQ4_NL 25
#define NF_FMT_GGUF_IQ3_S 26
#define NF_FMT_GGUF_IQ2_S 27
#define NF_FMT_GGUF_IQ4_XS 28
#define NF_FMT_GGUF_IQ1_M 29
#define NF_DTYPE_F32 0
#define NF_DTYPE_BF16 1
#define NF_DTYPE_F16 2

#ifdef NF_DEVICE_CODE
#define NF_TABLE __constant__ const
#else
#define NF_TABLE static const
#endif

// IQ4_NL / IQ4_XS codebook.
NF_TABLE nf_i8 nf_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// E2M1 magnitudes of the code words 0..7.
NF_TABLE float nf_e2m1_magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
