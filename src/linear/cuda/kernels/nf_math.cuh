// Scalar words and rounding steps shared by the CUDA kernels and their host build.
//
// Every function here is `NF_HD`: compiled as device code by NVRTC and as plain C++ by the
// host test harness (tests/cuda_host.rs), which checks the results bit for bit against the
// library's CPU path. Nothing here may depend on where it runs: the conversions are integer
// bit operations, and each floating-point step names its rounding (`nf_mul`, `nf_div`,
// `nf_fma`: one IEEE binary32 operation, round to nearest even, no contraction).
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define NF_DEVICE_CODE 1
#define NF_HD __host__ __device__ __forceinline__
#else
#include <cmath>
#include <cstring>
#define NF_HD inline
#endif

typedef unsigned char nf_u8;
typedef signed char nf_i8;
typedef unsigned short nf_u16;
typedef unsigned int nf_u32;
typedef int nf_i32;
typedef unsigned long long nf_u64;

NF_HD float nf_from_bits(nf_u32 u) {
#ifdef NF_DEVICE_CODE
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}

NF_HD nf_u32 nf_to_bits(float f) {
#ifdef NF_DEVICE_CODE
    return __float_as_uint(f);
#else
    nf_u32 u;
    std::memcpy(&u, &f, 4);
    return u;
#endif
}

// One binary32 operation each, rounded to nearest even. On the device the `_rn` intrinsics
// are never contracted or approximated whatever the compile flags; the host build is
// compiled with -ffp-contract=off.
NF_HD float nf_mul(float a, float b) {
#ifdef NF_DEVICE_CODE
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

NF_HD float nf_add(float a, float b) {
#ifdef NF_DEVICE_CODE
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

NF_HD float nf_sub(float a, float b) {
#ifdef NF_DEVICE_CODE
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

NF_HD float nf_div(float a, float b) {
#ifdef NF_DEVICE_CODE
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

// a·b + c with one rounding.
NF_HD float nf_fma(float a, float b, float c) {
#ifdef NF_DEVICE_CODE
    return __fmaf_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}

NF_HD float nf_abs(float a) { return nf_from_bits(nf_to_bits(a) & 0x7FFFFFFFu); }

NF_HD bool nf_is_finite(float a) { return (nf_to_bits(a) & 0x7F800000u) != 0x7F800000u; }

// Little-endian loads from byte planes (no alignment needed).
NF_HD nf_u32 nf_u16_at(const nf_u8* p) { return (nf_u32)p[0] | ((nf_u32)p[1] << 8); }

NF_HD nf_u32 nf_u32_at(const nf_u8* p) {
    return (nf_u32)p[0] | ((nf_u32)p[1] << 8) | ((nf_u32)p[2] << 16) | ((nf_u32)p[3] << 24);
}

// Four bytes at p as a little-endian word, any alignment (on the device one load where p
// is 4-byte aligned, two 16-bit loads where it is 2-byte aligned).
NF_HD nf_u32 nf_u32_le(const nf_u8* p) {
#ifdef NF_DEVICE_CODE
    if (((nf_u64)p & 3) == 0) return *(const nf_u32*)p;
    if (((nf_u64)p & 1) == 0) return (nf_u32)((const nf_u16*)p)[0] | ((nf_u32)((const nf_u16*)p)[1] << 16);
#endif
    return nf_u32_at(p);
}

// Sixteen bytes at p as four little-endian words, any alignment (on the device one 16-byte
// load where p is 16-byte aligned).
NF_HD void nf_words4(const nf_u8* p, nf_u32* o) {
#ifdef NF_DEVICE_CODE
    if (((nf_u64)p & 15) == 0) {
        const uint4 v = *(const uint4*)p;
        o[0] = v.x;
        o[1] = v.y;
        o[2] = v.z;
        o[3] = v.w;
        return;
    }
#endif
    for (int i = 0; i < 4; i++) o[i] = nf_u32_le(p + 4 * i);
}

// Word i of 4-byte-aligned activation codes (on the device one load, so that codes held
// in registers stay there).
NF_HD nf_u32 nf_x4(const nf_i8* x, int i) {
#ifdef NF_DEVICE_CODE
    return ((const nf_u32*)x)[i];
#else
    return nf_u32_at((const nf_u8*)x + 4 * i);
#endif
}

// c + the sum of the four products of the signed bytes of a and b (exact; `dp4a` on the
// device).
NF_HD nf_i32 nf_dot4(nf_u32 a, nf_u32 b, nf_i32 c) {
#ifdef NF_DEVICE_CODE
    return __dp4a((int)a, (int)b, c);
#else
    for (int i = 0; i < 4; i++) c += (nf_i32)(nf_i8)(a >> (8 * i)) * (nf_i32)(nf_i8)(b >> (8 * i));
    return c;
#endif
}

// Bytes of a and b picked by the selector's nibbles (byte j of the result is byte
// (sel >> 4j) & 7 of the pair b:a; `__byte_perm` on the device).
NF_HD nf_u32 nf_perm(nf_u32 a, nf_u32 b, nf_u32 sel) {
#ifdef NF_DEVICE_CODE
    return __byte_perm(a, b, sel);
#else
    nf_u64 ab = (nf_u64)a | ((nf_u64)b << 32);
    nf_u32 r = 0;
    for (int j = 0; j < 4; j++) r |= (nf_u32)((ab >> (8 * ((sel >> (4 * j)) & 7))) & 0xFF) << (8 * j);
    return r;
#endif
}

// IEEE binary16 word to binary32, exact (NaN payloads kept in the high fraction bits; on
// the device the conversion instruction, whose NaN is the canonical one).
NF_HD float nf_f16_to_f32(nf_u32 h) {
#ifdef NF_DEVICE_CODE
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)h));
    return f;
#endif
    nf_u32 sign = (h & 0x8000u) << 16;
    nf_u32 e = (h >> 10) & 0x1Fu;
    nf_u32 m = h & 0x3FFu;
    if (e == 0x1Fu) return nf_from_bits(sign | 0x7F800000u | (m << 13));
    if (e != 0) return nf_from_bits(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return nf_from_bits(sign);
    // Subnormal: m·2⁻²⁴, normalized.
    int shift = 0;
    while ((m & 0x400u) == 0) {
        m <<= 1;
        shift++;
    }
    return nf_from_bits(sign | ((nf_u32)(113 - shift) << 23) | ((m & 0x3FFu) << 13));
}

// binary32 to the nearest binary16 word, ties to even; overflow gives ±Inf, NaN a quiet
// NaN.
NF_HD nf_u32 nf_f32_to_f16(float f) {
    nf_u32 x = nf_to_bits(f);
    nf_u32 sign = (x >> 16) & 0x8000u;
    nf_u32 e = (x >> 23) & 0xFFu;
    nf_u32 m = x & 0x7FFFFFu;
    if (e == 0xFFu) return sign | 0x7C00u | (m ? 0x200u | (m >> 13) : 0u);
    int he = (int)e - 127 + 15;
    if (he >= 0x1F) return sign | 0x7C00u;
    if (he <= 0) {
        if (he < -10) return sign; // below half the smallest subnormal
        m |= 0x800000u;
        int shift = 14 - he; // 14..24
        nf_u32 q = m >> shift;
        nf_u32 rem = m & ((1u << shift) - 1u);
        nf_u32 half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return sign | q;
    }
    nf_u32 q = ((nf_u32)he << 10) | (m >> 13);
    nf_u32 rem = m & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++; // may carry into Inf
    return sign | q;
}

NF_HD float nf_bf16_to_f32(nf_u32 h) { return nf_from_bits(h << 16); }

// binary32 to bf16, ties to even; NaN stays a quiet NaN of the same sign.
NF_HD nf_u32 nf_f32_to_bf16(float f) {
    nf_u32 x = nf_to_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (x >> 16) | 0x40u;
    return (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
}

// E4M3FN word to binary32, exact (0x7F / 0xFF are NaN).
NF_HD float nf_e4m3fn_to_f32(nf_u32 w) {
#ifdef NF_DEVICE_CODE
    // The code's bits moved into a binary16 word (exponent bias 15 for 7: every value,
    // subnormals included, times 2⁻⁸), widened by the device's conversion and scaled back
    // by 2⁸ (exact); 0x7F / 0xFF are NaN.
    if ((w & 0x7Fu) == 0x7Fu) return nf_from_bits(((w & 0x80u) << 24) | 0x7FC00000u);
    return nf_mul(nf_f16_to_f32(((w & 0x80u) << 8) | ((w & 0x7Fu) << 7)), 256.0f);
#endif
    nf_u32 sign = (w & 0x80u) << 24;
    nf_u32 e = (w >> 3) & 0xFu;
    nf_u32 m = w & 7u;
    if (e == 0xFu && m == 7u) return nf_from_bits(sign | 0x7FC00000u);
    if (e != 0) return nf_from_bits(sign | ((e + 120u) << 23) | (m << 20));
    // Subnormal m·2⁻⁹ (exact in binary32): m is 0..7.
    return nf_from_bits(sign | nf_to_bits(nf_mul((float)m, 0.001953125f)));
}

// The eight-lane tree every family ends with: t[i] = a[i] + a[i+4], u[i] = t[i] + t[i+2],
// u[0] + u[1].
NF_HD float nf_tree8(const float* a) {
    float t0 = nf_add(a[0], a[4]), t1 = nf_add(a[1], a[5]);
    float t2 = nf_add(a[2], a[6]), t3 = nf_add(a[3], a[7]);
    return nf_add(nf_add(t0, t2), nf_add(t1, t3));
}
