/* A C99 program using the public header: lookups, info, refused inputs, and a decode of
 * hand-made GGUF Q8_0 and Q4_0 blocks whose values are worked out by hand below.
 * Compiled with -std=c99 -pedantic -Wall -Wextra -Werror by tests/c_api.rs. */
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

static unsigned bits_of(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  return u;
}

int main(void) {
  uint32_t fmt = 999, layout = 999;
  ninfer_format_info info;
  char msg[256];
  size_t n;

  /* Versions: header macros and the linked library agree. */
  CHECK(ninfer_version_major() == NINFER_VERSION_MAJOR);
  CHECK(ninfer_version_minor() == NINFER_VERSION_MINOR);
  CHECK(ninfer_version_patch() == NINFER_VERSION_PATCH);
  CHECK(ninfer_abi_version() == NINFER_ABI_VERSION);
  CHECK(strlen(ninfer_version()) >= 5);

  /* Lookups by exact canonical name. */
  CHECK(ninfer_format_count() == 30);
  CHECK(ninfer_format_lookup("q4_g64_fp16", &fmt) == NINFER_STATUS_OK);
  CHECK(fmt == NINFER_FORMAT_Q4_G64_FP16);
  CHECK(ninfer_format_lookup("gguf_q4_k", &fmt) == NINFER_STATUS_OK);
  CHECK(fmt == NINFER_FORMAT_GGUF_Q4_K);
  fmt = 12345;
  CHECK(ninfer_format_lookup("Q4", &fmt) == NINFER_STATUS_UNKNOWN_FORMAT);
  CHECK(fmt == 12345); /* outputs untouched on failure */
  n = ninfer_last_error_message(msg, sizeof msg);
  CHECK(n > 0 && n < sizeof msg && strstr(msg, "Q4") != NULL);
  CHECK(ninfer_last_error_message(NULL, 0) == n);
  CHECK(ninfer_format_lookup(NULL, &fmt) == NINFER_STATUS_NULL_POINTER);
  CHECK(ninfer_format_lookup("bf16", NULL) == NINFER_STATUS_NULL_POINTER);
  CHECK(ninfer_format_from_ggml_type(12, &fmt) == NINFER_STATUS_OK);
  CHECK(fmt == NINFER_FORMAT_GGUF_Q4_K);
  CHECK(ninfer_format_from_ggml_type(3, &fmt) == NINFER_STATUS_UNREGISTERED_TYPE);
  ninfer_last_error_message(msg, sizeof msg);
  CHECK(strstr(msg, "Q4_1") != NULL);
  CHECK(ninfer_format_from_ggml_type(1, &fmt) == NINFER_STATUS_UNREGISTERED_TYPE);
  CHECK(strcmp(ninfer_format_name(NINFER_FORMAT_NVFP4), "nvfp4") == 0);
  CHECK(ninfer_format_name(30) == NULL);
  CHECK(strcmp(ninfer_status_name(NINFER_STATUS_SIZE_MISMATCH), "SIZE_MISMATCH") == 0);

  CHECK(ninfer_format_get_info(NINFER_FORMAT_GGUF_Q6_K, &info) == NINFER_STATUS_OK);
  CHECK(info.block_values == 256 && info.block_bytes == 210 && info.ggml_type == 14);
  CHECK(info.bits_per_weight == 6.5625);
  CHECK(info.layout == NINFER_LAYOUT_GGUF_BLOCKS_V1);
  CHECK(ninfer_format_get_info(NINFER_FORMAT_Q8_G32_FP16, &info) == NINFER_STATUS_OK);
  CHECK(info.code_min == -127 && info.code_max == 127 && info.qmax == 127);
  CHECK(info.bits_per_weight == 8.5);

  CHECK(ninfer_layout_lookup("row_split_k128_v1", &layout) == NINFER_STATUS_OK);
  CHECK(layout == NINFER_LAYOUT_ROW_SPLIT_K128_V1);
  CHECK(ninfer_format_layout_compatible(NINFER_FORMAT_Q4_G64_FP16, layout) == NINFER_STATUS_OK);
  CHECK(ninfer_format_layout_compatible(NINFER_FORMAT_GGUF_Q8_0, layout) ==
        NINFER_STATUS_INCOMPATIBLE_LAYOUT);
  CHECK(ninfer_format_layout_compatible(NINFER_FORMAT_GGUF_Q8_0, 77) == NINFER_STATUS_UNKNOWN_LAYOUT);

  {
    /* Two rows of K = 32 gguf_q8_0: one 34-byte block per row.
     * Row 0: d = 0.5 (0x3800), q[j] = j - 16  ->  w[j] = (j - 16) * 0.5
     * Row 1: d = -2^-24 (0x8001, negative subnormal), q[j] = 127 - j. */
    uint8_t blocks[68];
    float out[32];
    size_t sizes[NINFER_MAX_PLANES];
    ninfer_weight_view v;
    int j;
    blocks[0] = 0x00; blocks[1] = 0x38;
    for (j = 0; j < 32; ++j) blocks[2 + j] = (uint8_t)(int8_t)(j - 16);
    blocks[34] = 0x01; blocks[35] = 0x80;
    for (j = 0; j < 32; ++j) blocks[36 + j] = (uint8_t)(int8_t)(127 - j);

    CHECK(ninfer_layout_plane_sizes(NINFER_FORMAT_GGUF_Q8_0, NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 32,
                                    sizes, NINFER_MAX_PLANES) == NINFER_STATUS_OK);
    CHECK(sizes[0] == 68 && sizes[1] == 0 && sizes[2] == 0);

    memset(&v, 0, sizeof v);
    v.format = NINFER_FORMAT_GGUF_Q8_0;
    v.layout = NINFER_LAYOUT_GGUF_BLOCKS_V1;
    v.rows = 2;
    v.cols = 32;
    v.planes[0].ptr = blocks;
    v.planes[0].len = sizeof blocks;
    CHECK(ninfer_weight_view_check(&v) == NINFER_STATUS_OK);
    CHECK(ninfer_decode_row(&v, 0, out, 32) == NINFER_STATUS_OK);
    for (j = 0; j < 32; ++j) CHECK(out[j] == (float)(j - 16) * 0.5f);
    CHECK(bits_of(out[16]) == 0x00000000u); /* 0 * 0.5 = +0 */
    CHECK(ninfer_decode_row(&v, 1, out, 32) == NINFER_STATUS_OK);
    CHECK(out[0] == -127.0f * 5.9604644775390625e-8f);
    CHECK(bits_of(out[31]) == 0xB6C00000u); /* q = 96: -96 * 2^-24 = -1.5 * 2^-18 */

    /* Refused inputs, each with its own status; out stays untouched. */
    out[0] = 42.0f;
    CHECK(ninfer_decode_row(&v, 2, out, 32) == NINFER_STATUS_ROW_OUT_OF_RANGE);
    CHECK(ninfer_decode_row(&v, 0, out, 31) == NINFER_STATUS_BUFFER_TOO_SMALL);
    CHECK(ninfer_decode_row(&v, 0, NULL, 32) == NINFER_STATUS_NULL_POINTER);
    CHECK(ninfer_decode_row(NULL, 0, out, 32) == NINFER_STATUS_NULL_POINTER);
    CHECK(out[0] == 42.0f);
    v.planes[0].len = 67;
    CHECK(ninfer_decode_row(&v, 0, out, 32) == NINFER_STATUS_SIZE_MISMATCH);
    v.planes[0].len = 68;
    v.cols = 48;
    CHECK(ninfer_decode_row(&v, 0, out, 48) == NINFER_STATUS_BAD_SHAPE);
    v.cols = 32;
    v.rows = UINT64_MAX / 2;
    CHECK(ninfer_decode_row(&v, 0, out, 32) == NINFER_STATUS_OVERFLOW);
    v.rows = 2;
    v.planes[0].ptr = NULL;
    CHECK(ninfer_decode_row(&v, 0, out, 32) == NINFER_STATUS_NULL_POINTER);
    v.planes[0].ptr = blocks;
    v.layout = NINFER_LAYOUT_CONTIGUOUS_LE_V1;
    CHECK(ninfer_decode_row(&v, 0, out, 32) == NINFER_STATUS_INCOMPATIBLE_LAYOUT);
    v.layout = NINFER_LAYOUT_GGUF_BLOCKS_V1;
    v.format = 30;
    CHECK(ninfer_decode_row(&v, 0, out, 32) == NINFER_STATUS_UNKNOWN_FORMAT);
    CHECK(out[0] == 42.0f);
  }

  {
    /* One row of K = 32 gguf_q4_0: d = 1.0 (0x3C00); byte j holds element j (low nibble)
     * and element j + 16 (high nibble); w = (nibble - 8) * d. */
    uint8_t block[18];
    float out[32];
    ninfer_weight_view v;
    int j;
    block[0] = 0x00; block[1] = 0x3C;
    for (j = 0; j < 16; ++j) block[2 + j] = (uint8_t)((15 - j) << 4 | j);
    memset(&v, 0, sizeof v);
    v.format = NINFER_FORMAT_GGUF_Q4_0;
    v.layout = NINFER_LAYOUT_GGUF_BLOCKS_V1;
    v.rows = 1;
    v.cols = 32;
    v.planes[0].ptr = block;
    v.planes[0].len = sizeof block;
    CHECK(ninfer_decode_row(&v, 0, out, 32) == NINFER_STATUS_OK);
    for (j = 0; j < 16; ++j) {
      CHECK(out[j] == (float)(j - 8));
      CHECK(out[j + 16] == (float)(7 - j));
    }
  }

  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
