// Uses of ninfer.hpp that would dangle must not compile. Built once per case by
// compile_fail.cmake with -DNINFER_CASE=<n>: case 0 (the same calls written safely) must
// compile; every other case must fail with an error naming a deleted function.
#include "ninfer.hpp"

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#ifndef NINFER_CASE
#error "define NINFER_CASE"
#endif

std::vector<float> forward_case(const std::vector<float>& src, const std::vector<float>& x);
std::vector<float> forward_case(const std::vector<float>& src, const std::vector<float>& x) {
  const ninfer::format f = NINFER_FORMAT_Q8_G32_FP16;
#if NINFER_CASE == 0
  // Safe: a named tensor and a view of it; the owning form; a view over a named vector.
  const ninfer::owned_tensor q = ninfer::quantize_grouped(f, src, 1, 32);
  ninfer::linear borrowed(q.view());
  ninfer::linear owning(ninfer::quantize_grouped(f, src, 1, 32));
  ninfer::result<ninfer::owned_tensor> r = ninfer::try_quantize_grouped(f, src, 1, 32);
  const ninfer::weight_view rv = (*r).view();
  const std::vector<std::uint8_t> block(34);
  const std::array<std::uint8_t, 34> arr{};
  const ninfer::weight_view w(NINFER_FORMAT_GGUF_Q8_0, NINFER_LAYOUT_GGUF_BLOCKS_V1, 1, 32, block);
  const ninfer::weight_view wa(NINFER_FORMAT_GGUF_Q8_0, NINFER_LAYOUT_GGUF_BLOCKS_V1, 1, 32, arr);
  (void)w;
  (void)wa;
  (void)rv;
  (void)borrowed;
  return owning.forward(x, 1);
#elif NINFER_CASE == 1
  // The view of a temporary tensor: its planes are freed at the end of the statement.
  ninfer::linear lin(ninfer::quantize_grouped(f, src, 1, 32).view());
  return lin.forward(x, 1);
#elif NINFER_CASE == 2
  // The same through the non-throwing twin's value().
  const ninfer::weight_view v = ninfer::try_quantize_grouped(f, src, 1, 32).value().view();
  return v.decode_row(0);
#elif NINFER_CASE == 3
  // The same through operator* of a temporary result.
  const ninfer::weight_view v = (*ninfer::try_quantize_grouped(f, src, 1, 32)).view();
  return v.decode_row(0);
#elif NINFER_CASE == 4
  // A plane borrowed from a temporary vector.
  const ninfer::weight_view w(NINFER_FORMAT_GGUF_Q8_0, NINFER_LAYOUT_GGUF_BLOCKS_V1, 1, 32,
                              std::vector<std::uint8_t>(34));
  return w.decode_row(0);
#elif NINFER_CASE == 5
  // A plane borrowed from a temporary std::array.
  const ninfer::weight_view w(NINFER_FORMAT_GGUF_Q8_0, NINFER_LAYOUT_GGUF_BLOCKS_V1, 1, 32,
                              std::array<std::uint8_t, 34>{});
  return w.decode_row(0);
#elif NINFER_CASE == 6
  // A second plane borrowed from a temporary vector.
  const std::vector<std::uint8_t> codes(16);
  const ninfer::weight_view w(NINFER_FORMAT_FP8_E4M3FN_ROW_BF16,
                              NINFER_LAYOUT_ROW_SCALE_V1, 1, 16, codes,
                              std::vector<std::uint8_t>(2));
  return w.decode_row(0);
#else
#error "unknown NINFER_CASE"
#endif
}

int main() { return 0; }
