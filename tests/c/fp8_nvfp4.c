/* A C99 program over the FP8 row and NVFP4 exports of the public header: encoders, layout
 * pack/unpack, validation and decoding, with values worked out by hand in the comments.
 * Compiled with -std=c99 -pedantic -Wall -Wextra -Werror by tests/fp8_nvfp4_c.rs. */
#include "ninfer.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

int main(void) {
  size_t sizes[NINFER_MAX_PLANES];
  ninfer_weight_view v;
  float out[32];
  char msg[256];

  /* fp8_e4m3fn_row_bf16, 2 x 3: row 0 has max |x| = 448, so its scale is 1.0 (BF16
   * 0x3F80) and its codes are the E4M3FN words of the values; row 1 is all zero. */
  {
    const float src[6] = {448.0f, -1.5f, 0.25f, 0.0f, 0.0f, -0.0f};
    uint8_t codes[6], scales[4];
    CHECK(ninfer_layout_plane_sizes(NINFER_FORMAT_FP8_E4M3FN_ROW_BF16, NINFER_LAYOUT_ROW_SCALE_V1,
                                    2, 3, sizes, NINFER_MAX_PLANES) == NINFER_STATUS_OK);
    CHECK(sizes[0] == 6 && sizes[1] == 4 && sizes[2] == 0);
    CHECK(ninfer_fp8_row_maxabs(NINFER_FORMAT_FP8_E4M3FN_ROW_BF16, NINFER_DTYPE_F32, src, 6, 2, 3,
                                codes, 6, scales, 4) == NINFER_STATUS_OK);
    CHECK(codes[0] == 0x7E && codes[1] == 0xBC && codes[2] == 0x28);
    CHECK(codes[3] == 0 && codes[4] == 0 && codes[5] == 0);
    CHECK(scales[0] == 0x80 && scales[1] == 0x3F && scales[2] == 0 && scales[3] == 0);
    memset(&v, 0, sizeof v);
    v.format = NINFER_FORMAT_FP8_E4M3FN_ROW_BF16;
    v.layout = NINFER_LAYOUT_ROW_SCALE_V1;
    v.rows = 2;
    v.cols = 3;
    v.planes[0].ptr = codes;
    v.planes[0].len = 6;
    v.planes[1].ptr = scales;
    v.planes[1].len = 4;
    CHECK(ninfer_fp8_row_validate(&v) == NINFER_STATUS_OK);
    CHECK(ninfer_decode_row(&v, 0, out, 3) == NINFER_STATUS_OK);
    CHECK(out[0] == 448.0f && out[1] == -1.5f && out[2] == 0.25f);
    /* A NaN code is refused by validation and by decoding, with the row in the message. */
    codes[4] = 0xFF;
    out[0] = 7.0f;
    CHECK(ninfer_fp8_row_validate(&v) == NINFER_STATUS_INVALID_ENCODING);
    CHECK(ninfer_decode_row(&v, 1, out, 3) == NINFER_STATUS_INVALID_ENCODING);
    CHECK(out[0] == 7.0f);
    ninfer_last_error_message(msg, sizeof msg);
    CHECK(strstr(msg, "row 1") != NULL);
    /* A NaN source is refused. */
    {
      float bad[6];
      memcpy(bad, src, sizeof bad);
      bad[4] = bad[4] / bad[4]; /* 0/0 */
      CHECK(ninfer_fp8_row_maxabs(NINFER_FORMAT_FP8_E4M3FN_ROW_BF16, NINFER_DTYPE_F32, bad, 6, 2, 3,
                                  codes, 6, scales, 4) == NINFER_STATUS_NON_FINITE_SOURCE);
    }
  }

  /* fp8_e4m3fn_row_fp16 through pack/unpack: scale 2^-7 (binary16 0x2000), codes 0.75,
   * -3, 2^-9 → 0.005859375, -0.0234375, 2^-16. */
  {
    const uint8_t codes[3] = {0x34, 0xC4, 0x01};
    const uint16_t scale = 0x2000;
    uint8_t rows[5], codes2[3];
    uint16_t scale2 = 0;
    CHECK(ninfer_fp8_row_pack(NINFER_FORMAT_FP8_E4M3FN_ROW_FP16, 1, 3, codes, 3, &scale, 1, rows,
                              5, NULL, 0) == NINFER_STATUS_OK);
    CHECK(rows[0] == 0x00 && rows[1] == 0x20 && rows[2] == 0x34);
    memset(&v, 0, sizeof v);
    v.format = NINFER_FORMAT_FP8_E4M3FN_ROW_FP16;
    v.layout = NINFER_LAYOUT_ROW_INTERLEAVED_V1;
    v.rows = 1;
    v.cols = 3;
    v.planes[0].ptr = rows;
    v.planes[0].len = 5;
    CHECK(ninfer_decode_row(&v, 0, out, 3) == NINFER_STATUS_OK);
    CHECK(out[0] == 0.005859375f && out[1] == -0.0234375f && out[2] == 1.52587890625e-05f);
    CHECK(ninfer_fp8_row_unpack(&v, codes2, 3, &scale2, 1) == NINFER_STATUS_OK);
    CHECK(memcmp(codes2, codes, 3) == 0 && scale2 == 0x2000);
  }

  /* nvfp4, 1 x 16: max |x| = 6 → d_w = 2688 / 6 = 448, block scale E4M3FN(448) = 0x7E. */
  {
    float src[16];
    uint8_t codes[8], scales[512], divs[4], lin[1] = {0};
    float d;
    int i;
    for (i = 0; i < 16; ++i) src[i] = 0.0f;
    src[0] = 6.0f;
    src[1] = -3.0f;
    CHECK(ninfer_layout_plane_sizes(NINFER_FORMAT_NVFP4, NINFER_LAYOUT_BLOCK_SCALE_K16_M128X4_V1,
                                    1, 16, sizes, NINFER_MAX_PLANES) == NINFER_STATUS_OK);
    CHECK(sizes[0] == 8 && sizes[1] == 512 && sizes[2] == 4);
    CHECK(ninfer_nvfp4_quantize(NINFER_DTYPE_F32, src, 16, 1, 16, 1, codes, 8, scales, 512, divs,
                                4) == NINFER_STATUS_OK);
    memcpy(&d, divs, 4); /* little-endian host */
    CHECK(d == 448.0f);
    CHECK(scales[0] == 0x7E && codes[0] == 0xD7); /* 6 → 0x7, -3 → 0xD */
    memset(&v, 0, sizeof v);
    v.format = NINFER_FORMAT_NVFP4;
    v.layout = NINFER_LAYOUT_BLOCK_SCALE_K16_M128X4_V1;
    v.rows = 1;
    v.cols = 16;
    v.planes[0].ptr = codes;
    v.planes[0].len = 8;
    v.planes[1].ptr = scales;
    v.planes[1].len = 512;
    v.planes[2].ptr = divs;
    v.planes[2].len = 4;
    CHECK(ninfer_nvfp4_validate(&v) == NINFER_STATUS_OK);
    CHECK(ninfer_decode_row(&v, 0, out, 16) == NINFER_STATUS_OK);
    CHECK(out[0] == 6.0f && out[1] == -3.0f && out[2] == 0.0f);
    CHECK(ninfer_nvfp4_unpack_scales(1, 1, scales, 512, lin, 1) == NINFER_STATUS_OK);
    CHECK(lin[0] == 0x7E);
    /* Non-zero padding and a -0 scale are refused; K = 8 is not an nvfp4 shape. */
    scales[1] = 0x38;
    CHECK(ninfer_nvfp4_validate(&v) == NINFER_STATUS_INVALID_ENCODING);
    scales[1] = 0;
    scales[0] = 0x80;
    CHECK(ninfer_nvfp4_validate(&v) == NINFER_STATUS_INVALID_ENCODING);
    CHECK(ninfer_layout_plane_sizes(NINFER_FORMAT_NVFP4, NINFER_LAYOUT_BLOCK_SCALE_K16_M128X4_V1,
                                    1, 8, sizes, NINFER_MAX_PLANES) == NINFER_STATUS_BAD_SHAPE);
  }

  printf("fp8/nvfp4 C99: %d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
