// Consumer program (C++17 through ninfer.hpp): a lookup, a decode and a refused input.
#include <ninfer.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  const ninfer::format f = ninfer::format_lookup("gguf_q8_0");
  std::vector<std::uint8_t> block(34);
  block[1] = 0x3C;  // d = 1.0
  for (int j = 0; j < 32; ++j) block[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(j - 16));
  const ninfer::weight_view w(f, NINFER_LAYOUT_GGUF_BLOCKS_V1, 1, 32, block);
  const std::vector<float> row = w.decode_row(0);
  bool bad = row.size() != 32;
  for (int j = 0; j < 32 && !bad; ++j) bad = row[j] != static_cast<float>(j - 16);
  try {
    (void)w.decode_row(1);
    bad = true;
  } catch (const ninfer::error& e) {
    bad = bad || e.code() != NINFER_STATUS_ROW_OUT_OF_RANGE;
  }
  std::printf("consumer (C++) with ninfer %s: %s\n", ninfer::version(), bad ? "WRONG" : "ok");
  return bad ? 1 : 0;
}
