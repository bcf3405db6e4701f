// ninfer.hpp used the way a C++ runtime's artifact loader (src/artifact/formats.cpp) would:
// look a format up by name, build and check a view, decode rows; errors as ninfer::error
// and as ninfer::result. Expected values are worked out by hand (as in tests/c/smoke.c).
#include "ninfer.hpp"

#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

static int failures = 0;
static int checks = 0;
#define CHECK(cond)                                                             \
  do {                                                                          \
    ++checks;                                                                   \
    if (!(cond)) {                                                              \
      ++failures;                                                               \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                           \
  } while (0)

#if defined(EXPECT_STD_SPAN)
static_assert(NINFER_HPP_STD_SPAN == 1, "C++20 build should use std::span");
#else
static_assert(NINFER_HPP_STD_SPAN == 0, "C++17 build uses the pointer + size span");
#endif

static std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// A stand-in opaque handle, to exercise the RAII pattern future handles will use.
struct fake_handle {
  int* frees;
};
static void fake_handle_free(fake_handle* h) {
  if (h != nullptr) {
    ++*h->frees;
    delete h;
  }
}
using fake_owner = ninfer::handle<fake_handle, fake_handle_free>;

// Two rows of K = 32 gguf_q8_0 (34-byte blocks): row 0 d = 0.5 (0x3800), q[j] = j - 16;
// row 1 d = 2.0 (0x4000), q[j] = 127 - j.
static std::vector<std::uint8_t> q8_0_blocks() {
  std::vector<std::uint8_t> b(68);
  b[0] = 0x00;
  b[1] = 0x38;
  for (int j = 0; j < 32; ++j) b[static_cast<std::size_t>(2 + j)] = static_cast<std::uint8_t>(static_cast<std::int8_t>(j - 16));
  b[34] = 0x00;
  b[35] = 0x40;
  for (int j = 0; j < 32; ++j) b[static_cast<std::size_t>(36 + j)] = static_cast<std::uint8_t>(static_cast<std::int8_t>(127 - j));
  return b;
}

int main() {
  CHECK(ninfer::library_matches_header());
  CHECK(ninfer::version_numbers()[0] == NINFER_VERSION_MAJOR &&
        ninfer::version_numbers()[1] == NINFER_VERSION_MINOR &&
        ninfer::version_numbers()[2] == NINFER_VERSION_PATCH);
  CHECK(ninfer::format_at(0) == NINFER_FORMAT_BF16);
  CHECK(ninfer::try_format_at(ninfer::format_count()).code() == NINFER_STATUS_UNKNOWN_FORMAT);
  CHECK(std::string(ninfer::version()) == std::to_string(NINFER_VERSION_MAJOR) + "." +
                                              std::to_string(NINFER_VERSION_MINOR) + "." +
                                              std::to_string(NINFER_VERSION_PATCH));

  // Lookups.
  const ninfer::format f = ninfer::format_lookup("gguf_q8_0");
  CHECK(f == NINFER_FORMAT_GGUF_Q8_0);
  CHECK(ninfer::format_lookup(std::string("q4_g64_fp16")) == NINFER_FORMAT_Q4_G64_FP16);
  CHECK(ninfer::format_from_ggml_type(12) == NINFER_FORMAT_GGUF_Q4_K);
  CHECK(std::strcmp(ninfer::format_name(NINFER_FORMAT_NVFP4), "nvfp4") == 0);
  CHECK(ninfer::format_name(static_cast<ninfer::format>(ninfer::format_count())) == nullptr);
  const ninfer::format_info info = ninfer::format_get_info(f);
  CHECK(info.block_values == 32 && info.block_bytes == 34 && info.ggml_type == 8);
  CHECK(info.layout == NINFER_LAYOUT_GGUF_BLOCKS_V1);
  CHECK(std::strcmp(info.name, "gguf_q8_0") == 0);
  CHECK(ninfer::layout_lookup("row_split_k128_v1") == NINFER_LAYOUT_ROW_SPLIT_K128_V1);
  CHECK(std::strcmp(ninfer::layout_name(NINFER_LAYOUT_GGUF_BLOCKS_V1), "gguf_blocks_v1") == 0);
  const ninfer::plane_sizes_t sizes =
      ninfer::plane_sizes(f, NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 32);
  CHECK(sizes[0] == 68 && sizes[1] == 0 && sizes[2] == 0);

  // Errors as exceptions: status and message.
  bool thrown = false;
  try {
    (void)ninfer::format_lookup("Q4");
  } catch (const ninfer::error& e) {
    thrown = true;
    CHECK(e.code() == NINFER_STATUS_UNKNOWN_FORMAT);
    CHECK(e.message().find("Q4") != std::string::npos);
    CHECK(std::string(e.what()).rfind("UNKNOWN_FORMAT: ", 0) == 0);
  }
  CHECK(thrown);
  thrown = false;
  try {
    ninfer::format_layout_compatible(f, NINFER_LAYOUT_ROW_SPLIT_K128_V1);
  } catch (const ninfer::error& e) {
    thrown = e.code() == NINFER_STATUS_INCOMPATIBLE_LAYOUT;
  }
  CHECK(thrown);
  thrown = false;
  try {
    (void)ninfer::format_from_ggml_type(3);  // Q4_1: not registered
  } catch (const std::runtime_error& e) {    // ninfer::error is a std::runtime_error
    thrown = std::string(e.what()).find("Q4_1") != std::string::npos;
  }
  CHECK(thrown);

  // Errors as values.
  ninfer::result<ninfer::format> r = ninfer::try_format_lookup("q4_g64");
  CHECK(!r && r.code() == NINFER_STATUS_UNKNOWN_FORMAT && !r.message().empty());
  CHECK(r.value_or(NINFER_FORMAT_BF16) == NINFER_FORMAT_BF16);
  r = ninfer::try_format_lookup("bf16");
  CHECK(r.ok() && *r == NINFER_FORMAT_BF16 && r.message().empty());
  CHECK(ninfer::try_format_lookup(nullptr).code() == NINFER_STATUS_NULL_POINTER);
  CHECK(ninfer::try_plane_sizes(f, NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 48).code() ==
        NINFER_STATUS_BAD_SHAPE);

  // A view over hand-made blocks: check, decode into a span and into a vector.
  const std::vector<std::uint8_t> blocks = q8_0_blocks();
  const ninfer::weight_view w(f, info.layout, 2, 32, blocks);
  {
    // Every plane spelling that borrows named storage compiles: a non-const vector, a
    // std::array, a C array, a {pointer, length} pair, a mutable span.
    std::vector<std::uint8_t> mut_blocks = blocks;
    std::array<std::uint8_t, 68> arr{};
    std::uint8_t carr[68] = {};
    std::memcpy(arr.data(), blocks.data(), 68);
    std::memcpy(carr, blocks.data(), 68);
    const ninfer::weight_view a(f, info.layout, 2, 32, mut_blocks);
    const ninfer::weight_view b(f, info.layout, 2, 32, arr);
    const ninfer::weight_view c(f, info.layout, 2, 32, carr);
    const ninfer::weight_view d(f, info.layout, 2, 32, {blocks.data(), blocks.size()});
    const ninfer::weight_view e(f, info.layout, 2, 32, ninfer::span<std::uint8_t>(mut_blocks.data(), 68));
    for (const ninfer::weight_view* v : {&a, &b, &c, &d, &e}) {
      CHECK(v->c_view()->planes[0].len == 68 && v->decode_row(1)[0] == 254.0f);
    }
  }
  CHECK(w.format_id() == f && w.layout_id() == NINFER_LAYOUT_GGUF_BLOCKS_V1);
  CHECK(w.rows() == 2 && w.cols() == 32);
  w.check();
  float out[32];
  w.decode_row(0, out);
  for (int j = 0; j < 32; ++j) CHECK(out[j] == static_cast<float>(j - 16) * 0.5f);
  CHECK(bits_of(out[16]) == 0u);
  const std::vector<float> row1 = w.decode_row(1);
  CHECK(row1.size() == 32);
  for (std::size_t j = 0; j < 32; ++j) CHECK(row1[j] == static_cast<float>(127 - static_cast<int>(j)) * 2.0f);

  // decode_row_as: bf16 words of row 0 are the high halves of the exact f32 values.
  std::vector<std::uint16_t> half(32);
  w.decode_row_as(0, NINFER_DTYPE_BF16, half);
  for (std::size_t j = 0; j < 32; ++j) CHECK(half[j] == static_cast<std::uint16_t>(bits_of(out[j]) >> 16));
  std::vector<std::uint8_t> raw(64);
  w.decode_row_as(1, NINFER_DTYPE_F16, raw);
  CHECK(raw[0] == 0xF0 && raw[1] == 0x5B);  // 254.0 = binary16 0x5BF0, little-endian

  // Refused inputs: exceptions and results, output untouched.
  out[0] = 42.0f;
  thrown = false;
  try {
    w.decode_row(2, out);
  } catch (const ninfer::error& e) {
    thrown = e.code() == NINFER_STATUS_ROW_OUT_OF_RANGE;
  }
  CHECK(thrown);
  CHECK(w.try_decode_row(0, ninfer::span<float>(out, 31)).code() == NINFER_STATUS_BUFFER_TOO_SMALL);
  CHECK(w.try_decode_row_as(0, static_cast<ninfer::dtype>(7), raw).code() ==
        NINFER_STATUS_UNKNOWN_DTYPE);
  CHECK(out[0] == 42.0f);
  const ninfer::weight_view short_view(f, info.layout, 2, 32,
                                       ninfer::bytes(blocks.data(), blocks.size() - 1));
  ninfer::result<void> c = short_view.try_check();
  CHECK(c.code() == NINFER_STATUS_SIZE_MISMATCH && !c.message().empty());
  ninfer::result<std::vector<float>> rv = short_view.try_decode_row(0);
  CHECK(rv.code() == NINFER_STATUS_SIZE_MISMATCH);
  const ninfer::weight_view huge(f, info.layout, UINT64_MAX / 2, 32, blocks);
  CHECK(huge.try_decode_row(0).code() == NINFER_STATUS_OVERFLOW);

  // decode_rows: one call for a row range, the per-row bits; refusals write nothing.
  {
    const std::vector<float> all = w.decode_rows(0, 2);
    const std::vector<float> row0 = w.decode_row(0);
    CHECK(all.size() == 64 && std::memcmp(all.data(), row0.data(), 32 * sizeof(float)) == 0 &&
          std::memcmp(all.data() + 32, row1.data(), 32 * sizeof(float)) == 0);
    std::vector<float> one(32, 42.0f);
    w.decode_rows(1, 1, one);
    CHECK(one == row1);
    std::vector<std::uint16_t> words(64);
    w.decode_rows_as(0, 2, NINFER_DTYPE_BF16, words);
    CHECK(words[31] == static_cast<std::uint16_t>(bits_of(all[31]) >> 16) &&
          words[63] == static_cast<std::uint16_t>(bits_of(all[63]) >> 16));
    std::vector<float> canary(64, 42.0f);
    CHECK(w.try_decode_rows(1, 2, canary).code() == NINFER_STATUS_ROW_OUT_OF_RANGE);
    CHECK(w.try_decode_rows(0, 2, ninfer::span<float>(canary.data(), 63)).code() ==
          NINFER_STATUS_BUFFER_TOO_SMALL);
    CHECK(w.try_decode_rows(1, UINT64_MAX).code() == NINFER_STATUS_OVERFLOW);  // no allocation
    CHECK(w.try_decode_rows(3, 1).code() == NINFER_STATUS_ROW_OUT_OF_RANGE);
    CHECK(std::count(canary.begin(), canary.end(), 42.0f) == 64);
  }

  // quantize_row_q8_1 by hand: x_j = j − 16, amax 16, d = 16/127 stored as binary16 0x3008
  // (0.1259765625), 1/d = 7.9375 exactly, q_0 = −127, q_1 = round(−15·7.9375) = −119.
  {
    std::vector<float> xq(32);
    for (std::size_t j = 0; j < 32; ++j) xq[j] = static_cast<float>(static_cast<int>(j) - 16);
    const ninfer::q8_1_row q = ninfer::quantize_row_q8_1(xq);
    CHECK(q.blocks.size() == 36 && q.blocks[0] == 0x08 && q.blocks[1] == 0x30 &&
          q.blocks[4] == 0x81 && q.blocks[5] == static_cast<std::uint8_t>(-119));
    CHECK(q.x_hat.size() == 32 && q.x_hat[0] == -127.0f * 0.1259765625f && q.x_hat[16] == 0.0f &&
          q.x_hat[17] == 8.0f * 0.1259765625f);
    CHECK(ninfer::try_quantize_row_q8_1(ninfer::span<const float>(xq.data(), 31)).code() ==
          NINFER_STATUS_BAD_SHAPE);
    // quantize_row_q8_k by hand: max −127 (the later +127 does not replace it), iscale 1,
    // d = 1.0f (bytes 00 00 80 3F), 2.5 → 2 and −3.5 → −4 (ties to even), sum of the first
    // 16 codes 2 − 4 − 127 + 127 = −2; the second block is all zero.
    std::vector<float> xk(512, 0.0f);
    xk[0] = 2.5f;
    xk[1] = -3.5f;
    xk[2] = -127.0f;
    xk[3] = 127.0f;
    const std::vector<std::uint8_t> k8 = ninfer::quantize_row_q8_k(xk);
    CHECK(k8.size() == 584 && k8[0] == 0 && k8[1] == 0 && k8[2] == 0x80 && k8[3] == 0x3F &&
          k8[4] == 2 && k8[5] == static_cast<std::uint8_t>(-4) && k8[6] == 0x81 && k8[7] == 127 &&
          k8[260] == static_cast<std::uint8_t>(-2) && k8[261] == 0xFF);
    CHECK(std::count(k8.begin() + 292, k8.end(), 0) == 292);
    CHECK(ninfer::try_quantize_row_q8_k(ninfer::span<const float>(xk.data(), 255)).code() ==
          NINFER_STATUS_BAD_SHAPE);
    // convert: bf16 words to f32 exactly; f32 to binary16 rounded to nearest even.
    const std::vector<std::uint16_t> bf = {0x3F80, 0xC000};
    CHECK(ninfer::to_f32(bf, NINFER_DTYPE_BF16) == std::vector<float>({1.0f, -2.0f}));
    const std::vector<float> big = {65520.0f, 65519.0f, 1.00390625f};
    CHECK(ninfer::from_f32(big, NINFER_DTYPE_F16) ==
          std::vector<std::uint16_t>({0x7C00, 0x7BFF, 0x3C04}));
    CHECK(ninfer::try_to_f32(bf, static_cast<ninfer::dtype>(9)).code() == NINFER_STATUS_UNKNOWN_DTYPE);
  }

  // The C struct is reachable for direct C calls.
  CHECK(ninfer_weight_view_check(w.c_view()) == NINFER_STATUS_OK);
  CHECK(ninfer::last_error_message().empty());

  // Whole-payload validation with the location of the first bad block; row slices.
  w.validate();
  std::vector<std::uint8_t> bad = blocks;
  bad[34] = 0x00;
  bad[35] = 0x7C;  // row 1's d = +Inf
  std::uint64_t bad_row = 9, bad_block = 9;
  ninfer::result<void> vr = ninfer::weight_view(f, info.layout, 2, 32, bad).try_validate(&bad_row, &bad_block);
  CHECK(vr.code() == NINFER_STATUS_INVALID_ENCODING && bad_row == 1 && bad_block == 0);
  std::vector<std::uint8_t> slice(34);
  CHECK(w.rows_copy(1, 1, slice) == 34);
  CHECK(std::memcmp(slice.data(), blocks.data() + 34, 34) == 0);
  std::vector<std::uint8_t> gathered(3 * 34);
  const std::vector<std::uint64_t> idx = {1, 0, 1};
  CHECK(w.rows_gather(idx, gathered) == 3 * 34);
  CHECK(std::memcmp(gathered.data(), blocks.data() + 34, 34) == 0 &&
        std::memcmp(gathered.data() + 34, blocks.data(), 34) == 0);
  const std::vector<std::uint64_t> bad_idx = {0, 2};
  CHECK(w.try_rows_gather(bad_idx, gathered).code() == NINFER_STATUS_INDEX_OUT_OF_RANGE);

  // Quantize round trip, exact by construction: per 32-value group, codes in [-127, 127]
  // with one 127, times a power of two; absmax's scale amax / 127 is that power of two, so
  // every code is exact and decoding gives the source back bit for bit.
  {
    const std::uint64_t rows = 3, cols = 128;
    std::vector<float> src(rows * cols);
    for (std::uint64_t row = 0; row < rows; ++row) {
      for (std::uint64_t k = 0; k < cols; ++k) {
        const int code = (k % 32 == 0) ? 127 : static_cast<int>((row * 131 + k * 37) % 255) - 127;
        const float scale = static_cast<float>(1u << ((row + k / 32) % 5)) / 8.0f;
        src[row * cols + k] = static_cast<float>(code) * scale;
      }
    }
    for (std::uint64_t k = 0; k < 32; ++k) src[2 * cols + 32 + k] = 0.0f;  // one zero group
    ninfer::quantize_provenance prov{};
    const ninfer::owned_tensor q =
        ninfer::quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, src, rows, cols, {}, &prov);
    CHECK(q.layout == NINFER_LAYOUT_ROW_SPLIT_K128_V1 && q.rows == rows && q.cols == cols);
    CHECK(prov.groups == rows * cols / 32 && prov.zero_groups == 1 && prov.method == 0);
    const ninfer::weight_view qv = q.view();
    qv.check();
    int exact = 0;
    for (std::uint64_t row = 0; row < rows; ++row) {
      const std::vector<float> got = qv.decode_row(row);
      for (std::uint64_t k = 0; k < cols; ++k) exact += bits_of(got[k]) == bits_of(src[row * cols + k]);
    }
    CHECK(exact == static_cast<int>(rows * cols));

    ninfer::quantize_options search;
    search.method = NINFER_QUANTIZE_METHOD_GROUPED_SEARCH;
    const ninfer::owned_tensor qs =
        ninfer::quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, src, rows, cols, search, &prov);
    CHECK(prov.method == NINFER_QUANTIZE_METHOD_GROUPED_SEARCH && prov.error <= prov.absmax_error);

    src[5] = std::numeric_limits<float>::quiet_NaN();
    thrown = false;
    try {
      (void)ninfer::quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, src, rows, cols);
    } catch (const ninfer::error& e) {
      thrown = e.code() == NINFER_STATUS_NON_FINITE_SOURCE;
    }
    CHECK(thrown);
    CHECK(ninfer::try_quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, ninfer::source(src.data(), 10),
                                       rows, cols)
              .code() == NINFER_STATUS_SIZE_MISMATCH);

    // The owning form of linear over an encoder's output (no variable holds the tensor)
    // gives the same products, bit for bit, as the borrowing form over a named tensor.
    src[5] = 0.5f;
    const ninfer::owned_tensor named = ninfer::quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, src, rows, cols);
    ninfer::linear borrowing(named.view());
    ninfer::linear owning(ninfer::quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, src, rows, cols));
    CHECK(owning.rows() == rows && owning.cols() == cols && owning.owned() != nullptr);
    std::vector<float> x(2 * cols);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 13) - 6) / 4.0f;
    const std::vector<float> yb = borrowing.forward(x, 2), yo = owning.forward(x, 2);
    int same = 0;
    for (std::size_t i = 0; i < yb.size(); ++i) same += bits_of(yb[i]) == bits_of(yo[i]);
    CHECK(yb.size() == 2 * rows && same == static_cast<int>(yb.size()));
    ninfer::result<ninfer::linear> tried =
        ninfer::linear::try_prepare(ninfer::quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, src, rows, cols));
    CHECK(tried.ok() && (*tried).forward(x, 2) == yb);
  }

  // A source shorter than the claimed shape is refused before any plane is sized from the
  // shape: 2^20 × 2^20 would need over a terabyte of planes (bad_alloc or an ASan abort
  // if allocated). Every encoder helper, with the library's own status and message.
  {
    const std::vector<float> small(16, 1.0f);
    const std::uint64_t big = std::uint64_t{1} << 20;
    ninfer::result<ninfer::owned_tensor> g =
        ninfer::try_quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, small, big, big);
    CHECK(g.code() == NINFER_STATUS_SIZE_MISMATCH && g.message().find("source") != std::string::npos);
    ninfer::result<ninfer::owned_tensor> e =
        ninfer::try_fp8_row_maxabs(NINFER_FORMAT_FP8_E4M3FN_ROW_BF16, small, big, big);
    CHECK(e.code() == NINFER_STATUS_SIZE_MISMATCH && e.message().find("source") != std::string::npos);
    ninfer::result<ninfer::owned_tensor> n = ninfer::try_nvfp4_quantize(small, big, big);
    CHECK(n.code() == NINFER_STATUS_SIZE_MISMATCH && n.message().find("source") != std::string::npos);
    // A matching source with `sources` that do not divide rows, or a huge `sources`.
    const std::vector<float> one(128 * 16, 1.0f);
    CHECK(ninfer::try_nvfp4_quantize(one, 128, 16, 3).code() == NINFER_STATUS_BAD_SHAPE);
    CHECK(ninfer::try_nvfp4_quantize(one, 128, 16, UINT64_MAX).code() == NINFER_STATUS_OVERFLOW);
    CHECK(ninfer::try_nvfp4_quantize(one, 128, 16, 0).code() == NINFER_STATUS_BAD_SHAPE);
    // An overflowing rows × cols is a mismatch too, not a wrapped product.
    CHECK(ninfer::try_quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, small, UINT64_MAX / 2, 4).code() !=
          NINFER_STATUS_OK);
  }

  // fp8 and nvfp4 encoders: outputs pass their format's checks.
  {
    std::vector<float> src(256 * 32);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(static_cast<int>(i % 97) - 48) / 16.0f;
    const ninfer::owned_tensor f8 = ninfer::fp8_row_maxabs(NINFER_FORMAT_FP8_E4M3FN_ROW_BF16, src, 256, 32);
    f8.view().fp8_row_validate();
    const ninfer::owned_tensor n4 = ninfer::nvfp4_quantize(src, 256, 32, 2);
    n4.view().nvfp4_validate();
    CHECK(n4.planes[2].size() == 8 && n4.view().decode_row(255).size() == 32);
  }

  // import_gguf: the q8_0 blocks become q8_g32_fp16 groups with the same values.
  {
    const ninfer::owned_tensor native = ninfer::import_gguf(w, NINFER_FORMAT_Q8_G32_FP16);
    CHECK(native.format == NINFER_FORMAT_Q8_G32_FP16 && native.layout == NINFER_LAYOUT_ROW_SPLIT_K128_V1);
    int same = 0;
    for (std::uint64_t row = 0; row < 2; ++row) {
      const std::vector<float> a = w.decode_row(row), b = native.view().decode_row(row);
      for (std::size_t k = 0; k < 32; ++k) same += bits_of(a[k]) == bits_of(b[k]);
    }
    CHECK(same == 64);
    CHECK(ninfer::try_import_gguf(w, NINFER_FORMAT_Q4_G64_FP16).code() == NINFER_STATUS_UNSUPPORTED);
    // import_gguf_ternary: a TQ2_0 block of words 2 (code +1) with d = -0.5 decodes to -0.5;
    // a word 3 is refused.
    std::vector<std::uint8_t> tq2(66, 0xAA);
    tq2[64] = 0x00;
    tq2[65] = 0xB8;
    const ninfer::owned_tensor t2 = ninfer::import_gguf_ternary(35, tq2, 1, 256);
    CHECK(t2.format == NINFER_FORMAT_T2_G128_FP16 && t2.view().decode_row(0)[255] == -0.5f);
    tq2[3] = 0xFF;
    CHECK(ninfer::try_import_gguf_ternary(35, tq2, 1, 256).code() == NINFER_STATUS_INVALID_ENCODING);
    CHECK(ninfer::try_import_gguf_ternary(35, tq2, 1, 384).code() == NINFER_STATUS_BAD_SHAPE);
    const std::vector<std::uint8_t> codes(2 * 16, 0x38);  // E4M3FN 1.0
    const std::vector<std::uint16_t> scales = {0x3F80, 0x4000};  // bf16 1.0, 2.0
    const ninfer::owned_tensor f8 = ninfer::fp8_row_pack(NINFER_FORMAT_FP8_E4M3FN_ROW_BF16, 2, 16, codes, scales);
    f8.view().fp8_row_validate();
    CHECK(f8.view().decode_row(1)[15] == 2.0f);
    std::vector<std::uint8_t> codes2(32);
    std::vector<std::uint16_t> scales2(2);
    ninfer::fp8_row_unpack(f8.view(), codes2, scales2);
    CHECK(codes2 == codes && scales2 == scales);
    // nvfp4 scales: 130 rows × 5 blocks swizzled into 256 × 8 bytes and back.
    std::vector<std::uint8_t> lin_scales(130 * 5), swz(256 * 8), back(130 * 5);
    for (std::size_t i = 0; i < lin_scales.size(); ++i) lin_scales[i] = static_cast<std::uint8_t>(i % 127);
    ninfer::nvfp4_pack_scales(130, 5, lin_scales, swz);
    ninfer::nvfp4_unpack_scales(130, 5, swz, back);
    CHECK(back == lin_scales);
    CHECK(ninfer::try_nvfp4_pack_scales(130, 5, lin_scales, ninfer::span<std::uint8_t>(swz.data(), 100)).code() ==
          NINFER_STATUS_SIZE_MISMATCH);
  }

  // linear: y = x · Wᵀ + bias over fp32 weights [[0,1,2],[3,4,5]], by hand.
  {
    const std::vector<float> wf = {0, 1, 2, 3, 4, 5};
    std::vector<std::uint8_t> wb(wf.size() * 4);
    std::memcpy(wb.data(), wf.data(), wb.size());
    const ninfer::weight_view wv(NINFER_FORMAT_FP32, NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 3, wb);
    CHECK(ninfer::linear_supported(NINFER_FORMAT_FP32, NINFER_LAYOUT_CONTIGUOUS_LE_V1));
    CHECK(!ninfer::linear_supported(NINFER_FORMAT_INT32, NINFER_LAYOUT_CONTIGUOUS_LE_V1));
    ninfer::linear lin(wv);
    CHECK(lin && lin.rows() == 2 && lin.cols() == 3);
    const std::vector<float> x = {1, 2, 3, 0, 0, 1};
    const std::vector<float> bias = {10, 20};
    const std::vector<float> y = lin.forward(x, 2, ninfer::bias_ref(bias));
    CHECK(y.size() == 4 && y[0] == 18 && y[1] == 46 && y[2] == 12 && y[3] == 25);

    // The natural calls with non-const vectors (x, y, bias): the third positional range is
    // the output. Expected values by hand: x·Wᵀ = [[8, 26], [2, 5]], + bias [10, 20].
    {
      std::vector<float> xm = x, ym(4, -1.0f), bm = bias;
      lin.forward(xm, 2, ym);
      CHECK(ym[0] == 8 && ym[1] == 26 && ym[2] == 2 && ym[3] == 5);
      std::fill(ym.begin(), ym.end(), -1.0f);
      CHECK(lin.try_forward(xm, 2, ym).ok());
      CHECK(ym[0] == 8 && ym[1] == 26 && ym[2] == 2 && ym[3] == 5);
      std::fill(ym.begin(), ym.end(), -1.0f);
      lin.forward(xm, 2, ym, bm);
      CHECK(ym[0] == 18 && ym[1] == 46 && ym[2] == 12 && ym[3] == 25);
      std::fill(ym.begin(), ym.end(), -1.0f);
      CHECK(lin.try_forward(xm, 2, ym, bm).ok());
      CHECK(ym[0] == 18 && ym[1] == 46 && ym[2] == 12 && ym[3] == 25);
      const std::vector<float> yb = lin.forward(xm, 2, ninfer::bias_ref(bm));
      CHECK(yb == std::vector<float>({18, 46, 12, 25}));
      ninfer::result<std::vector<float>> ry = lin.try_forward(xm, 2, ninfer::bias_ref(bm));
      CHECK(ry.ok() && *ry == yb);
      const std::vector<float> y0 = lin.forward(xm, 2);
      CHECK(y0 == std::vector<float>({8, 26, 2, 5}));
      // forward_rows: column 1 only, x rows 4 apart, y rows 3 apart (canaries elsewhere).
      {
        const std::vector<float> xs = {1, 2, 3, -7, 0, 0, 1};
        std::vector<float> ys(5, -1.0f);
        lin.forward_rows(xs, 2, 4, 1, 2, ys, 3, bm);
        CHECK(ys == std::vector<float>({-1, 46, -1, -1, 25}));
        ys.assign(5, -1.0f);
        CHECK(lin.try_forward_rows(xs, 2, 4, 0, 1, ys, 3).ok());
        CHECK(ys == std::vector<float>({8, -1, -1, 2, -1}));
        ninfer::result<void> bad_range = lin.try_forward_rows(xs, 2, 4, 2, 1, ys, 3);
        CHECK(!bad_range.ok() && bad_range.code() == NINFER_STATUS_INVALID_ARGUMENT);
        CHECK(ys == std::vector<float>({8, -1, -1, 2, -1}));
      }
      float ya[4] = {0, 0, 0, 0};
      lin.forward(xm, 2, ya);  // a C array is an output range too
      CHECK(ya[0] == 8 && ya[3] == 5);
      CHECK(bm == bias && xm == x);  // inputs untouched
    }

    // The owning form: the linear keeps a hand-built tensor's planes after the tensor
    // variable is gone (moved from), with the same products as the borrowing form.
    {
      ninfer::linear owning;
      {
        ninfer::owned_tensor t;
        t.format = NINFER_FORMAT_FP32;
        t.layout = NINFER_LAYOUT_CONTIGUOUS_LE_V1;
        t.rows = 2;
        t.cols = 3;
        t.planes[0] = wb;
        owning = ninfer::linear(std::move(t));
      }
      std::vector<std::uint8_t> clobber(wb.size(), 0xFF);  // reuse of freed memory shows up
      CHECK(owning.owned() != nullptr && owning.owned()->planes[0] == wb);
      CHECK(owning.forward(x, 2, ninfer::bias_ref(bias)) == y);
      ninfer::linear moved_owner = std::move(owning);  // the planes move with the handle
      CHECK(moved_owner.forward(x, 2) == std::vector<float>({8, 26, 2, 5}));
      CHECK(!ninfer::linear::try_prepare(ninfer::owned_tensor()).ok());  // empty tensor refused
      (void)clobber;
    }
    lin.set_threads(1);
    // fp32 has only the exact activation profile; unknown numbers are refused.
    CHECK(lin.try_set_activation(NINFER_ACTIVATION_Q8_1).code() == NINFER_STATUS_UNSUPPORTED);
    CHECK(lin.try_set_activation(7).code() == NINFER_STATUS_INVALID_ARGUMENT);
    lin.set_activation(NINFER_ACTIVATION_EXACT);
    CHECK(ninfer::try_linear_activation_supported(NINFER_FORMAT_Q4_G64_FP16, NINFER_LAYOUT_ROW_SPLIT_K128_V1,
                                                  NINFER_ACTIVATION_Q8_1)
              .value());
    CHECK(!ninfer::try_linear_activation_supported(NINFER_FORMAT_FP32, NINFER_LAYOUT_CONTIGUOUS_LE_V1,
                                                   NINFER_ACTIVATION_Q8_1)
               .value());
    ninfer::linear moved = std::move(lin);  // the handle moves; freed once (ASan/Valgrind)
    CHECK(!lin && moved);
    CHECK(moved.try_forward(ninfer::span<const float>(x.data(), 2), 1).code() ==
          NINFER_STATUS_BUFFER_TOO_SMALL);
    std::vector<float> y1(2);
    CHECK(moved.try_forward(x.data(), 12, NINFER_DTYPE_F32, 1, y1.data(), 8, NINFER_DTYPE_F16)
              .code() == NINFER_STATUS_UNSUPPORTED);
    thrown = false;
    try {
      const std::vector<std::uint8_t> ints(24);
      ninfer::linear refused(ninfer::weight_view(NINFER_FORMAT_INT32, NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 3, ints));
    } catch (const ninfer::error& e) {
      thrown = e.code() == NINFER_STATUS_UNSUPPORTED;
    }
    CHECK(thrown);
  }

  // CUDA (ninfer::cuda) on a machine without GPU or driver: NO_DEVICE with a message,
  // outputs untouched, NULL refused; compiled() agrees with the build (NINFER_CUDA).
  {
#ifdef EXPECT_CUDA_COMPILED
    CHECK(ninfer::cuda::compiled() == (EXPECT_CUDA_COMPILED != 0));
#endif
    const ninfer::result<std::uint32_t> count = ninfer::cuda::try_device_count();
    CHECK(count.code() == NINFER_STATUS_NO_DEVICE && !count.message().empty());
    CHECK((count.message().find("no CUDA support") != std::string::npos) !=
          ninfer::cuda::compiled());
    CHECK(ninfer::cuda::try_device_count().value_or(7) == 7);
    std::uint32_t n = 77;
    CHECK(::ninfer_cuda_device_count(&n) == NINFER_STATUS_NO_DEVICE && n == 77);
    CHECK(::ninfer_cuda_device_count(nullptr) == NINFER_STATUS_NULL_POINTER);
    ninfer::cuda::device_info dinfo{};
    dinfo.multiprocessors = 5;
    CHECK(::ninfer_cuda_device_properties(0, &dinfo) == NINFER_STATUS_NO_DEVICE &&
          dinfo.multiprocessors == 5);
    CHECK(::ninfer_cuda_device_properties(0, nullptr) == NINFER_STATUS_NULL_POINTER);
    const ninfer::result<ninfer::cuda::device_info> props = ninfer::cuda::try_device_properties(1);
    CHECK(props.code() == NINFER_STATUS_NO_DEVICE && !props.message().empty());
    bool cuda_thrown = false;
    try {
      (void)ninfer::cuda::device_count();
    } catch (const ninfer::error& e) {
      cuda_thrown = e.code() == NINFER_STATUS_NO_DEVICE &&
               std::string(e.what()).find("NO_DEVICE: ") == 0;
    }
    CHECK(cuda_thrown);

    const std::vector<float> wf = {0, 1, 2, 3, 4, 5};
    std::vector<std::uint8_t> wb(wf.size() * 4);
    std::memcpy(wb.data(), wf.data(), wb.size());
    const ninfer::weight_view wv(NINFER_FORMAT_FP32, NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 3, wb);
    const ninfer::result<ninfer::cuda::linear> up = ninfer::cuda::linear::try_prepare(wv);
    CHECK(up.code() == NINFER_STATUS_NO_DEVICE && !up.message().empty());
    CHECK(ninfer::linear::try_prepare(wv, NINFER_DEVICE_CUDA).code() == NINFER_STATUS_NO_DEVICE);
    const ninfer::cuda::device_view dv = ninfer::cuda::make_device_view(
        NINFER_FORMAT_FP32, NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 3, {{0x7f0000000000u, 0, 0}},
        {{24, 0, 0}});
    const ninfer::result<ninfer::cuda::linear> borrowed = ninfer::cuda::linear::try_prepare_device(dv);
    CHECK(borrowed.code() == NINFER_STATUS_NO_DEVICE && !borrowed.message().empty());
    ninfer::cuda::device_view bad_dv = dv;
    bad_dv.plane_lengths[0] = 20;
    CHECK(ninfer::cuda::linear::try_prepare_device(bad_dv).code() == NINFER_STATUS_SIZE_MISMATCH);
    bad_dv = dv;
    bad_dv.plane_addresses[0] = 0;
    CHECK(ninfer::cuda::linear::try_prepare_device(bad_dv).code() == NINFER_STATUS_NULL_POINTER);
    ::ninfer_linear* raw_h = nullptr;
    CHECK(::ninfer_cuda_linear_prepare(wv.c_view(), 0, &raw_h) == NINFER_STATUS_NO_DEVICE &&
          raw_h == nullptr);
    CHECK(::ninfer_cuda_linear_prepare(nullptr, 0, &raw_h) == NINFER_STATUS_NULL_POINTER);
    CHECK(::ninfer_cuda_linear_prepare(wv.c_view(), 0, nullptr) == NINFER_STATUS_NULL_POINTER);
    CHECK(::ninfer_cuda_linear_prepare_device(nullptr, 0, &raw_h) == NINFER_STATUS_NULL_POINTER);
    CHECK(::ninfer_cuda_linear_prepare_device(&dv, 0, nullptr) == NINFER_STATUS_NULL_POINTER);
    cuda_thrown = false;
    try {
      ninfer::cuda::linear refused(wv);
    } catch (const ninfer::error& e) {
      cuda_thrown = e.code() == NINFER_STATUS_NO_DEVICE;
    }
    CHECK(cuda_thrown);

    // The device entry points on a CPU handle and on NULL.
    ninfer::linear cpu(wv);
    CHECK(ninfer::cuda::try_workspace_size(cpu.get(), 4).value_or(9) == 0);
    CHECK(ninfer::cuda::try_workspace_size(nullptr, 4).code() == NINFER_STATUS_NULL_POINTER);
    CHECK(ninfer::cuda::try_forward(cpu.get(), 0x1000, NINFER_DTYPE_F32, 1, 3, 0x2000,
                                    NINFER_DTYPE_F32)
              .code() == NINFER_STATUS_UNSUPPORTED);
    CHECK(ninfer::cuda::try_forward(cpu.get(), 0, NINFER_DTYPE_F32, 1, 3, 0x2000, NINFER_DTYPE_F32)
              .code() == NINFER_STATUS_NULL_POINTER);
    CHECK(ninfer::cuda::try_forward(nullptr, 0x1000, NINFER_DTYPE_F32, 1, 3, 0x2000,
                                    NINFER_DTYPE_F32)
              .code() == NINFER_STATUS_NULL_POINTER);
    CHECK(ninfer::cuda::try_decode_rows(cpu.get(), 0, 1, 0x3000, NINFER_DTYPE_F32).code() ==
          NINFER_STATUS_UNSUPPORTED);
    CHECK(ninfer::cuda::try_decode_rows(cpu.get(), 0, 1, 0, NINFER_DTYPE_F32).code() ==
          NINFER_STATUS_NULL_POINTER);
    CHECK(ninfer::cuda::try_decode_rows(nullptr, 0, 1, 0x3000, NINFER_DTYPE_F32).code() ==
          NINFER_STATUS_NULL_POINTER);
    // An empty cuda::linear: every call refuses its NULL handle.
    const ninfer::cuda::linear none;
    CHECK(!none && none.rows() == 0);
    CHECK(none.try_workspace_size(1).code() == NINFER_STATUS_NULL_POINTER);
    CHECK(none.try_forward(0x1000, NINFER_DTYPE_F32, 1, 0x2000, NINFER_DTYPE_F32).code() ==
          NINFER_STATUS_NULL_POINTER);
    CHECK(none.try_decode_rows(0, 1, 0x3000, NINFER_DTYPE_F32).code() ==
          NINFER_STATUS_NULL_POINTER);
    std::vector<float> yh(2, 5.0f);
    CHECK(none.try_forward_host(ninfer::span<const float>(wf.data(), 3), 1, yh).code() ==
          NINFER_STATUS_NULL_POINTER);
    CHECK(yh[0] == 5.0f && yh[1] == 5.0f);
  }

  // RAII handles: freed exactly once, movable, NULL-safe.
  int frees = 0;
  {
    fake_owner a(new fake_handle{&frees});
    fake_owner b = std::move(a);
    CHECK(a.get() == nullptr && b.get() != nullptr);
    fake_owner none;
  }
  CHECK(frees == 1);

  std::printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
