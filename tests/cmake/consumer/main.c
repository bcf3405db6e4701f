/* Consumer program (C): a lookup and one hand-worked gguf_q8_0 decode. */
#include <ninfer.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  uint32_t f = 0;
  uint8_t block[34];
  float out[32];
  ninfer_weight_view v;
  int j, bad = 0;
  if (ninfer_format_lookup("gguf_q8_0", &f) != NINFER_STATUS_OK) return 1;
  block[0] = 0x00; block[1] = 0x3C; /* d = 1.0 */
  for (j = 0; j < 32; ++j) block[2 + j] = (uint8_t)(int8_t)(j - 16);
  memset(&v, 0, sizeof v);
  v.format = f;
  v.layout = NINFER_LAYOUT_GGUF_BLOCKS_V1;
  v.rows = 1;
  v.cols = 32;
  v.planes[0].ptr = block;
  v.planes[0].len = sizeof block;
  if (ninfer_decode_row(&v, 0, out, 32) != NINFER_STATUS_OK) return 2;
  for (j = 0; j < 32; ++j) bad |= out[j] != (float)(j - 16);
  printf("consumer (C) with ninfer %s: %s\n", ninfer_version(), bad ? "WRONG" : "ok");
  return bad;
}
