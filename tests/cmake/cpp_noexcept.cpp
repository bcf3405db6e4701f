// ninfer.hpp with -fno-exceptions: only the try_* API exists, results carry the errors.
#include "ninfer.hpp"

#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

static_assert(NINFER_HPP_EXCEPTIONS == 0, "built with -fno-exceptions");

int main() {
  int checks = 0, failures = 0;
  auto check = [&](bool ok, int line) {
    ++checks;
    if (!ok) {
      ++failures;
      std::fprintf(stderr, "cpp_noexcept.cpp:%d: check failed\n", line);
    }
  };
  ninfer::result<ninfer::format> f = ninfer::try_format_lookup("gguf_q4_0");
  check(f.ok() && *f == NINFER_FORMAT_GGUF_Q4_0, __LINE__);
  // One row of K = 32 gguf_q4_0, d = 1.0: byte j holds element j (low nibble) and element
  // j + 16 (high nibble); w = nibble - 8.
  std::vector<std::uint8_t> block(18);
  block[0] = 0x00;
  block[1] = 0x3C;
  for (std::size_t j = 0; j < 16; ++j) block[2 + j] = static_cast<std::uint8_t>((15 - j) << 4 | j);
  ninfer::weight_view w(*f, NINFER_LAYOUT_GGUF_BLOCKS_V1, 1, 32, block);
  ninfer::result<std::vector<float>> row = w.try_decode_row(0);
  check(row.ok() && row->size() == 32, __LINE__);
  if (row.ok()) {
    for (std::size_t j = 0; j < 16; ++j) {
      const int v = static_cast<int>(j);
      check((*row)[j] == static_cast<float>(v - 8), __LINE__);
      check((*row)[j + 16] == static_cast<float>(7 - v), __LINE__);
    }
  }
  // The owning form of linear without exceptions: try_prepare(owned_tensor&&), fp32
  // [[1, 2]] · [3, 4] = 11 by hand.
  ninfer::owned_tensor t;
  t.format = NINFER_FORMAT_FP32;
  t.layout = NINFER_LAYOUT_CONTIGUOUS_LE_V1;
  t.rows = 1;
  t.cols = 2;
  t.planes[0] = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40};  // 1.0f, 2.0f
  ninfer::result<ninfer::linear> lin = ninfer::linear::try_prepare(std::move(t));
  check(lin.ok(), __LINE__);
  if (lin.ok()) {
    std::vector<float> x = {3.0f, 4.0f}, y(1, 0.0f);
    check((*lin).try_forward(x, 1, y).ok() && y[0] == 11.0f, __LINE__);
  }
  ninfer::result<std::vector<float>> bad = w.try_decode_row(1);
  check(bad.code() == NINFER_STATUS_ROW_OUT_OF_RANGE && !bad.message().empty(), __LINE__);
  // CUDA without exceptions: the try_* forms only; no device on the test machines.
  const ninfer::result<std::uint32_t> count = ninfer::cuda::try_device_count();
  check(count.code() == NINFER_STATUS_NO_DEVICE && !count.message().empty(), __LINE__);
  const ninfer::result<ninfer::cuda::linear> up = ninfer::cuda::linear::try_prepare(w);
  check(!up.ok() && !up.message().empty(), __LINE__);
  std::printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
