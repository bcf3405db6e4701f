// The CUDA kernels of `linear` and row decoding. The arithmetic is the nf_*.cuh headers'
// (compiled for the host and tested bit for bit against the CPU path); the kernels here
// only index.
//
// GEMV mapping (M ≤ 8 activation rows per launch; grid.y walks larger M): a block of 128
// threads serves 16 weight rows; the 8 threads of a row own its 8 accumulator lanes, so
// thread j runs lane j's chain serially — elements k ≡ j (mod 8) in the exact family,
// blocks b ≡ j (mod 8) in the q8_1 family — exactly the CPU's order, and the group's lanes
// meet in the CPU's tree through three shuffles. No host synchronisation, no allocation:
// a launch can be captured in a CUDA graph.
#include "nf_blocks.cuh"
#include "nf_q8_1.cuh"

#define NF_MMAX 8
#define NF_ROWS_PER_BLOCK 16

// The CPU's tree over the 8 lanes of a row group (lane 0 ends with the result): t[i] =
// a[i] + a[i+4], u[i] = t[i] + t[i+2], u[0] + u[1].
__device__ __forceinline__ float nf_group_tree(float a) {
    float t = nf_add(a, __shfl_down_sync(0xFFFFFFFFu, a, 4, 8));
    float u = nf_add(t, __shfl_down_sync(0xFFFFFFFFu, t, 2, 8));
    return nf_add(u, __shfl_down_sync(0xFFFFFFFFu, u, 1, 8));
}

// q8_1 blocks of x [m][k] (k a multiple of 32): codes q [m][k] and stored scales d
// [m][k/32] (binary32). One thread per block.
extern "C" __global__ void nf_quantize_q8_1(const void* x, int x_dtype, int m, int k, nf_i8* q, float* d) {
    nf_u64 b = (nf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    nf_u64 nb = (nf_u64)m * (nf_u64)(k / 32);
    if (b >= nb) return;
    float v[NF_QK8_1];
    for (int j = 0; j < NF_QK8_1; j++) v[j] = nf_load_x(x, x_dtype, 32 * b + j);
    nf_i32 sum;
    d[b] = nf_q8_1_block(v, q + 32 * b, &sum);
}

// ok[r] = whether activation row r may meet fp8 / nvfp4 rows in their scaled order. One
// block of 256 threads per row.
extern "C" __global__ void nf_scaled_x_rows(const void* x, int x_dtype, int k, int tiny, int sum, nf_u8* ok) {
    __shared__ nf_u32 mx_s[256];
    __shared__ int small_s[256];
    nf_u64 base = (nf_u64)blockIdx.x * (nf_u64)k;
    nf_u32 mx = 0;
    int small = 0;
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
        nf_u32 a = nf_to_bits(nf_load_x(x, x_dtype, base + j)) & 0x7FFFFFFFu;
        mx = a > mx ? a : mx;
        small |= nf_tiny(a, tiny) ? 1 : 0;
    }
    mx_s[threadIdx.x] = mx;
    small_s[threadIdx.x] = small;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) {
            nf_u32 o = mx_s[threadIdx.x + s];
            mx_s[threadIdx.x] = o > mx_s[threadIdx.x] ? o : mx_s[threadIdx.x];
            small_s[threadIdx.x] |= small_s[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) ok[blockIdx.x] = nf_scaled_x_final(mx_s[0], small_s[0] != 0, k, sum) ? 1 : 0;
}

// ---- staging: a chunk of the block's rows in shared memory ----

// Shared-memory bytes per staged row of a plane holding C bytes per chunk: C rounded up to
// 16, and 16 more, which is room for the row's bytes at any offset 0..15 (below) and makes
// the rows of a warp start 4 banks apart (32 more measured up to 2.8 times slower for the
// byte-read formats: their lanes' blocks then meet in fewer banks).
__host__ __device__ constexpr int nf_srow(int c) { return c ? (c + 15) / 16 * 16 + 16 : 0; }

// Where run r of `nf_stage` begins in shared memory: its source address modulo 16 past the
// row's start, so that 16-byte-aligned source words land on 16-byte-aligned shared words.
__device__ __forceinline__ int nf_stage_offset(const nf_u8* src) { return (int)((nf_u64)src & 15); }

// q = a / b and r = a mod b for 0 <= a < 2^20 and 0 < b < 2^20: the quotient of the
// binary32 values (within one of the exact one), then corrected.
__device__ __forceinline__ void nf_divmod(int a, int b, int& q, int& r) {
    q = __float2int_rz(__fdividef((float)a, (float)b));
    r = a - q * b;
    if (r < 0) {
        q--;
        r += b;
    } else if (r >= b) {
        q++;
        r -= b;
    }
}

// One 16-byte asynchronous copy from global to shared memory.
__device__ __forceinline__ void nf_cp16(nf_u8* to, const nf_u8* from) {
    nf_u32 sa = (nf_u32)__cvta_generic_to_shared(to);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(from) : "memory");
}

// Starts copying `rows` runs of `nb` bytes (run r from src_r = src + r·stride) to dst +
// r·dst_stride + nf_stage_offset(src_r) with the block's threads, by 16-byte asynchronous
// copies (`nf_stage_wait` waits for them) and, at the two ends of the whole range, plain
// loads. Reads nothing before the first run's start or after the last run's end.
__device__ __forceinline__ void nf_stage(const nf_u8* src, nf_u64 stride, int rows, int nb, nf_u8* dst, int dst_stride) {
    // Thread t takes words t, t + 128, ... of the rows × units words; its row r and word c
    // advance by steps found once (no division per word).
    const bool aligned = (((nf_u64)src | stride | (nf_u64)nb) & 15) == 0;
    const int units = aligned ? nb >> 4 : nb / 16 + 2;
    if (units == 0) return;
    int r, c, dr, dc;
    nf_divmod(threadIdx.x, units, r, c);
    nf_divmod(blockDim.x, units, dr, dc);
    if (aligned) {
        // Every run aligned: 16-byte words only (the common case, and the cheapest loop).
        while (r < rows) {
            nf_cp16(dst + r * dst_stride + 16 * c, src + (nf_u64)r * stride + 16 * c);
            c += dc;
            r += dr;
            if (c >= units) {
                c -= units;
                r++;
            }
        }
        return;
    }
    // Runs at any offset: every 16-byte word that holds bytes of a run and lies between the
    // first run's start and the last run's end (bytes of the same plane or buffer: a word at
    // a run's edge brings neighbouring bytes along, which land beside the staged run and are
    // never read) by an asynchronous copy; the bytes of the first run's first and the last
    // run's last partial word by plain loads.
    const nf_u8* lo = src;
    const nf_u8* hi = src + (nf_u64)(rows - 1) * stride + nb;
    for (; r < rows;) {
        const nf_u8* run = src + (nf_u64)r * stride;
        const nf_u8* end = run + nb;
        const nf_u8* at = (const nf_u8*)((nf_u64)run & ~(nf_u64)15) + 16 * c;
        nf_u8* to = dst + r * dst_stride + 16 * c;
        if (at >= lo && at + 16 <= hi && at < end) {
            nf_cp16(to, at);
        } else if (at < end) {
            // A partial word: its bytes inside the run in pieces of the largest size (8, 4,
            // 2 or 1) that both ends of the run are aligned to.
            const nf_u64 a = ((nf_u64)run | (nf_u64)end) & 7;
            if (a == 0) {
                for (int j = 0; j < 16; j += 8)
                    if (at + j >= run && at + j < end) *(nf_u64*)(to + j) = __ldg((const unsigned long long*)(at + j));
            } else if ((a & 3) == 0) {
                for (int j = 0; j < 16; j += 4)
                    if (at + j >= run && at + j < end) *(nf_u32*)(to + j) = __ldg((const unsigned int*)(at + j));
            } else if ((a & 1) == 0) {
                for (int j = 0; j < 16; j += 2)
                    if (at + j >= run && at + j < end) *(nf_u16*)(to + j) = __ldg((const unsigned short*)(at + j));
            } else {
                for (int j = 0; j < 16; j++)
                    if (at + j >= run && at + j < end) to[j] = __ldg(at + j);
            }
        }
        c += dc;
        r += dr;
        if (c >= units) {
            c -= units;
            r++;
        }
    }
}

// `nf_stage` for blocks of NF_THREADS threads where a full chunk's runs hold NB bytes: runs
// of NB bytes at 16-byte-aligned addresses take a loop whose steps are constants.
#define NF_THREADS 128
template <int NB>
__device__ __forceinline__ void nf_stage_chunk(const nf_u8* src, nf_u64 stride, int rows, int nb, nf_u8* dst, int dst_stride) {
    if constexpr (NB % 16 == 0 && NB > 0) {
        if (nb == NB && (((nf_u64)src | stride) & 15) == 0) {
            constexpr int U = NB / 16, DR = NF_THREADS / U, DC = NF_THREADS % U;
            int r = threadIdx.x / U, c = threadIdx.x % U;
            while (r < rows) {
                nf_cp16(dst + r * dst_stride + 16 * c, src + (nf_u64)r * stride + 16 * c);
                c += DC;
                r += DR;
                if (DC != 0 && c >= U) {
                    c -= U;
                    r++;
                }
            }
            return;
        }
    }
    nf_stage(src, stride, rows, nb, dst, dst_stride);
}

// Waits for this thread's asynchronous copies (then `__syncthreads` makes every thread's
// visible).
__device__ __forceinline__ void nf_stage_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// The staged planes of the block's rows row0 .. row0 + live for the chunk of CK values at
// k0 (CK a multiple of NF_CK, k0 of CK).
template <int F, int CK>
__device__ __forceinline__ void nf_stage_weight(const nf_weight& w, int row0, int live, int k0, nf_u8* s0, nf_u8* s1, nf_u8* s2) {
    constexpr int C0 = nf_chunk_bytes<F>(0), C1 = nf_chunk_bytes<F>(1), C2 = nf_chunk_bytes<F>(2);
    const int kp = nf_plane_cols<F>(w.cols), kc = kp - k0 < CK ? kp - k0 : CK;
    const nf_wrow g = nf_row<F>(w, row0);
    if (C0) nf_stage_chunk<C0 * CK / NF_CK>(g.p0 + (nf_u64)k0 * C0 / NF_CK, w.stride[0], live, kc * C0 / NF_CK, s0, nf_srow(C0 * CK / NF_CK));
    if (C1) nf_stage_chunk<C1 * CK / NF_CK>(g.p1 + (nf_u64)k0 * C1 / NF_CK, w.stride[1], live, kc * C1 / NF_CK, s1, nf_srow(C1 * CK / NF_CK));
    if (C2) nf_stage_chunk<C2 * CK / NF_CK>(g.p2 + (nf_u64)k0 * C2 / NF_CK, w.stride[2], live, kc * C2 / NF_CK, s2, nf_srow(C2 * CK / NF_CK));
}

// Shared memory of a block: its 16 rows' staged planes for one chunk of CK values.
template <int F, int CK>
struct nf_wstage {
    static constexpr int S0 = nf_srow(nf_chunk_bytes<F>(0) * CK / NF_CK), S1 = nf_srow(nf_chunk_bytes<F>(1) * CK / NF_CK),
                         S2 = nf_srow(nf_chunk_bytes<F>(2) * CK / NF_CK);
    __align__(16) nf_u8 b[NF_ROWS_PER_BLOCK * (S0 + S1 + S2)];
    __device__ nf_u8* p0(int r) { return b + r * S0; }
    __device__ nf_u8* p1(int r) { return b + NF_ROWS_PER_BLOCK * S0 + r * S1; }
    __device__ nf_u8* p2(int r) { return b + NF_ROWS_PER_BLOCK * (S0 + S1) + r * S2; }
};

// Row r's (block row rho's) staged chunk at k0: `nf_chunk_row` with each staged plane at
// its offset in shared memory.
template <int F, int CK>
__device__ __forceinline__ nf_wrow nf_staged_row(const nf_wrow& r, nf_wstage<F, CK>& ws, int rho, int k0) {
    constexpr int C0 = nf_chunk_bytes<F>(0), C1 = nf_chunk_bytes<F>(1), C2 = nf_chunk_bytes<F>(2);
    const nf_u8* s0 = C0 ? ws.p0(rho) + nf_stage_offset(r.p0 + (nf_u64)k0 * C0 / NF_CK) : 0;
    const nf_u8* s1 = C1 ? ws.p1(rho) + nf_stage_offset(r.p1 + (nf_u64)k0 * C1 / NF_CK) : 0;
    const nf_u8* s2 = C2 ? ws.p2(rho) + nf_stage_offset(r.p2 + (nf_u64)k0 * C2 / NF_CK) : 0;
    return nf_chunk_row<F>(r, s0, s1, s2, k0);
}

// Static shared memory of a block: two buffers (the chunk being computed and the next
// one, whose copies are in flight meanwhile), each with the 16 rows' staged planes and
// NF_MMAX activation rows. The budget leaves room for NF_MIN_BLOCKS blocks per
// multiprocessor (228 KiB of shared memory on sm_90 and sm_100, 164 KiB on sm_80, 100 KiB
// on sm_86, sm_89 and sm_120), and a chunk holds the most values whose two buffers fit it
// (the smallest chunk when none fits).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000)
#define NF_SMEM_BYTES (48 * 1024)
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 800
#define NF_SMEM_BYTES (40 * 1024)
#else
#define NF_SMEM_BYTES (24 * 1024)
#endif
template <int F>
__host__ __device__ constexpr int nf_wstage_bytes(int ck) {
    return NF_ROWS_PER_BLOCK * (nf_srow(nf_chunk_bytes<F>(0) * ck / NF_CK) + nf_srow(nf_chunk_bytes<F>(1) * ck / NF_CK) +
                                nf_srow(nf_chunk_bytes<F>(2) * ck / NF_CK));
}
// The exact family's activation rows: f32 or bf16 words, staged at any offset 0..15.
__host__ __device__ constexpr int nf_xrow_exact(int ck) { return ck * 4 + 16; }
// The q8_1 family's: codes, then binary32 scales (at any offset 0..15).
__host__ __device__ constexpr int nf_drow_q8(int ck) { return ck / 32 * 4 + 16; }
// The exact family's chunk: 512, 256 or 128 values (every plane holds whole bytes, groups
// and nvfp4 tiles per 128 values; the lanes take elements, so any multiple of 8 keeps
// their order).
template <int F>
__host__ __device__ constexpr int nf_ck_exact() {
    return 2 * (nf_wstage_bytes<F>(512) + NF_MMAX * nf_xrow_exact(512)) <= NF_SMEM_BYTES   ? 512
           : 2 * (nf_wstage_bytes<F>(256) + NF_MMAX * nf_xrow_exact(256)) <= NF_SMEM_BYTES ? 256
                                                                                           : 128;
}
// The q8_1 family's: 1024, 512 or 256 values (a whole number of super-blocks, and of 8
// blocks, so that chunk-relative block b keeps lane b mod 8).
template <int F>
__host__ __device__ constexpr int nf_ck_q8() {
    return 2 * (nf_wstage_bytes<F>(1024) + NF_MMAX * (1024 + nf_drow_q8(1024))) <= NF_SMEM_BYTES  ? 1024
           : 2 * (nf_wstage_bytes<F>(512) + NF_MMAX * (512 + nf_drow_q8(512))) <= NF_SMEM_BYTES ? 512
                                                                                             : 256;
}

// One chunk of an exact-family row for MC activation rows (mc of them live): lane `lane`'s
// elements e ≡ lane (mod 8), in increasing e, from the staged row c and activation rows
// xs + i·xstride + xoff[i].
template <int F, int MC>
__device__ __forceinline__ void nf_exact_chunk(const nf_wrow& c, int lane, int kc, const nf_u8* xs, int xstride, const nf_u8* xoff,
                                               int x_dtype, int mc, bool any_scaled, bool any_plain, const bool* scaled, float rs,
                                               float* acc) {
    for (int e = lane; e < kc; e += 8) {
        float vs = any_scaled ? nf_value<F>(c, e, true, rs) : 0.0f;
        float vp = any_plain ? nf_value<F>(c, e, false, rs) : 0.0f;
#pragma unroll
        for (int i = 0; i < MC; i++) {
            if (MC == 1 || i < mc) acc[i] = nf_fma(scaled[i] ? vs : vp, nf_load_x(xs + i * xstride + xoff[i], x_dtype, e), acc[i]);
        }
    }
}

// Element i of an activation row of dtype XD (a word-aligned row in shared memory).
template <int XD>
__device__ __forceinline__ float nf_x(const nf_u8* x, int i) {
    if constexpr (XD == NF_DTYPE_F32) return ((const float*)x)[i];
    else if constexpr (XD == NF_DTYPE_BF16) return nf_bf16_to_f32(((const nf_u16*)x)[i]);
    else return nf_f16_to_f32(((const nf_u16*)x)[i]);
}

// One chunk of an exact-family row for R activation rows of dtype XD (row i at xr[i],
// aligned to its words, all in the same order `scaled`): lane `lane`'s elements e ≡ lane
// (mod 8), in increasing e, the same operations as `nf_exact_chunk` with what they share
// hoisted: a group's scale read once for its elements, the fp8 row's multiplier chosen
// once, bf16 and fp32 words read by one load where the staged row is aligned to them.
template <int F, int XD, int R>
__device__ __forceinline__ void nf_exact_lean(const nf_wrow& c, int lane, int kc, const nf_u8* const* xr, bool scaled, float rs,
                                              float* acc) {
    auto put = [&](int e, float v) {
#pragma unroll
        for (int i = 0; i < R; i++) acc[i] = nf_fma(v, nf_x<XD>(xr[i], e), acc[i]);
    };
    if constexpr (nf_is_grouped<F>()) {
        constexpr int G = nf_group<F>();
        const int ng = kc / G;
        for (int g = 0; g < ng; g++) {
            const float s = nf_grouped_scale(c, g);
#pragma unroll
            for (int t = 0; t < G / 8; t++) {
                const int e = g * G + lane + 8 * t;
                put(e, nf_mul(s, (float)nf_grouped_code<F>(c, e)));
            }
        }
        for (int e = ng * G + lane; e < kc; e += 8) put(e, nf_value<F>(c, e, false, rs));
    } else if constexpr (F == NF_FMT_BF16) {
        if (((nf_u64)c.p0 & 1) == 0) {
            const nf_u16* p = (const nf_u16*)c.p0;
#pragma unroll 4
            for (int e = lane; e < kc; e += 8) put(e, nf_bf16_to_f32(p[e]));
        } else {
            for (int e = lane; e < kc; e += 8) put(e, nf_value<F>(c, e, false, rs));
        }
    } else if constexpr (F == NF_FMT_FP32) {
        if (((nf_u64)c.p0 & 3) == 0) {
            const float* p = (const float*)c.p0;
#pragma unroll 4
            for (int e = lane; e < kc; e += 8) put(e, p[e]);
        } else {
            for (int e = lane; e < kc; e += 8) put(e, nf_value<F>(c, e, false, rs));
        }
    } else if constexpr (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_FP8_E4M3FN_ROW_FP16) {
        // nf_value's two orders: the code's value times 2⁻⁸ (scaled) or times the row's
        // multiplier (plain).
        const float f = scaled ? 0.00390625f : rs;
#pragma unroll 4
        for (int e = lane; e < kc; e += 8) put(e, nf_mul(nf_e4m3fn_to_f32(c.p0[e]), f));
    } else {
        for (int e = lane; e < kc; e += 8) put(e, nf_value<F>(c, e, scaled, rs));
    }
}

// The exact family: y[m][n] (+ bias) for weight rows of this block and activation rows
// m0 .. m0 + 8 (m0 = 8·blockIdx.y). xok: per activation row, whether the scaled order may
// apply (fp8 / nvfp4; NULL otherwise). K runs in chunks whose weight and activation words
// the block first copies to shared memory with wide loads.
template <int F>
__device__ void nf_exact(const nf_weight& w, const void* x, int x_dtype, int m, const nf_u8* xok, const float* bias, void* y,
                         int y_dtype) {
    constexpr int CK = nf_ck_exact<F>(), XS = nf_xrow_exact(CK);
    static_assert(2 * (nf_wstage_bytes<F>(CK) + NF_MMAX * XS) <= 48 * 1024, "static shared memory");
    __shared__ nf_wstage<F, CK> ws[2];
    __shared__ __align__(16) nf_u8 xs[2][NF_MMAX][XS];
    const int rho = threadIdx.x / 8, lane = threadIdx.x % 8;
    const int row0 = blockIdx.x * NF_ROWS_PER_BLOCK, row = row0 + rho;
    const int live_rows = w.rows - row0 < NF_ROWS_PER_BLOCK ? w.rows - row0 : NF_ROWS_PER_BLOCK;
    const int m0 = blockIdx.y * NF_MMAX, mc = m - m0 < NF_MMAX ? m - m0 : NF_MMAX;
    const bool live = row < w.rows;
    const int k = w.cols;
    const int xsize = x_dtype == NF_DTYPE_F32 ? 4 : 2;
    float acc[NF_MMAX];
    bool scaled[NF_MMAX];
    float rs = 0.0f;
    const nf_wrow r = nf_row<F>(w, live ? row : row0);
    bool row_ok = false;
    if constexpr (F == NF_FMT_NVFP4) {
        rs = nf_nvfp4_divisor(r);
        row_ok = nf_nvfp4_scaled_row(rs);
    } else if constexpr (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_FP8_E4M3FN_ROW_FP16) {
        rs = nf_fp8_scale<F>(r);
        row_ok = nf_fp8_scaled_row(rs);
    }
    bool any_scaled = false, any_plain = false;
#pragma unroll
    for (int i = 0; i < NF_MMAX; i++) {
        acc[i] = 0.0f;
        scaled[i] = i < mc && row_ok && xok && xok[m0 + i];
        any_scaled |= i < mc && scaled[i];
        any_plain |= i < mc && !scaled[i];
    }
    // Chunk c is copied into buffer c & 1 while chunk c - 1 is computed.
    const nf_u8* x0 = (const nf_u8*)x + (nf_u64)m0 * k * xsize;
    auto stage = [&](int k0, int buf) {
        nf_stage_weight<F, CK>(w, row0, live_rows, k0, ws[buf].p0(0), ws[buf].p1(0), ws[buf].p2(0));
        const int kc = k - k0 < CK ? k - k0 : CK;
        if (xsize == 4)
            nf_stage_chunk<4 * CK>(x0 + (nf_u64)k0 * 4, (nf_u64)k * 4, mc, kc * 4, &xs[buf][0][0], XS);
        else
            nf_stage_chunk<2 * CK>(x0 + (nf_u64)k0 * 2, (nf_u64)k * 2, mc, kc * 2, &xs[buf][0][0], XS);
    };
    stage(0, 0);
    for (int k0 = 0, buf = 0; k0 < k; k0 += CK, buf ^= 1) {
        const int kc = k - k0 < CK ? k - k0 : CK;
        // This thread's copies of chunk c have landed; the barrier makes every thread's
        // visible and tells that chunk c - 1 (buffer buf ^ 1) is no longer read.
        nf_stage_wait();
        __syncthreads();
        if (k0 + CK < k) stage(k0 + CK, buf ^ 1);
        nf_u8 xoff[NF_MMAX];
#pragma unroll
        for (int i = 0; i < NF_MMAX; i++) xoff[i] = i < mc ? (nf_u8)nf_stage_offset(x0 + ((nf_u64)i * k + k0) * xsize) : 0;
        if (live) {
            const nf_wrow c = nf_staged_row<F, CK>(r, ws[buf], rho, k0);
            // The lean loops: one activation row, or a full group of 8 in one order, whose
            // staged rows are aligned to their words.
            const nf_u8* xr[NF_MMAX];
            bool al = true, same = true;
#pragma unroll
            for (int i = 0; i < NF_MMAX; i++) {
                xr[i] = xs[buf][i] + xoff[i];
                al = al && (i >= mc || ((nf_u64)xr[i] & (xsize - 1)) == 0);
                same = same && (i >= mc || scaled[i] == scaled[0]);
            }
            if (mc == 1 && al && x_dtype == NF_DTYPE_F32)
                nf_exact_lean<F, NF_DTYPE_F32, 1>(c, lane, kc, xr, scaled[0], rs, acc);
            else if (mc == 1 && al && x_dtype == NF_DTYPE_BF16)
                nf_exact_lean<F, NF_DTYPE_BF16, 1>(c, lane, kc, xr, scaled[0], rs, acc);
            else if (mc == NF_MMAX && al && same && x_dtype == NF_DTYPE_F32)
                nf_exact_lean<F, NF_DTYPE_F32, NF_MMAX>(c, lane, kc, xr, scaled[0], rs, acc);
            else if (mc == NF_MMAX && al && same && x_dtype == NF_DTYPE_BF16)
                nf_exact_lean<F, NF_DTYPE_BF16, NF_MMAX>(c, lane, kc, xr, scaled[0], rs, acc);
            else if (mc == 1)
                nf_exact_chunk<F, 1>(c, lane, kc, xs[buf][0], XS, xoff, x_dtype, 1, any_scaled, any_plain, scaled, rs, acc);
            else
                nf_exact_chunk<F, NF_MMAX>(c, lane, kc, xs[buf][0], XS, xoff, x_dtype, mc, any_scaled, any_plain, scaled, rs,
                                           acc);
        }
    }
#pragma unroll
    for (int i = 0; i < NF_MMAX; i++) {
        if (i >= mc) break;
        float t = nf_group_tree(acc[i]);
        if (live && lane == 0) {
            float v = nf_with_bias(nf_finish<F>(t, scaled[i], rs), bias, row);
            nf_store_y(y, y_dtype, (nf_u64)(m0 + i) * (nf_u64)w.rows + row, v);
        }
    }
}

// One chunk of a q8_1-family row for MC activation rows (mc of them live): lane `lane`'s
// blocks b ≡ lane (mod 8), in increasing b, from the staged row c, activation codes xs +
// i·ck and scales at ds + i·dstride + doff[i] (bytes). With one activation row, a block's
// codes are read into registers with 16-byte loads.
template <int F, int MC>
__device__ __forceinline__ void nf_q8_chunk(const nf_wrow& c, int lane, int kc, const nf_i8* xs, const nf_u8* ds, int dstride,
                                            const nf_u8* doff, int ck, int mc, float* acc, float* accm) {
    constexpr int V = nf_q8_block_values<F>();
    for (int b = lane; b < kc / V; b += 8) {
#pragma unroll
        for (int i = 0; i < MC; i++) {
            if (MC > 1 && i >= mc) break;
            const float dx = ((const float*)(ds + i * dstride + doff[i]))[V * b / 32];
            nf_bdot p;
            if constexpr (MC == 1) {
                uint4 xv[V / 16];
#pragma unroll
                for (int h = 0; h < V / 16; h++) xv[h] = *(const uint4*)(xs + V * b + 16 * h);
                p = nf_q8_block<F>(c, b, (const nf_i8*)xv, dx);
            } else {
                // Several activation rows: the codes read where they are staged (fewer
                // registers than a copy per row).
                p = nf_q8_block<F>(c, b, xs + i * ck + V * b, dx);
            }
            acc[i] = nf_fma(p.d, (float)p.t, acc[i]);
            if constexpr (nf_has_min<F>()) accm[i] = nf_fma(p.dm, (float)p.tm, accm[i]);
        }
    }
}

// The q8_1 family on activations quantized by nf_quantize_q8_1: codes q [m][k], scales d
// [m][k/32]. K runs in chunks of 1024 values whose weight words, activation codes and
// scales the block first copies to shared memory with wide loads; a thread's lane takes
// the chunk's blocks b ≡ lane (mod 8), in increasing b.
template <int F>
__device__ void nf_q8(const nf_weight& w, const nf_i8* q, const float* d, int m, const float* bias, void* y, int y_dtype) {
    constexpr int CK = nf_ck_q8<F>(), DS = nf_drow_q8(CK);
    static_assert(2 * (nf_wstage_bytes<F>(CK) + NF_MMAX * (CK + DS)) <= 48 * 1024, "static shared memory");
    __shared__ nf_wstage<F, CK> ws[2];
    __shared__ __align__(16) nf_i8 xs[2][NF_MMAX][CK];
    __shared__ __align__(16) nf_u8 ds[2][NF_MMAX][DS];
    const int rho = threadIdx.x / 8, lane = threadIdx.x % 8;
    const int row0 = blockIdx.x * NF_ROWS_PER_BLOCK, row = row0 + rho;
    const int live_rows = w.rows - row0 < NF_ROWS_PER_BLOCK ? w.rows - row0 : NF_ROWS_PER_BLOCK;
    const int m0 = blockIdx.y * NF_MMAX, mc = m - m0 < NF_MMAX ? m - m0 : NF_MMAX;
    const bool live = row < w.rows;
    const int k = w.cols;
    constexpr int V = nf_q8_block_values<F>();
    float acc[NF_MMAX], accm[NF_MMAX];
#pragma unroll
    for (int i = 0; i < NF_MMAX; i++) acc[i] = accm[i] = 0.0f;
    const nf_wrow r = nf_row<F>(w, live ? row : row0);
    bool fast = true;
    if constexpr (F == NF_FMT_NVFP4) {
        // The row's scale words, scanned by its 8 threads.
        nf_u32 mx = 0, mn = 0xFFu;
        for (int b = lane; b < w.nkb; b += 8) {
            nf_u32 s = nf_nvfp4_word(r, b);
            mx = s > mx ? s : mx;
            if (s != 0 && s < mn) mn = s;
        }
#pragma unroll
        for (int o = 1; o < 8; o *= 2) {
            nf_u32 a = __shfl_xor_sync(0xFFFFFFFFu, mx, o, 8), b = __shfl_xor_sync(0xFFFFFFFFu, mn, o, 8);
            mx = a > mx ? a : mx;
            mn = b < mn ? b : mn;
        }
        fast = nf_nvfp4_fast_final(nf_nvfp4_divisor(r), mx, mn);
    }
    const float dw = F == NF_FMT_NVFP4 ? nf_nvfp4_divisor(r) : 0.0f;
    // Chunk c is copied into buffer c & 1 while chunk c - 1 is computed. The codes' rows
    // are 16-byte aligned (an aligned workspace, K a multiple of 32).
    const nf_i8* q0 = q + (nf_u64)m0 * k;
    const float* d0 = d + (nf_u64)m0 * k / 32;
    auto stage = [&](int k0, int buf) {
        const int kc = k - k0 < CK ? k - k0 : CK;
        nf_stage_weight<F, CK>(w, row0, live_rows, k0, ws[buf].p0(0), ws[buf].p1(0), ws[buf].p2(0));
        nf_stage_chunk<CK>((const nf_u8*)(q0 + k0), (nf_u64)k, mc, kc, (nf_u8*)&xs[buf][0][0], CK);
        nf_stage_chunk<CK / 8>((const nf_u8*)(d0 + k0 / 32), (nf_u64)k / 32 * 4, mc, kc / 32 * 4, &ds[buf][0][0], DS);
    };
    stage(0, 0);
    for (int k0 = 0, buf = 0; k0 < k; k0 += CK, buf ^= 1) {
        const int kc = k - k0 < CK ? k - k0 : CK;
        // This thread's copies of chunk c have landed; the barrier makes every thread's
        // visible and tells that chunk c - 1 (buffer buf ^ 1) is no longer read.
        nf_stage_wait();
        __syncthreads();
        if (k0 + CK < k) stage(k0 + CK, buf ^ 1);
        if (!live) continue;
        nf_u8 doff[NF_MMAX];
#pragma unroll
        for (int i = 0; i < NF_MMAX; i++) doff[i] = i < mc ? (nf_u8)nf_stage_offset((const nf_u8*)(d0 + ((nf_u64)i * k + k0) / 32)) : 0;
        const nf_wrow c = nf_staged_row<F, CK>(r, ws[buf], rho, k0);
        if (fast) {
            if (mc == 1)
                nf_q8_chunk<F, 1>(c, lane, kc, xs[buf][0], ds[buf][0], DS, doff, CK, 1, acc, accm);
            else
                nf_q8_chunk<F, NF_MMAX>(c, lane, kc, xs[buf][0], ds[buf][0], DS, doff, CK, mc, acc, accm);
        } else {
            // nvfp4 rows outside the block order's range: exact weights times x̂.
            for (int e = lane; e < kc; e += 8) {
                float wv = nf_nvfp4_exact_weight(c, e, dw);
#pragma unroll
                for (int i = 0; i < NF_MMAX; i++) {
                    if (i >= mc) break;
                    const float dx = ((const float*)(ds[buf][i] + doff[i]))[e / 32];
                    acc[i] = nf_fma(wv, nf_mul(dx, (float)xs[buf][i][e]), acc[i]);
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < NF_MMAX; i++) {
        if (i >= mc) break;
        float l = acc[i];
        if constexpr (nf_has_min<F>()) l = nf_sub(acc[i], accm[i]);
        float t = nf_group_tree(l);
        if (live && lane == 0) {
            if constexpr (F == NF_FMT_NVFP4) {
                if (fast) t = nf_div(t, dw);
            }
            nf_store_y(y, y_dtype, (nf_u64)(m0 + i) * (nf_u64)w.rows + row, nf_with_bias(t, bias, row));
        }
    }
}

// Rows first .. first + count of the weight decoded to f32 or bf16 (row-major [count][K]):
// the exact represented values (the plain order's values; GGUF: ggml's dequantized
// values). One thread per element.
template <int F>
__device__ void nf_decode(const nf_weight& w, int first, int count, void* out, int out_dtype) {
    nf_u64 i = (nf_u64)blockIdx.x * blockDim.x + threadIdx.x;
    nf_u64 k = (nf_u64)w.cols;
    if (i >= (nf_u64)count * k) return;
    int row = first + (int)(i / k), e = (int)(i % k);
    nf_store_y(out, out_dtype, i, nf_decoded<F>(nf_row<F>(w, row), e));
}

// Blocks per multiprocessor the register budget is sized for: 4 (at most 128 registers);
// 3 on sm_120 and later, whose scheduling of the Q6_K loop wants more than 128.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
#define NF_MIN_BLOCKS 3
#else
#define NF_MIN_BLOCKS 4
#endif

// One entry point per format: nf_exact_<format number>, nf_q8_<n>, nf_decode_<n>.
#define NF_DECODE_KERNEL(F)                                                                                          \
    extern "C" __global__ void nf_decode_##F(nf_weight w, int first, int count, void* out, int out_dtype) {          \
        nf_decode<F>(w, first, count, out, out_dtype);                                                               \
    }
#define NF_EXACT_KERNELS(F)                                                                                          \
    extern "C" __global__ void __launch_bounds__(128, NF_MIN_BLOCKS) nf_exact_##F(nf_weight w, const void* x, int x_dtype, int m,   \
                                                                  const nf_u8* xok, const float* bias, void* y,      \
                                                                  int y_dtype) {                                     \
        nf_exact<F>(w, x, x_dtype, m, xok, bias, y, y_dtype);                                                        \
    }                                                                                                                \
    NF_DECODE_KERNEL(F)
#define NF_Q8_KERNEL(F)                                                                                              \
    extern "C" __global__ void __launch_bounds__(128, NF_MIN_BLOCKS) nf_q8_##F(nf_weight w, const nf_i8* q, const float* d, int m,  \
                                                               const float* bias, void* y, int y_dtype) {            \
        nf_q8<F>(w, q, d, m, bias, y, y_dtype);                                                                      \
    }

// Format numbers (NF_FMT_*, from the registry) spelled as literals for the kernel names;
// a test (src/linear/cuda/device_tests.rs) checks that every format the plan table gives
// the CUDA backend has its entry points here.
NF_EXACT_KERNELS(0)   // bf16
NF_EXACT_KERNELS(1)   // fp32
NF_EXACT_KERNELS(3)   // q2_g64_fp16
NF_EXACT_KERNELS(4)   // q4_g64_fp16
NF_EXACT_KERNELS(5)   // q5_g64_fp16
NF_EXACT_KERNELS(6)   // q6_g64_fp16
NF_EXACT_KERNELS(7)   // q8_g32_fp16
NF_EXACT_KERNELS(8)   // t2_g128_fp16
NF_EXACT_KERNELS(9)   // nvfp4
NF_EXACT_KERNELS(10)  // fp8_e4m3fn_row_bf16
NF_EXACT_KERNELS(11)  // fp8_e4m3fn_row_fp16
NF_Q8_KERNEL(3)
NF_Q8_KERNEL(4)
NF_Q8_KERNEL(5)
NF_Q8_KERNEL(6)
NF_Q8_KERNEL(7)
NF_Q8_KERNEL(8)
NF_Q8_KERNEL(9)
NF_Q8_KERNEL(12)  // gguf_q8_0
NF_Q8_KERNEL(13)  // gguf_q4_0
NF_Q8_KERNEL(14)  // gguf_q5_0
NF_Q8_KERNEL(15)  // gguf_q2_0
NF_Q8_KERNEL(16)  // gguf_q2_k
NF_Q8_KERNEL(17)  // gguf_q3_k
NF_Q8_KERNEL(18)  // gguf_q4_k
NF_Q8_KERNEL(19)  // gguf_q5_k
NF_Q8_KERNEL(20)  // gguf_q6_k
NF_Q8_KERNEL(25)  // gguf_iq4_nl
NF_Q8_KERNEL(28)  // gguf_iq4_xs
NF_Q8_KERNEL(21)  // gguf_iq2_xxs
NF_Q8_KERNEL(22)  // gguf_iq2_xs
NF_Q8_KERNEL(23)  // gguf_iq3_xxs
NF_Q8_KERNEL(24)  // gguf_iq1_s
NF_Q8_KERNEL(26)  // gguf_iq3_s
NF_Q8_KERNEL(27)  // gguf_iq2_s
NF_Q8_KERNEL(29)  // gguf_iq1_m
NF_DECODE_KERNEL(12)  // gguf_q8_0
NF_DECODE_KERNEL(13)  // gguf_q4_0
NF_DECODE_KERNEL(14)  // gguf_q5_0
NF_DECODE_KERNEL(15)  // gguf_q2_0
NF_DECODE_KERNEL(16)  // gguf_q2_k
NF_DECODE_KERNEL(17)  // gguf_q3_k
NF_DECODE_KERNEL(18)  // gguf_q4_k
NF_DECODE_KERNEL(19)  // gguf_q5_k
NF_DECODE_KERNEL(20)  // gguf_q6_k
NF_DECODE_KERNEL(21)  // gguf_iq2_xxs
NF_DECODE_KERNEL(22)  // gguf_iq2_xs
NF_DECODE_KERNEL(23)  // gguf_iq3_xxs
NF_DECODE_KERNEL(24)  // gguf_iq1_s
NF_DECODE_KERNEL(25)  // gguf_iq4_nl
NF_DECODE_KERNEL(26)  // gguf_iq3_s
NF_DECODE_KERNEL(27)  // gguf_iq2_s
NF_DECODE_KERNEL(28)  // gguf_iq4_xs
NF_DECODE_KERNEL(29)  // gguf_iq1_m
