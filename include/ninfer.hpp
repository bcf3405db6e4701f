/*
 * ninfer.hpp: header-only C++17 wrapper over the C API of ninfer.h (hand-written).
 *
 * - Errors: the throwing functions raise ninfer::error (status + the library's message,
 *   read on the calling thread right after the failing call). Every throwing function
 *   has a non-throwing twin named try_*, returning ninfer::result<T> (status, message and
 *   value; like std::expected). With exceptions disabled (-fno-exceptions) only the try_*
 *   functions are declared.
 * - Views: ninfer::span<T> is std::span<T> under C++20 and a pointer + size with the same
 *   basic interface under C++17. Buffers are borrowed, never copied or kept.
 * - Handles: ninfer::handle<T, Free> is the RAII owner for opaque handles (`ninfer_x *`
 *   freed by `ninfer_x_free`); ninfer::linear holds one.
 *
 * Typical use (a C++ runtime's artifact loader):
 *
 *   ninfer::format f = ninfer::format_lookup("gguf_q8_0");
 *   ninfer::weight_view w(f, ninfer::format_get_info(f).layout, rows, cols, {bytes, nbytes});
 *   w.check();                           // structural check, throws ninfer::error
 *   std::vector<float> row = w.decode_row(3);
 *
 * Encoders return an owned_tensor (planes in std::vectors) whose view() decodes:
 *
 *   ninfer::owned_tensor q = ninfer::quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, src, rows, cols);
 *   std::vector<float> row0 = q.view().decode_row(0);
 *
 * Products: ninfer::linear holds a prepared weight (RAII over ninfer_linear_free). Given an
 * owned_tensor by value it keeps the planes itself; given a view it borrows them, and they
 * must outlive it:
 *
 *   ninfer::linear lin(ninfer::quantize_grouped(NINFER_FORMAT_Q8_G32_FP16, src, rows, cols));
 *   ninfer::linear lin2(q.view());              // q must outlive lin2
 *   std::vector<float> y = lin.forward(x, m);   // y = x · Wᵀ, [m, N]
 *   lin.forward(x, m, y, bias);                 // into the caller's y (m × N floats)
 *
 * Dangling borrows are compile errors: a view of a temporary owned_tensor
 * (`quantize_grouped(...).view()`) and a weight_view plane made from a temporary vector.
 *
 * Section numbers (§) refer to docs/formats.md.
 *
 * Adding a wrapper for a new export: write try_x() with detail::call(...) and a throwing
 * x() that returns try_x(...).value().
 */
#ifndef NINFER_HPP
#define NINFER_HPP

#include "ninfer.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define NINFER_HPP_EXCEPTIONS 1
#include <stdexcept>
#else
#define NINFER_HPP_EXCEPTIONS 0
#endif

#if __cplusplus >= 202002L && defined(__has_include)
#if __has_include(<span>)
#include <span>
#define NINFER_HPP_STD_SPAN 1
#endif
#endif
#ifndef NINFER_HPP_STD_SPAN
#define NINFER_HPP_STD_SPAN 0
#endif

namespace ninfer {

/// Status codes (`NINFER_STATUS_*`); `NINFER_STATUS_OK` is success.
using status = ::ninfer_status;
/// Format numbers (`NINFER_FORMAT_*`).
using format = ::ninfer_format;
/// Layout numbers (`NINFER_LAYOUT_*`).
using layout = ::ninfer_layout;
/// Dense element types (`NINFER_DTYPE_*`).
using dtype = ::ninfer_dtype;
/// Format families (`NINFER_CATEGORY_*`).
using category = ::ninfer_category;
/// Stored scale types (`NINFER_SCALE_TYPE_*`).
using scale_type = ::ninfer_scale_type;

/// The registry's facts about one format (ninfer_format_info with typed enumerations).
struct format_info {
  ninfer::format format;       ///< the format's number
  const char* name;            ///< canonical name (static string)
  ninfer::category category;   ///< family (spec §1)
  std::uint32_t code_bits;     ///< logical code width in bits; 0 for GGUF blocks
  std::uint32_t block_values;  ///< values per group / block (1 for direct, row-scaled)
  std::uint32_t block_bytes;   ///< bytes per group / block including its scale
  ninfer::scale_type scale_type;
  ninfer::layout layout;       ///< the registered layout
  std::int64_t code_min;       ///< smallest legal signed code, else 0
  std::int64_t code_max;       ///< largest legal signed code, else 0
  std::int32_t qmax;           ///< grouped_absmax's scale denominator, 0 where refused
  std::int32_t ggml_type;      ///< ggml type id with bit-identical data, or -1
  double bits_per_weight;      ///< ideal logical bits per weight for full blocks

  format_info() noexcept : format_info(::ninfer_format_info{}) {}
  explicit format_info(const ::ninfer_format_info& c) noexcept
      : format(static_cast<ninfer::format>(c.format)),
        name(c.name),
        category(static_cast<ninfer::category>(c.category)),
        code_bits(c.code_bits),
        block_values(c.block_values),
        block_bytes(c.block_bytes),
        scale_type(static_cast<ninfer::scale_type>(c.scale_type)),
        layout(static_cast<ninfer::layout>(c.layout)),
        code_min(c.code_min),
        code_max(c.code_max),
        qmax(c.qmax),
        ggml_type(c.ggml_type),
        bits_per_weight(c.bits_per_weight) {}
};

/// Conversion provenance of ninfer_quantize_grouped (method, parameters, counters).
using quantize_provenance = ::ninfer_quantize_provenance;

/// Byte lengths of the planes of a tensor (unused planes are 0).
using plane_sizes_t = std::array<std::size_t, NINFER_MAX_PLANES>;

// ---- span -------------------------------------------------------------------------------
#if NINFER_HPP_STD_SPAN
template <class T>
using span = std::span<T>;
#else
/// A borrowed contiguous range (the subset of C++20 std::span used here).
template <class T>
class span {
 public:
  using element_type = T;
  using value_type = typename std::remove_cv<T>::type;
  using size_type = std::size_t;
  using pointer = T*;
  using iterator = T*;

  constexpr span() noexcept : data_(nullptr), size_(0) {}
  constexpr span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  template <std::size_t N>
  constexpr span(T (&a)[N]) noexcept : data_(a), size_(N) {}
  template <class U, std::size_t N,
            class = typename std::enable_if<std::is_convertible<U (*)[], T (*)[]>::value>::type>
  constexpr span(std::array<U, N>& a) noexcept : data_(a.data()), size_(N) {}
  template <class U, std::size_t N,
            class = typename std::enable_if<std::is_convertible<const U (*)[], T (*)[]>::value>::type>
  constexpr span(const std::array<U, N>& a) noexcept : data_(a.data()), size_(N) {}
  template <class U, class A,
            class = typename std::enable_if<std::is_convertible<U (*)[], T (*)[]>::value>::type>
  span(std::vector<U, A>& v) noexcept : data_(v.data()), size_(v.size()) {}
  template <class U, class A,
            class = typename std::enable_if<std::is_convertible<const U (*)[], T (*)[]>::value>::type>
  span(const std::vector<U, A>& v) noexcept : data_(v.data()), size_(v.size()) {}
  template <class U,
            class = typename std::enable_if<std::is_convertible<U (*)[], T (*)[]>::value>::type>
  constexpr span(const span<U>& s) noexcept : data_(s.data()), size_(s.size()) {}

  constexpr T* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T& operator[](std::size_t i) const noexcept { return data_[i]; }
  constexpr T* begin() const noexcept { return data_; }
  constexpr T* end() const noexcept { return data_ + size_; }

 private:
  T* data_;
  std::size_t size_;
};
#endif

/// A borrowed byte plane.
using bytes = span<const std::uint8_t>;

// ---- errors -----------------------------------------------------------------------------

/// The name of a status without its prefix ("SIZE_MISMATCH"); "UNKNOWN_STATUS" otherwise.
inline const char* status_name(status s) noexcept { return ::ninfer_status_name(s); }

/// This thread's last error message (empty after a successful call).
inline std::string last_error_message() {
  std::size_t n = ::ninfer_last_error_message(nullptr, 0);
  if (n == 0) return std::string();
  std::vector<char> buf(n + 1);
  n = ::ninfer_last_error_message(buf.data(), buf.size());
  if (n >= buf.size()) n = buf.size() - 1;
  return std::string(buf.data(), n);
}

#if NINFER_HPP_EXCEPTIONS
/// A failed call: its status and the library's message.
class error : public std::runtime_error {
 public:
  error(status code, const std::string& message)
      : std::runtime_error(std::string(status_name(code)) + ": " + message),
        code_(code),
        message_(message) {}
  /// The status the call returned (never NINFER_STATUS_OK).
  status code() const noexcept { return code_; }
  /// The library's message, without the status name.
  const std::string& message() const noexcept { return message_; }

 private:
  status code_;
  std::string message_;
};
#endif

/// The outcome of a non-throwing call: a status, its message when it failed, and the
/// value when it succeeded.
template <class T>
class result {
 public:
  /// A success holding `value`.
  result(T value) : code_(NINFER_STATUS_OK), message_(), value_(std::move(value)) {}
  /// A failure; `code` must not be NINFER_STATUS_OK.
  result(status code, std::string message) : code_(code), message_(std::move(message)), value_() {}

  bool ok() const noexcept { return code_ == NINFER_STATUS_OK; }
  explicit operator bool() const noexcept { return ok(); }
  status code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  /// The value; meaningful only when ok(). On a temporary result it is moved out, so that
  /// `(*try_quantize_grouped(...)).view()` is refused like `quantize_grouped(...).view()`.
  const T& operator*() const& noexcept { return value_; }
  T& operator*() & noexcept { return value_; }
  T&& operator*() && noexcept { return std::move(value_); }
  const T* operator->() const noexcept { return &value_; }
  T* operator->() noexcept { return &value_; }
  T value_or(T fallback) const { return ok() ? value_ : fallback; }
#if NINFER_HPP_EXCEPTIONS
  /// The value, or throws ninfer::error when the call failed.
  T& value() & {
    if (!ok()) throw error(code_, message_);
    return value_;
  }
  const T& value() const& {
    if (!ok()) throw error(code_, message_);
    return value_;
  }
  T value() && {
    if (!ok()) throw error(code_, message_);
    return std::move(value_);
  }
#endif

 private:
  status code_;
  std::string message_;
  T value_;
};

/// A non-throwing call's outcome with no value.
template <>
class result<void> {
 public:
  result() : code_(NINFER_STATUS_OK), message_() {}
  result(status code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const noexcept { return code_ == NINFER_STATUS_OK; }
  explicit operator bool() const noexcept { return ok(); }
  status code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
#if NINFER_HPP_EXCEPTIONS
  /// Throws ninfer::error when the call failed.
  void value() const {
    if (!ok()) throw error(code_, message_);
  }
#endif

 private:
  status code_;
  std::string message_;
};

namespace detail {
/// Turns a C status into a result, reading the message on this thread right away.
inline result<void> call(::ninfer_status code) {
  if (code == NINFER_STATUS_OK) return result<void>();
  return result<void>(code, last_error_message());
}
template <class T>
inline result<T> call(::ninfer_status code, T value) {
  if (code == NINFER_STATUS_OK) return result<T>(std::move(value));
  return result<T>(code, last_error_message());
}
/// A count already checked to fit in size_t, converted without a cast warning on either
/// 32- or 64-bit targets.
template <class T>
inline std::size_t to_size(T v) noexcept {
  return static_cast<std::size_t>(v);
}
template <class T, void (*Free)(T*)>
struct free_deleter {
  void operator()(T* p) const noexcept { Free(p); }
};
}  // namespace detail

// ---- handles ----------------------------------------------------------------------------

/// Owner of an opaque library handle `T *`, released with `Free` (which accepts NULL).
/// Move-only; `get()` passes it to C functions. E.g.
/// `handle<ninfer_linear, ninfer_linear_free>` (inside ninfer::linear).
template <class T, void (*Free)(T*)>
using handle = std::unique_ptr<T, detail::free_deleter<T, Free>>;

// ---- versions ---------------------------------------------------------------------------

/// The linked library's version numbers {major, minor, patch}.
inline std::array<std::uint32_t, 3> version_numbers() noexcept {
  return {{::ninfer_version_major(), ::ninfer_version_minor(), ::ninfer_version_patch()}};
}
/// The linked library's version string, e.g. "0.1.0".
inline const char* version() noexcept { return ::ninfer_version(); }
/// True when the linked library has the ABI version of this header and a version not older.
inline bool library_matches_header() noexcept {
  return ::ninfer_abi_version() == NINFER_ABI_VERSION &&
         ::ninfer_version_major() == NINFER_VERSION_MAJOR &&
         ::ninfer_version_minor() >= NINFER_VERSION_MINOR;
}

// ---- registry ---------------------------------------------------------------------------

/// Number of registered formats; format numbers are 0 .. format_count() - 1.
inline std::uint32_t format_count() noexcept { return ::ninfer_format_count(); }

/// The format at registry index `index` (0 .. format_count() - 1).
inline result<format> try_format_at(std::uint32_t index) {
  std::uint32_t f = 0;
  ::ninfer_status st = ::ninfer_format_at(index, &f);
  return detail::call(st, static_cast<format>(f));
}
/// The format with this exact canonical name ("q4_g64_fp16", "gguf_q4_k").
inline result<format> try_format_lookup(const char* name) {
  std::uint32_t f = 0;
  ::ninfer_status st = ::ninfer_format_lookup(name, &f);
  return detail::call(st, static_cast<format>(f));
}
inline result<format> try_format_lookup(const std::string& name) {
  return try_format_lookup(name.c_str());
}
/// The format bit-identical to a GGUF tensor of ggml type `ggml_type`.
inline result<format> try_format_from_ggml_type(std::uint32_t ggml_type) {
  std::uint32_t f = 0;
  ::ninfer_status st = ::ninfer_format_from_ggml_type(ggml_type, &f);
  return detail::call(st, static_cast<format>(f));
}
/// The canonical name of a format, or nullptr for an unknown number.
inline const char* format_name(format f) noexcept { return ::ninfer_format_name(f); }
/// The registry's facts about a format.
inline result<format_info> try_format_get_info(format f) {
  ::ninfer_format_info info{};
  ::ninfer_status st = ::ninfer_format_get_info(f, &info);
  return detail::call(st, format_info(info));
}

/// Number of registered layouts.
inline std::uint32_t layout_count() noexcept { return ::ninfer_layout_count(); }
/// The layout with this exact name ("row_split_k128_v1").
inline result<layout> try_layout_lookup(const char* name) {
  std::uint32_t l = 0;
  ::ninfer_status st = ::ninfer_layout_lookup(name, &l);
  return detail::call(st, static_cast<layout>(l));
}
inline result<layout> try_layout_lookup(const std::string& name) {
  return try_layout_lookup(name.c_str());
}
/// The name of a layout, or nullptr for an unknown number.
inline const char* layout_name(layout l) noexcept { return ::ninfer_layout_name(l); }
/// OK when `f` may be stored in `l`.
inline result<void> try_format_layout_compatible(format f, layout l) {
  return detail::call(::ninfer_format_layout_compatible(f, l));
}
/// Byte length of each plane of a rows × cols tensor of `f` in `l`.
inline result<plane_sizes_t> try_plane_sizes(format f, layout l, std::uint64_t rows,
                                             std::uint64_t cols) {
  plane_sizes_t sizes{};
  ::ninfer_status st = ::ninfer_layout_plane_sizes(f, l, rows, cols, sizes.data(), sizes.size());
  return detail::call(st, sizes);
}

#if NINFER_HPP_EXCEPTIONS
inline format format_lookup(const char* name) { return try_format_lookup(name).value(); }
inline format format_lookup(const std::string& name) { return try_format_lookup(name).value(); }
inline format format_at(std::uint32_t index) { return try_format_at(index).value(); }
inline format format_from_ggml_type(std::uint32_t t) {
  return try_format_from_ggml_type(t).value();
}
inline format_info format_get_info(format f) { return try_format_get_info(f).value(); }
inline layout layout_lookup(const char* name) { return try_layout_lookup(name).value(); }
inline layout layout_lookup(const std::string& name) { return try_layout_lookup(name).value(); }
inline void format_layout_compatible(format f, layout l) {
  try_format_layout_compatible(f, l).value();
}
inline plane_sizes_t plane_sizes(format f, layout l, std::uint64_t rows, std::uint64_t cols) {
  return try_plane_sizes(f, l, rows, cols).value();
}
#endif

// ---- weight views -----------------------------------------------------------------------

/// One plane argument of weight_view: a borrowed byte range, made from `bytes`, a
/// `{pointer, length}` pair, a span of bytes, or a named (lvalue) std::vector / std::array /
/// array of bytes. A temporary std::vector or std::array is refused at compile time: the
/// view would point into storage freed at the end of the statement.
class plane_ref {
 public:
  plane_ref() noexcept = default;
  plane_ref(bytes b) noexcept : bytes_(b) {}
  plane_ref(const std::uint8_t* data, std::size_t size) noexcept : bytes_(data, size) {}
  plane_ref(span<std::uint8_t> s) noexcept : bytes_(s.data(), s.size()) {}
  template <class A>
  plane_ref(const std::vector<std::uint8_t, A>& v) noexcept : bytes_(v.data(), v.size()) {}
  /// Refused: the vector would be freed while the view still points into it.
  template <class A>
  plane_ref(std::vector<std::uint8_t, A>&&) = delete;
  template <std::size_t N>
  plane_ref(const std::array<std::uint8_t, N>& a) noexcept : bytes_(a.data(), N) {}
  /// Refused: the array would be destroyed while the view still points into it.
  template <std::size_t N>
  plane_ref(std::array<std::uint8_t, N>&&) = delete;
  template <std::size_t N>
  plane_ref(const std::uint8_t (&a)[N]) noexcept : bytes_(a, N) {}

  /// The borrowed range.
  bytes get() const noexcept { return bytes_; }

 private:
  bytes bytes_{};
};

/// A borrowed persistent tensor: format, layout, logical [rows, cols] (cols = K) and up to
/// NINFER_MAX_PLANES byte planes (see ninfer_weight_view). Cheap to copy; the planes must
/// outlive every call made with the view (temporary vectors are refused, see plane_ref).
class weight_view {
 public:
  weight_view(format f, layout l, std::uint64_t rows, std::uint64_t cols, plane_ref plane0,
              plane_ref plane1 = plane_ref(), plane_ref plane2 = plane_ref()) noexcept
      : view_() {
    view_.format = f;
    view_.layout = l;
    view_.rows = rows;
    view_.cols = cols;
    const bytes planes[3] = {plane0.get(), plane1.get(), plane2.get()};
    for (std::size_t i = 0; i < 3 && i < NINFER_MAX_PLANES; ++i) {
      view_.planes[i].ptr = planes[i].data();
      view_.planes[i].len = planes[i].size();
    }
  }
  /// Wraps a C view as is.
  explicit weight_view(const ::ninfer_weight_view& v) noexcept : view_(v) {}

  format format_id() const noexcept { return static_cast<format>(view_.format); }
  layout layout_id() const noexcept { return static_cast<layout>(view_.layout); }
  std::uint64_t rows() const noexcept { return view_.rows; }
  std::uint64_t cols() const noexcept { return view_.cols; }
  /// The C struct, for calling C functions directly.
  const ::ninfer_weight_view* c_view() const noexcept { return &view_; }

  /// Structural check (format, layout, shape, plane lengths) without reading the payload.
  result<void> try_check() const { return detail::call(::ninfer_weight_view_check(&view_)); }
  /// Decodes row `row` into out[0 .. cols] as f32.
  result<void> try_decode_row(std::uint64_t row, span<float> out) const {
    return detail::call(::ninfer_decode_row(&view_, row, out.data(), out.size()));
  }
  /// Decodes row `row` into a new vector of cols floats.
  result<std::vector<float>> try_decode_row(std::uint64_t row) const {
    std::vector<float> out;
    if (view_.cols > out.max_size()) {
      return result<std::vector<float>>(NINFER_STATUS_OVERFLOW, "cols does not fit in memory");
    }
    // Check first so that a bad shape is reported as such, not as an allocation failure.
    result<void> c = try_check();
    if (!c) return result<std::vector<float>>(c.code(), c.message());
    out.resize(static_cast<std::size_t>(view_.cols));
    ::ninfer_status st = ::ninfer_decode_row(&view_, row, out.data(), out.size());
    return detail::call(st, std::move(out));
  }
  /// Decodes row `row` into raw bytes as `dt` (NINFER_DTYPE_*), native-endian.
  result<void> try_decode_row_as(std::uint64_t row, dtype dt, span<std::uint8_t> out) const {
    return detail::call(::ninfer_decode_row_as(&view_, row, dt, out.data(), out.size()));
  }
  /// Decodes row `row` as bf16 or f16 words.
  result<void> try_decode_row_as(std::uint64_t row, dtype dt, span<std::uint16_t> out) const {
    return detail::call(::ninfer_decode_row_as(
        &view_, row, dt, reinterpret_cast<std::uint8_t*>(out.data()), out.size() * sizeof(std::uint16_t)));
  }

  /// Decodes rows first .. first + count into out[0 .. count × cols] as f32, row after row,
  /// in one library call (ninfer_decode_rows). Nothing is written on error.
  result<void> try_decode_rows(std::uint64_t first, std::uint64_t count, span<float> out) const {
    return detail::call(::ninfer_decode_rows(&view_, first, count, out.data(), out.size_bytes(),
                                             NINFER_DTYPE_F32));
  }
  /// Decodes rows first .. first + count as `dt` (NINFER_DTYPE_*) into raw native-endian
  /// bytes, aligned to the element size.
  result<void> try_decode_rows_as(std::uint64_t first, std::uint64_t count, dtype dt,
                                  span<std::uint8_t> out) const {
    return detail::call(::ninfer_decode_rows(&view_, first, count, out.data(), out.size(), dt));
  }
  /// Decodes rows first .. first + count as bf16 or f16 words.
  result<void> try_decode_rows_as(std::uint64_t first, std::uint64_t count, dtype dt,
                                  span<std::uint16_t> out) const {
    return detail::call(
        ::ninfer_decode_rows(&view_, first, count, out.data(), out.size_bytes(), dt));
  }
  /// Decodes rows first .. first + count into a new vector of count × cols floats. The
  /// view and the range are checked before anything is allocated.
  result<std::vector<float>> try_decode_rows(std::uint64_t first, std::uint64_t count) const {
    result<void> c = try_check();
    if (!c) return result<std::vector<float>>(c.code(), c.message());
    if (first > view_.rows || count > view_.rows - first) {
      // The library's refusal of the range, without allocating from `count`.
      result<void> r =
          detail::call(::ninfer_decode_rows(&view_, first, count, nullptr, 0, NINFER_DTYPE_F32));
      if (r) return result<std::vector<float>>(NINFER_STATUS_ROW_OUT_OF_RANGE, "rows out of range");
      return result<std::vector<float>>(r.code(), r.message());
    }
    if (view_.cols != 0 && count > (SIZE_MAX / sizeof(float)) / view_.cols) {
      return result<std::vector<float>>(NINFER_STATUS_OVERFLOW, "count × cols does not fit in memory");
    }
    std::vector<float> out(detail::to_size(count * view_.cols));
    ::ninfer_status st = ::ninfer_decode_rows(&view_, first, count, out.data(),
                                              out.size() * sizeof(float), NINFER_DTYPE_F32);
    return detail::call(st, std::move(out));
  }

  /// Checks every encoding rule over the whole payload. On INVALID_ENCODING, `*where`
  /// (when given) receives the first offending row and block / group.
  result<void> try_validate(std::uint64_t* where_row = nullptr,
                            std::uint64_t* where_block = nullptr) const {
    return detail::call(::ninfer_validate(&view_, where_row, where_block));
  }
  /// §3.4 checks of a row-scaled FP8 view.
  result<void> try_fp8_row_validate() const {
    return detail::call(::ninfer_fp8_row_validate(&view_));
  }
  /// §3.3 checks of an nvfp4 view.
  result<void> try_nvfp4_validate() const { return detail::call(::ninfer_nvfp4_validate(&view_)); }
  /// Copies the payload of rows start .. start + count into `out`; returns bytes written.
  result<std::size_t> try_rows_copy(std::uint64_t start, std::uint64_t count,
                                    span<std::uint8_t> out) const {
    std::size_t written = 0;
    ::ninfer_status st = ::ninfer_rows_copy(&view_, start, count, out.data(), out.size(), &written);
    return detail::call(st, written);
  }
  /// Copies the payload of the rows `indices` (any order, repeats allowed) into `out`.
  result<std::size_t> try_rows_gather(span<const std::uint64_t> indices,
                                      span<std::uint8_t> out) const {
    std::size_t written = 0;
    ::ninfer_status st = ::ninfer_rows_gather(&view_, indices.data(), indices.size(), out.data(),
                                              out.size(), &written);
    return detail::call(st, written);
  }

#if NINFER_HPP_EXCEPTIONS
  void validate() const { try_validate().value(); }
  void fp8_row_validate() const { try_fp8_row_validate().value(); }
  void nvfp4_validate() const { try_nvfp4_validate().value(); }
  std::size_t rows_copy(std::uint64_t start, std::uint64_t count, span<std::uint8_t> out) const {
    return try_rows_copy(start, count, out).value();
  }
  std::size_t rows_gather(span<const std::uint64_t> indices, span<std::uint8_t> out) const {
    return try_rows_gather(indices, out).value();
  }
  void check() const { try_check().value(); }
  void decode_row(std::uint64_t row, span<float> out) const { try_decode_row(row, out).value(); }
  std::vector<float> decode_row(std::uint64_t row) const {
    return try_decode_row(row).value();
  }
  void decode_row_as(std::uint64_t row, dtype dt, span<std::uint8_t> out) const {
    try_decode_row_as(row, dt, out).value();
  }
  void decode_row_as(std::uint64_t row, dtype dt, span<std::uint16_t> out) const {
    try_decode_row_as(row, dt, out).value();
  }
  void decode_rows(std::uint64_t first, std::uint64_t count, span<float> out) const {
    try_decode_rows(first, count, out).value();
  }
  std::vector<float> decode_rows(std::uint64_t first, std::uint64_t count) const {
    return try_decode_rows(first, count).value();
  }
  void decode_rows_as(std::uint64_t first, std::uint64_t count, dtype dt,
                      span<std::uint8_t> out) const {
    try_decode_rows_as(first, count, dt, out).value();
  }
  void decode_rows_as(std::uint64_t first, std::uint64_t count, dtype dt,
                      span<std::uint16_t> out) const {
    try_decode_rows_as(first, count, dt, out).value();
  }
#endif

 private:
  ::ninfer_weight_view view_;
};

// ---- encoders ---------------------------------------------------------------------------

/// A tensor whose planes this object owns (the output of an encoder).
struct owned_tensor {
  ninfer::format format = NINFER_FORMAT_BF16;
  ninfer::layout layout = NINFER_LAYOUT_CONTIGUOUS_LE_V1;
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
  std::array<std::vector<std::uint8_t>, NINFER_MAX_PLANES> planes{};

  /// A view borrowing this tensor's planes (valid while the tensor lives unchanged).
  weight_view view() const& noexcept {
    return weight_view(format, layout, rows, cols, bytes(planes[0].data(), planes[0].size()),
                       bytes(planes[1].data(), planes[1].size()),
                       bytes(planes[2].data(), planes[2].size()));
  }
  /// Refused: a view of a temporary tensor points into planes freed at the end of the
  /// statement. Keep the tensor in a variable, or give it to ninfer::linear to own.
  weight_view view() const&& = delete;
};

/// A dense row-major source: `rows × cols` elements of `type` at `data` (native-endian).
struct source {
  ninfer::dtype type;
  const void* data;
  std::size_t elements;

  source(span<const float> v) noexcept : type(NINFER_DTYPE_F32), data(v.data()), elements(v.size()) {}
  source(const std::vector<float>& v) noexcept
      : type(NINFER_DTYPE_F32), data(v.data()), elements(v.size()) {}
  source(const float* p, std::size_t n) noexcept : type(NINFER_DTYPE_F32), data(p), elements(n) {}
  /// bf16 or f16 words.
  source(ninfer::dtype t, span<const std::uint16_t> v) noexcept
      : type(t), data(v.data()), elements(v.size()) {}
  std::size_t element_bytes() const noexcept { return type == NINFER_DTYPE_F32 ? 4 : 2; }
};

/// Options of quantize_grouped: grouped_absmax by default (spec §7.2), or grouped_search
/// (§7.3) with optional negative scales and a per-column importance vector.
struct quantize_options {
  std::uint32_t method = NINFER_QUANTIZE_METHOD_GROUPED_ABSMAX;
  bool negative_scales = false;
  span<const float> importance{};
};

namespace detail {
inline result<owned_tensor> alloc_tensor(format f, layout l, std::uint64_t rows, std::uint64_t cols) {
  result<plane_sizes_t> sizes = try_plane_sizes(f, l, rows, cols);
  if (!sizes) return result<owned_tensor>(sizes.code(), sizes.message());
  owned_tensor t;
  t.format = f;
  t.layout = l;
  t.rows = rows;
  t.cols = cols;
  for (std::size_t i = 0; i < t.planes.size(); ++i) t.planes[i].resize((*sizes)[i]);
  return result<owned_tensor>(std::move(t));
}
inline std::uint8_t* data_or_null(std::vector<std::uint8_t>& v) noexcept {
  return v.empty() ? nullptr : v.data();
}
/// The output plane entries of a tensor (unused planes {NULL, 0}).
inline std::array<::ninfer_mut_bytes, NINFER_MAX_PLANES> mut_planes(owned_tensor& t) {
  std::array<::ninfer_mut_bytes, NINFER_MAX_PLANES> planes{};
  for (std::size_t i = 0; i < NINFER_MAX_PLANES; ++i) {
    planes[i].ptr = data_or_null(t.planes[i]);
    planes[i].len = t.planes[i].size();
  }
  return planes;
}

/// True when `src` holds exactly rows × cols elements, as every encoder requires. The
/// encoders' try_* helpers check this before sizing any output plane from rows × cols, so
/// a short source with a huge claimed shape is refused without allocating.
inline bool source_matches(const source& src, std::uint64_t rows, std::uint64_t cols) noexcept {
  if (rows != 0 && cols > UINT64_MAX / rows) return false;
  return rows * cols == src.elements;
}
/// The outcome of an encoder called with empty planes for a shape the source does not
/// match: the library's own status and message (it checks the source before the planes).
inline result<owned_tensor> refused(::ninfer_status st) {
  if (st == NINFER_STATUS_OK) {
    return result<owned_tensor>(NINFER_STATUS_SIZE_MISMATCH,
                                "the source does not hold rows × cols values");
  }
  return result<owned_tensor>(st, last_error_message());
}

}  // namespace detail

/// Quantizes a dense [rows, cols] source into the row_split_k128_v1 planes of a grouped
/// format (q4/q5/q6_g64_fp16, q8_g32_fp16); `provenance` (optional) receives the record.
inline result<owned_tensor> try_quantize_grouped(format f, const source& src, std::uint64_t rows,
                                                 std::uint64_t cols,
                                                 const quantize_options& options = quantize_options(),
                                                 quantize_provenance* provenance = nullptr) {
  ::ninfer_quantize_options opts{};
  opts.method = options.method;
  opts.negative_scales = options.negative_scales ? 1u : 0u;
  opts.importance = options.importance.data();
  opts.importance_len = options.importance.size();
  const bool absmax_defaults = options.method == NINFER_QUANTIZE_METHOD_GROUPED_ABSMAX &&
                               !options.negative_scales && options.importance.empty();
  if (!detail::source_matches(src, rows, cols)) {
    const ::ninfer_mut_bytes none[NINFER_MAX_PLANES] = {};
    return detail::refused(::ninfer_quantize_grouped(
        f, src.data, src.elements * src.element_bytes(), src.type, rows, cols,
        absmax_defaults ? nullptr : &opts, none, nullptr));
  }
  result<owned_tensor> t = detail::alloc_tensor(f, NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols);
  if (!t) return t;
  ::ninfer_mut_bytes planes[NINFER_MAX_PLANES];
  for (std::size_t i = 0; i < NINFER_MAX_PLANES; ++i) {
    planes[i].ptr = detail::data_or_null(t->planes[i]);
    planes[i].len = t->planes[i].size();
  }
  ::ninfer_status st = ::ninfer_quantize_grouped(
      f, src.data, src.elements * src.element_bytes(), src.type, rows, cols,
      absmax_defaults ? nullptr : &opts, planes, provenance);
  if (st != NINFER_STATUS_OK) return result<owned_tensor>(st, last_error_message());
  return t;
}

/// Quantizes a [rows, cols] source with fp8_row_maxabs into fp8_e4m3fn_row_bf16 or _fp16.
inline result<owned_tensor> try_fp8_row_maxabs(format f, const source& src, std::uint64_t rows,
                                               std::uint64_t cols) {
  if (!detail::source_matches(src, rows, cols)) {
    const ::ninfer_mut_bytes none[NINFER_MAX_PLANES] = {};
    return detail::refused(::ninfer_fp8_row_maxabs(
        f, src.data, src.elements * src.element_bytes(), src.type, rows, cols, none));
  }
  result<format_info> info = try_format_get_info(f);
  if (!info) return result<owned_tensor>(info.code(), info.message());
  result<owned_tensor> t = detail::alloc_tensor(f, info->layout, rows, cols);
  if (!t) return t;
  const std::array<::ninfer_mut_bytes, NINFER_MAX_PLANES> planes = detail::mut_planes(*t);
  ::ninfer_status st = ::ninfer_fp8_row_maxabs(f, src.data, src.elements * src.element_bytes(),
                                               src.type, rows, cols, planes.data());
  if (st != NINFER_STATUS_OK) return result<owned_tensor>(st, last_error_message());
  return t;
}

/// Quantizes a [rows, cols] source made of `sources` stacked matrices to nvfp4.
inline result<owned_tensor> try_nvfp4_quantize(const source& src, std::uint64_t rows,
                                               std::uint64_t cols, std::uint64_t sources = 1) {
  // A source that does not match the shape, or `sources` that do not divide rows: the
  // library's refusal, before any plane is sized from the claimed shape.
  if (!detail::source_matches(src, rows, cols) || sources == 0 || rows % sources != 0) {
    const ::ninfer_mut_bytes none[NINFER_MAX_PLANES] = {};
    return detail::refused(::ninfer_nvfp4_quantize(NINFER_FORMAT_NVFP4, src.data,
                                                   src.elements * src.element_bytes(), src.type,
                                                   rows, cols, sources, none));
  }
  result<owned_tensor> t = detail::alloc_tensor(NINFER_FORMAT_NVFP4,
                                                NINFER_LAYOUT_BLOCK_SCALE_K16_M128X4_V1, rows, cols);
  if (!t) return t;
  // sources <= rows here, and rows values exist in the source: the size cannot overflow.
  t->planes[2].resize(sources * 4);
  const std::array<::ninfer_mut_bytes, NINFER_MAX_PLANES> planes = detail::mut_planes(*t);
  ::ninfer_status st =
      ::ninfer_nvfp4_quantize(NINFER_FORMAT_NVFP4, src.data, src.elements * src.element_bytes(),
                              src.type, rows, cols, sources, planes.data());
  if (st != NINFER_STATUS_OK) return result<owned_tensor>(st, last_error_message());
  return t;
}

/// Moves a gguf_q8_0 / gguf_q2_0 view's words into the row_split_k128_v1 planes of
/// q8_g32_fp16 / q2_g64_fp16, without rounding (spec §2 import_encoded).
inline result<owned_tensor> try_import_gguf(const weight_view& gguf, format target) {
  result<owned_tensor> t =
      detail::alloc_tensor(target, NINFER_LAYOUT_ROW_SPLIT_K128_V1, gguf.rows(), gguf.cols());
  if (!t) return t;
  ::ninfer_mut_bytes planes[NINFER_MAX_PLANES];
  for (std::size_t i = 0; i < NINFER_MAX_PLANES; ++i) {
    planes[i].ptr = detail::data_or_null(t->planes[i]);
    planes[i].len = t->planes[i].size();
  }
  ::ninfer_status st = ::ninfer_import_gguf(gguf.c_view(), target, planes);
  if (st != NINFER_STATUS_OK) return result<owned_tensor>(st, last_error_message());
  return t;
}

/// Moves a ternary GGUF tensor into the row_split_k128_v1 planes of t2_g128_fp16 without
/// rounding (spec §2 import_encoded): `ggml_type` 34 (TQ1_0, 54-byte blocks) or 35 (TQ2_0,
/// 66-byte blocks), `blocks` the tensor's data as in the file (rows × cols / 256 blocks),
/// `cols` = GGUF ne[0], a multiple of 256. Each block's binary16 d is the scale of its two
/// 128-value groups; codes map to -1, 0, +1. Refusals (INVALID_ENCODING: a TQ2_0 word 3, a
/// NaN/Inf/-0 d, a +0 d over non-zero codes; BAD_SHAPE; SIZE_MISMATCH; UNREGISTERED_TYPE)
/// come back with the library's status and message.
inline result<owned_tensor> try_import_gguf_ternary(std::uint32_t ggml_type,
                                                    span<const std::uint8_t> blocks,
                                                    std::uint64_t rows, std::uint64_t cols) {
  const std::uint64_t block_bytes = ggml_type == 34 ? 54 : ggml_type == 35 ? 66 : 0;
  const bool fits = block_bytes != 0 && cols % 256 == 0 &&
                    (rows == 0 || cols / 256 <= UINT64_MAX / block_bytes / rows) &&
                    rows * (cols / 256) * block_bytes == blocks.size();
  if (!fits) {
    // The library names the problem; the planes are not sized from an unchecked shape.
    const ::ninfer_mut_bytes none[NINFER_MAX_PLANES] = {};
    return detail::refused(
        ::ninfer_import_gguf_ternary(ggml_type, blocks.data(), blocks.size(), rows, cols, none));
  }
  result<owned_tensor> t =
      detail::alloc_tensor(NINFER_FORMAT_T2_G128_FP16, NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols);
  if (!t) return t;
  std::array<::ninfer_mut_bytes, NINFER_MAX_PLANES> planes = detail::mut_planes(*t);
  ::ninfer_status st = ::ninfer_import_gguf_ternary(ggml_type, blocks.data(), blocks.size(), rows,
                                                    cols, planes.data());
  if (st != NINFER_STATUS_OK) return result<owned_tensor>(st, last_error_message());
  return t;
}

/// Moves a BitNet b1.58 weight packed as Hugging Face transformers packs it (`packed`:
/// uint8 [rows / 4, cols]; weight row n is the 2-bit field n / (rows/4) of packed row
/// n % (rows/4), holding code + 1) into t2_g128_fp16 planes without rounding.
/// `scale_rule`: NINFER_TERNARY_SCALE_DIVIDE (value = code / weight_scale) or
/// NINFER_TERNARY_SCALE_MULTIPLY (code × weight_scale); the scale word must be exact in
/// binary16. Refusals (INVALID_ARGUMENT, INVALID_ENCODING, BAD_SHAPE, SIZE_MISMATCH) come
/// back with the library's status and message.
inline result<owned_tensor> try_import_bitnet_packed(span<const std::uint8_t> packed,
                                                     std::uint64_t rows, std::uint64_t cols,
                                                     float weight_scale,
                                                     std::uint32_t scale_rule) {
  const bool fits = rows != 0 && cols != 0 && rows % 4 == 0 && cols % 128 == 0 &&
                    cols <= UINT64_MAX / (rows / 4) && (rows / 4) * cols == packed.size();
  if (!fits) {
    // The library names the problem; the planes are not sized from an unchecked shape.
    const ::ninfer_mut_bytes none[NINFER_MAX_PLANES] = {};
    return detail::refused(::ninfer_import_bitnet_packed(packed.data(), packed.size(), rows, cols,
                                                         weight_scale, scale_rule, none));
  }
  result<owned_tensor> t =
      detail::alloc_tensor(NINFER_FORMAT_T2_G128_FP16, NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols);
  if (!t) return t;
  std::array<::ninfer_mut_bytes, NINFER_MAX_PLANES> planes = detail::mut_planes(*t);
  ::ninfer_status st = ::ninfer_import_bitnet_packed(packed.data(), packed.size(), rows, cols,
                                                     weight_scale, scale_rule, planes.data());
  if (st != NINFER_STATUS_OK) return result<owned_tensor>(st, last_error_message());
  return t;
}

/// Moves a ternary weight stored one word per value into t2_g128_fp16 planes without
/// rounding: with `has_scale`, codes -1/0/+1 scaled by `weight_scale` under `scale_rule`
/// (as try_import_bitnet_packed); without, values -s/0/+s per 128-value group, s exact in
/// binary16. Refusals come back with the library's status and message.
inline result<owned_tensor> try_import_ternary_values(const source& src, std::uint64_t rows,
                                                      std::uint64_t cols, bool has_scale,
                                                      float weight_scale = 0.0f,
                                                      std::uint32_t scale_rule =
                                                          NINFER_TERNARY_SCALE_DIVIDE) {
  if (!detail::source_matches(src, rows, cols) || cols % 128 != 0) {
    const ::ninfer_mut_bytes none[NINFER_MAX_PLANES] = {};
    return detail::refused(::ninfer_import_ternary_values(
        src.data, src.elements * src.element_bytes(), src.type, rows, cols, has_scale ? 1u : 0u,
        weight_scale, scale_rule, none));
  }
  result<owned_tensor> t =
      detail::alloc_tensor(NINFER_FORMAT_T2_G128_FP16, NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols);
  if (!t) return t;
  std::array<::ninfer_mut_bytes, NINFER_MAX_PLANES> planes = detail::mut_planes(*t);
  ::ninfer_status st = ::ninfer_import_ternary_values(
      src.data, src.elements * src.element_bytes(), src.type, rows, cols, has_scale ? 1u : 0u,
      weight_scale, scale_rule, planes.data());
  if (st != NINFER_STATUS_OK) return result<owned_tensor>(st, last_error_message());
  return t;
}

/// Lays out logical FP8 words (`codes` rows × cols E4M3FN, `scales` rows 16-bit words) in
/// the planes of an fp8_e4m3fn_row_* format; follow with fp8_row_validate().
inline result<owned_tensor> try_fp8_row_pack(format f, std::uint64_t rows, std::uint64_t cols,
                                             span<const std::uint8_t> codes,
                                             span<const std::uint16_t> scales) {
  result<format_info> info = try_format_get_info(f);
  if (!info) return result<owned_tensor>(info.code(), info.message());
  result<owned_tensor> t = detail::alloc_tensor(f, info->layout, rows, cols);
  if (!t) return t;
  const std::array<::ninfer_mut_bytes, NINFER_MAX_PLANES> planes = detail::mut_planes(*t);
  ::ninfer_status st = ::ninfer_fp8_row_pack(f, rows, cols, codes.data(), codes.size(),
                                             scales.data(), scales.size(), planes.data());
  if (st != NINFER_STATUS_OK) return result<owned_tensor>(st, last_error_message());
  return t;
}

/// The logical words of a row-scaled FP8 view: codes (rows × cols) and 16-bit row scales.
inline result<void> try_fp8_row_unpack(const weight_view& v, span<std::uint8_t> codes,
                                       span<std::uint16_t> scales) {
  return detail::call(
      ::ninfer_fp8_row_unpack(v.c_view(), codes.data(), codes.size(), scales.data(), scales.size()));
}

/// Swizzles linear [rows, k_blocks] E4M3FN scales into the 128×4 layout; `out` must be
/// round_up(rows, 128) × round_up(k_blocks, 4) bytes.
inline result<void> try_nvfp4_pack_scales(std::uint64_t rows, std::uint64_t k_blocks,
                                          span<const std::uint8_t> linear_scales,
                                          span<std::uint8_t> out) {
  return detail::call(::ninfer_nvfp4_pack_scales(rows, k_blocks, linear_scales.data(),
                                                 linear_scales.size(), out.data(), out.size()));
}
/// The inverse of try_nvfp4_pack_scales (padding ignored).
inline result<void> try_nvfp4_unpack_scales(std::uint64_t rows, std::uint64_t k_blocks,
                                            span<const std::uint8_t> swizzled,
                                            span<std::uint8_t> out) {
  return detail::call(::ninfer_nvfp4_unpack_scales(rows, k_blocks, swizzled.data(),
                                                   swizzled.size(), out.data(), out.size()));
}

#if NINFER_HPP_EXCEPTIONS
inline void fp8_row_unpack(const weight_view& v, span<std::uint8_t> codes,
                           span<std::uint16_t> scales) {
  try_fp8_row_unpack(v, codes, scales).value();
}
inline void nvfp4_pack_scales(std::uint64_t rows, std::uint64_t k_blocks,
                              span<const std::uint8_t> linear_scales, span<std::uint8_t> out) {
  try_nvfp4_pack_scales(rows, k_blocks, linear_scales, out).value();
}
inline void nvfp4_unpack_scales(std::uint64_t rows, std::uint64_t k_blocks,
                                span<const std::uint8_t> swizzled, span<std::uint8_t> out) {
  try_nvfp4_unpack_scales(rows, k_blocks, swizzled, out).value();
}
inline owned_tensor import_gguf(const weight_view& gguf, format target) {
  return try_import_gguf(gguf, target).value();
}
inline owned_tensor import_gguf_ternary(std::uint32_t ggml_type, span<const std::uint8_t> blocks,
                                        std::uint64_t rows, std::uint64_t cols) {
  return try_import_gguf_ternary(ggml_type, blocks, rows, cols).value();
}
inline owned_tensor import_bitnet_packed(span<const std::uint8_t> packed, std::uint64_t rows,
                                         std::uint64_t cols, float weight_scale,
                                         std::uint32_t scale_rule) {
  return try_import_bitnet_packed(packed, rows, cols, weight_scale, scale_rule).value();
}
inline owned_tensor import_ternary_values(const source& src, std::uint64_t rows,
                                          std::uint64_t cols, bool has_scale,
                                          float weight_scale = 0.0f,
                                          std::uint32_t scale_rule = NINFER_TERNARY_SCALE_DIVIDE) {
  return try_import_ternary_values(src, rows, cols, has_scale, weight_scale, scale_rule).value();
}
inline owned_tensor fp8_row_pack(format f, std::uint64_t rows, std::uint64_t cols,
                                 span<const std::uint8_t> codes, span<const std::uint16_t> scales) {
  return try_fp8_row_pack(f, rows, cols, codes, scales).value();
}
inline owned_tensor quantize_grouped(format f, const source& src, std::uint64_t rows,
                                     std::uint64_t cols,
                                     const quantize_options& options = quantize_options(),
                                     quantize_provenance* provenance = nullptr) {
  return try_quantize_grouped(f, src, rows, cols, options, provenance).value();
}
inline owned_tensor fp8_row_maxabs(format f, const source& src, std::uint64_t rows,
                                   std::uint64_t cols) {
  return try_fp8_row_maxabs(f, src, rows, cols).value();
}
inline owned_tensor nvfp4_quantize(const source& src, std::uint64_t rows, std::uint64_t cols,
                                   std::uint64_t sources = 1) {
  return try_nvfp4_quantize(src, rows, cols, sources).value();
}
#endif

// ---- checking a product: q8_1 and q8_K activations, conversions -------------------------

/// The q8_1 image of one activation row: K/32 ggml block_q8_1 (36 bytes each) and the K
/// represented values x̂ a q8_1 product multiplies.
struct q8_1_row {
  std::vector<std::uint8_t> blocks;
  std::vector<float> x_hat;
};

/// Quantizes x (K values, K a multiple of 32) as the q8_1 activation profile does
/// (ninfer_quantize_row_q8_1); an empty `blocks` or `x_hat` is skipped (not both).
inline result<void> try_quantize_row_q8_1(span<const float> x, span<std::uint8_t> blocks,
                                          span<float> x_hat) {
  return detail::call(::ninfer_quantize_row_q8_1(x.data(), x.size(), blocks.data(),
                                                 blocks.size(), x_hat.data(), x_hat.size()));
}
/// The same into new vectors (both outputs).
inline result<q8_1_row> try_quantize_row_q8_1(span<const float> x) {
  q8_1_row r;
  if (x.size() % 32 != 0 || x.empty()) {
    // The library's own refusal (no allocation from a bad K).
    result<void> e = detail::call(::ninfer_quantize_row_q8_1(x.data(), x.size(), nullptr, 0,
                                                             nullptr, 0));
    return result<q8_1_row>(e.code(), e.message());
  }
  r.blocks.resize(x.size() / 32 * 36);
  r.x_hat.resize(x.size());
  ::ninfer_status st = ::ninfer_quantize_row_q8_1(x.data(), x.size(), r.blocks.data(),
                                                  r.blocks.size(), r.x_hat.data(), r.x_hat.size());
  return detail::call(st, std::move(r));
}

/// Quantizes x (K values, K a multiple of 256) as the opt-in q8_K activation profile does
/// (ninfer_quantize_row_q8_k): `blocks` receives K/256 ggml block_q8_K (292 bytes each:
/// binary32 d at 0, 256 int8 codes at 4, 16 int16 sums at 260, little-endian); the product
/// multiplies x̂ = d·q, exact in double.
inline result<void> try_quantize_row_q8_k(span<const float> x, span<std::uint8_t> blocks) {
  return detail::call(::ninfer_quantize_row_q8_k(x.data(), x.size(), blocks.data(), blocks.size()));
}
/// The same into a new vector.
inline result<std::vector<std::uint8_t>> try_quantize_row_q8_k(span<const float> x) {
  if (x.size() % 256 != 0 || x.empty()) {
    // The library's own refusal (no allocation from a bad K).
    result<void> e = detail::call(::ninfer_quantize_row_q8_k(x.data(), x.size(), nullptr, 0));
    return result<std::vector<std::uint8_t>>(e.code(), e.message());
  }
  std::vector<std::uint8_t> blocks(x.size() / 256 * 292);
  ::ninfer_status st = ::ninfer_quantize_row_q8_k(x.data(), x.size(), blocks.data(), blocks.size());
  return detail::call(st, std::move(blocks));
}

/// Converts src_bytes of `src_type` values into `dst_type` (ninfer_convert): widening exact,
/// narrowing rounded to nearest even.
inline result<void> try_convert(const void* src, std::size_t src_bytes, dtype src_type, void* dst,
                                std::size_t dst_bytes, dtype dst_type) {
  return detail::call(::ninfer_convert(src, src_bytes, src_type, dst, dst_bytes, dst_type));
}
/// bf16 or binary16 words (`type`) to their exact f32 values.
inline result<std::vector<float>> try_to_f32(span<const std::uint16_t> words, dtype type) {
  std::vector<float> out(words.size());
  ::ninfer_status st = ::ninfer_convert(words.data(), words.size_bytes(), type, out.data(),
                                        out.size() * sizeof(float), NINFER_DTYPE_F32);
  return detail::call(st, std::move(out));
}
/// f32 values rounded to nearest even bf16 or binary16 words (`type`).
inline result<std::vector<std::uint16_t>> try_from_f32(span<const float> x, dtype type) {
  std::vector<std::uint16_t> out(x.size());
  ::ninfer_status st = ::ninfer_convert(x.data(), x.size_bytes(), NINFER_DTYPE_F32, out.data(),
                                        out.size() * sizeof(std::uint16_t), type);
  return detail::call(st, std::move(out));
}

#if NINFER_HPP_EXCEPTIONS
inline void quantize_row_q8_1(span<const float> x, span<std::uint8_t> blocks, span<float> x_hat) {
  try_quantize_row_q8_1(x, blocks, x_hat).value();
}
inline q8_1_row quantize_row_q8_1(span<const float> x) {
  return try_quantize_row_q8_1(x).value();
}
inline void quantize_row_q8_k(span<const float> x, span<std::uint8_t> blocks) {
  try_quantize_row_q8_k(x, blocks).value();
}
inline std::vector<std::uint8_t> quantize_row_q8_k(span<const float> x) {
  return try_quantize_row_q8_k(x).value();
}
inline void convert(const void* src, std::size_t src_bytes, dtype src_type, void* dst,
                    std::size_t dst_bytes, dtype dst_type) {
  try_convert(src, src_bytes, src_type, dst, dst_bytes, dst_type).value();
}
inline std::vector<float> to_f32(span<const std::uint16_t> words, dtype type) {
  return try_to_f32(words, type).value();
}
inline std::vector<std::uint16_t> from_f32(span<const float> x, dtype type) {
  return try_from_f32(x, type).value();
}
#endif

// ---- linear -----------------------------------------------------------------------------

/// True when this build has a linear kernel for the combination, false when the numbers
/// are valid but it is not implemented; an error for numbers that name nothing.
inline result<bool> try_linear_supported(format f, layout l, dtype x = NINFER_DTYPE_F32,
                                         dtype y = NINFER_DTYPE_F32,
                                         std::uint32_t device = NINFER_DEVICE_CPU) {
  ::ninfer_status st = ::ninfer_linear_supported(f, l, x, y, device);
  if (st == NINFER_STATUS_UNSUPPORTED) return result<bool>(false);
  return detail::call(st, true);
}

/// True when this build computes the combination with the activation profile
/// `activation` (NINFER_ACTIVATION_*), false when the numbers are valid but it does not;
/// an error for numbers that name nothing.
inline result<bool> try_linear_activation_supported(format f, layout l, std::uint32_t activation,
                                                    std::uint32_t device = NINFER_DEVICE_CPU) {
  ::ninfer_status st = ::ninfer_linear_activation_supported(f, l, activation, device);
  if (st == NINFER_STATUS_UNSUPPORTED) return result<bool>(false);
  return detail::call(st, true);
}

/// A bias for the allocating forms of linear::forward / try_forward: N floats added to every
/// output row. Spelled out, `lin.forward(x, m, ninfer::bias_ref(b))`, because a third
/// positional float range is always the output y (`lin.forward(x, m, y)`).
class bias_ref {
 public:
  explicit bias_ref(span<const float> values) noexcept : values_(values) {}
  span<const float> values() const noexcept { return values_; }

 private:
  span<const float> values_;
};

/// A weight prepared for y = x · Wᵀ (+ bias) (ninfer_linear). Move-only; frees its handle.
///
/// Two forms:
/// - owning: `ninfer::linear lin(ninfer::quantize_grouped(...))` (or `std::move(tensor)`)
///   keeps the encoder's planes alive inside the object;
/// - borrowing: `ninfer::linear lin(tensor.view())` or a weight_view over the caller's
///   planes, which must outlive this object. A view of a temporary tensor does not compile
///   (owned_tensor::view() is deleted on rvalues).
///
/// forward() and forward_rows() may run on several threads at once; set_threads() must not
/// overlap any call. A runtime that splits N across its own threads calls set_threads(1)
/// once, then forward_rows() with disjoint ranges n0..n1 from each thread into one y.
/// Calls (x is [m, K], y is [m, N], row-major f32):
///
///   lin.forward(x, m, y);                        // y: a std::vector<float> / span of m × N
///   lin.forward(x, m, y, bias);                  // bias: N floats
///   std::vector<float> y = lin.forward(x, m);
///   std::vector<float> y = lin.forward(x, m, ninfer::bias_ref(bias));
///   lin.forward_rows(x, m, ldx, n0, n1, y, ldy);  // columns n0..n1 of rows ldy apart
class linear {
 public:
  /// An empty object (no handle); assign a prepared one to use it.
  linear() noexcept = default;

  /// Prepares `w` for `device` (NINFER_DEVICE_*). Borrows w's planes.
  static result<linear> try_prepare(const weight_view& w,
                                    std::uint32_t device = NINFER_DEVICE_CPU) {
    ::ninfer_linear* raw = nullptr;
    ::ninfer_status st = ::ninfer_linear_prepare(w.c_view(), device, &raw);
    if (st != NINFER_STATUS_OK) return result<linear>(st, last_error_message());
    linear out;
    out.handle_.reset(raw);
    st = ::ninfer_linear_shape(raw, &out.rows_, &out.cols_);
    if (st != NINFER_STATUS_OK) return result<linear>(st, last_error_message());
    return result<linear>(std::move(out));
  }
  /// Prepares an encoder's output and keeps it: the planes live as long as the result
  /// (moving the tensor's vectors keeps their storage, so the prepared handle stays valid).
  /// On failure the tensor is released.
  static result<linear> try_prepare(owned_tensor&& tensor,
                                    std::uint32_t device = NINFER_DEVICE_CPU) {
    std::unique_ptr<owned_tensor> owned(new owned_tensor(std::move(tensor)));
    result<linear> r = try_prepare(owned->view(), device);
    if (r) (*r).owned_ = std::move(owned);
    return r;
  }
#if NINFER_HPP_EXCEPTIONS
  explicit linear(const weight_view& w, std::uint32_t device = NINFER_DEVICE_CPU)
      : linear(try_prepare(w, device).value()) {}
  /// The owning form (see try_prepare(owned_tensor&&)).
  explicit linear(owned_tensor&& tensor, std::uint32_t device = NINFER_DEVICE_CPU)
      : linear(try_prepare(std::move(tensor), device).value()) {}
#endif

  explicit operator bool() const noexcept { return handle_ != nullptr; }
  /// N: outputs per row of x.
  std::uint64_t rows() const noexcept { return rows_; }
  /// K: inputs per row of x.
  std::uint64_t cols() const noexcept { return cols_; }
  ::ninfer_linear* get() const noexcept { return handle_.get(); }
  /// The tensor this object owns (owning form), else nullptr.
  const owned_tensor* owned() const noexcept { return owned_.get(); }

  /// 0 = process-wide pool (default), 1 = calling thread only, n = a pool of n threads.
  result<void> try_set_threads(std::uint32_t threads) {
    return detail::call(::ninfer_linear_set_threads(handle_.get(), threads));
  }
  /// The activation profile (NINFER_ACTIVATION_EXACT, NINFER_ACTIVATION_Q8_1 or
  /// NINFER_ACTIVATION_Q8_K; see ninfer_linear_set_activation). Unchanged on error.
  result<void> try_set_activation(std::uint32_t activation) {
    return detail::call(::ninfer_linear_set_activation(handle_.get(), activation));
  }
  /// Raw form: `x` holds m × K values of `x_type`; `y` receives m × N values of `y_type`.
  result<void> try_forward(const void* x, std::size_t x_bytes, dtype x_type, std::uint64_t m,
                           void* y, std::size_t y_bytes, dtype y_type,
                           span<const float> bias = span<const float>()) const {
    return detail::call(::ninfer_linear_forward(handle_.get(), x, x_bytes, x_type, m, cols_,
                                                bias.data(), bias.size(), y, y_bytes, y_type));
  }
  /// f32 form: x is [m, K], y (written) is [m, N], bias N floats or empty.
  result<void> try_forward(span<const float> x, std::uint64_t m, span<float> y,
                           span<const float> bias = span<const float>()) const {
    return try_forward(x.data(), x.size() * sizeof(float), NINFER_DTYPE_F32, m, y.data(),
                       y.size() * sizeof(float), NINFER_DTYPE_F32, bias);
  }
  /// Raw form of ninfer_linear_forward_rows: the outputs n0..n1 only, x rows `ldx`
  /// elements apart, y pointing at row 0 column 0 of the full output with rows `ldy`
  /// elements apart (`ldy >= n1`); writes y[r·ldy + n] for r < m, n0 <= n < n1 and nothing
  /// else. `bias` empty or at least n1 floats, indexed by the absolute n. The bits of the
  /// same outputs of try_forward.
  result<void> try_forward_rows(const void* x, std::size_t x_bytes, dtype x_type,
                                std::uint64_t m, std::uint64_t ldx, std::uint64_t n0,
                                std::uint64_t n1, void* y, std::size_t y_bytes, dtype y_type,
                                std::uint64_t ldy,
                                span<const float> bias = span<const float>()) const {
    return detail::call(::ninfer_linear_forward_rows(handle_.get(), x, x_bytes, x_type, m,
                                                     cols_, ldx, bias.data(), bias.size(), n0,
                                                     n1, y, y_bytes, y_type, ldy));
  }
  /// f32 form of try_forward_rows: x holds m rows `ldx` floats apart ((m − 1)·ldx + K
  /// floats), y m rows `ldy` floats apart ((m − 1)·ldy + n1 floats); columns n0..n1 of
  /// each row of y are written.
  result<void> try_forward_rows(span<const float> x, std::uint64_t m, std::uint64_t ldx,
                                std::uint64_t n0, std::uint64_t n1, span<float> y,
                                std::uint64_t ldy,
                                span<const float> bias = span<const float>()) const {
    return try_forward_rows(x.data(), x.size() * sizeof(float), NINFER_DTYPE_F32, m, ldx, n0,
                            n1, y.data(), y.size() * sizeof(float), NINFER_DTYPE_F32, ldy,
                            bias);
  }
  /// f32 form returning a new [m, N] vector.
  result<std::vector<float>> try_forward(span<const float> x, std::uint64_t m) const {
    return try_forward_new(x, m, span<const float>());
  }
  /// f32 form with a bias, returning a new [m, N] vector.
  result<std::vector<float>> try_forward(span<const float> x, std::uint64_t m,
                                         const bias_ref& bias) const {
    return try_forward_new(x, m, bias.values());
  }

#if NINFER_HPP_EXCEPTIONS
  void set_threads(std::uint32_t threads) { try_set_threads(threads).value(); }
  void set_activation(std::uint32_t activation) { try_set_activation(activation).value(); }
  void forward(span<const float> x, std::uint64_t m, span<float> y,
               span<const float> bias = span<const float>()) const {
    try_forward(x, m, y, bias).value();
  }
  std::vector<float> forward(span<const float> x, std::uint64_t m) const {
    return try_forward(x, m).value();
  }
  std::vector<float> forward(span<const float> x, std::uint64_t m, const bias_ref& bias) const {
    return try_forward(x, m, bias).value();
  }
  void forward_rows(span<const float> x, std::uint64_t m, std::uint64_t ldx, std::uint64_t n0,
                    std::uint64_t n1, span<float> y, std::uint64_t ldy,
                    span<const float> bias = span<const float>()) const {
    try_forward_rows(x, m, ldx, n0, n1, y, ldy, bias).value();
  }
#endif

 private:
  result<std::vector<float>> try_forward_new(span<const float> x, std::uint64_t m,
                                             span<const float> bias) const {
    if (m != 0 && rows_ > (SIZE_MAX / sizeof(float)) / m) {
      return result<std::vector<float>>(NINFER_STATUS_OVERFLOW, "m × N overflows");
    }
    std::vector<float> y(detail::to_size(m * rows_));  // fits: checked above
    result<void> r = try_forward(x, m, span<float>(y.data(), y.size()), bias);
    if (!r) return result<std::vector<float>>(r.code(), r.message());
    return result<std::vector<float>>(std::move(y));
  }

  // Declared before handle_ so that the handle is freed before the planes it reads.
  std::unique_ptr<owned_tensor> owned_{};
  handle<::ninfer_linear, ::ninfer_linear_free> handle_{};
  std::uint64_t rows_ = 0;
  std::uint64_t cols_ = 0;
};

#if NINFER_HPP_EXCEPTIONS
inline bool linear_supported(format f, layout l, dtype x = NINFER_DTYPE_F32,
                             dtype y = NINFER_DTYPE_F32, std::uint32_t device = NINFER_DEVICE_CPU) {
  return try_linear_supported(f, l, x, y, device).value();
}
#endif

}  // namespace ninfer

// ==== CUDA ===============================================================================
// ninfer::cuda: the CUDA entry points (ninfer_cuda_*). Every build of the library has them;
// without CUDA support in the build, without the NVIDIA driver or without a GPU they fail
// with NINFER_STATUS_NO_DEVICE and a message saying which. Device memory travels as
// std::uint64_t addresses (CUdeviceptr), streams as void* (CUstream; nullptr = the
// device's default stream). Errors as above: try_* return ninfer::result, the others throw
// ninfer::error.
//
//   if (ninfer::cuda::try_device_count().value_or(0) > 0) {
//     ninfer::cuda::linear lin(w);                        // planes uploaded to device 0
//     lin.forward(d_x, NINFER_DTYPE_BF16, m, d_y, NINFER_DTYPE_F32, stream);  // enqueued
//   }
namespace ninfer {
namespace cuda {

/// Properties of one device (name, compute capability, memory, SMs, L2, native_cubin).
using device_info = ::ninfer_cuda_device_info;
/// A weight whose planes are device memory (addresses and byte lengths).
using device_view = ::ninfer_device_view;

/// True when the linked library was built with CUDA support (says nothing about the machine).
inline bool compiled() noexcept { return ::ninfer_cuda_compiled() != 0; }

/// The number of CUDA devices (NO_DEVICE without CUDA support or driver).
inline result<std::uint32_t> try_device_count() {
  std::uint32_t n = 0;
  ::ninfer_status st = ::ninfer_cuda_device_count(&n);
  return detail::call(st, n);
}
/// The properties of device `ordinal`.
inline result<device_info> try_device_properties(std::uint32_t ordinal = 0) {
  device_info info{};
  ::ninfer_status st = ::ninfer_cuda_device_properties(ordinal, &info);
  return detail::call(st, info);
}

/// A device_view of `f` in `l` with up to three device planes {address, bytes}.
inline device_view make_device_view(format f, layout l, std::uint64_t rows, std::uint64_t cols,
                                    std::array<std::uint64_t, 3> addresses,
                                    std::array<std::uint64_t, 3> lengths) noexcept {
  device_view v{};
  v.format = f;
  v.layout = l;
  v.rows = rows;
  v.cols = cols;
  for (std::size_t i = 0; i < 3; ++i) {
    v.plane_addresses[i] = addresses[i];
    v.plane_lengths[i] = lengths[i];
  }
  return v;
}

/// Device workspace bytes ninfer_cuda_linear_forward of `m` rows needs on `h`.
inline result<std::uint64_t> try_workspace_size(const ::ninfer_linear* h, std::uint64_t m) {
  std::uint64_t n = 0;
  ::ninfer_status st = ::ninfer_cuda_linear_workspace_size(h, m, &n);
  return detail::call(st, n);
}
/// y[m, N] = x[m, k] · Wᵀ (+ bias[N]) on device buffers, enqueued on `stream` (no wait).
/// `workspace` 0: the library allocates in stream order.
inline result<void> try_forward(const ::ninfer_linear* h, std::uint64_t x, dtype x_type,
                                std::uint64_t m, std::uint64_t k, std::uint64_t y, dtype y_type,
                                void* stream = nullptr, std::uint64_t bias = 0,
                                std::uint64_t workspace = 0, std::uint64_t workspace_bytes = 0) {
  return detail::call(::ninfer_cuda_linear_forward(h, x, x_type, m, k, bias, y, y_type, stream,
                                                   workspace, workspace_bytes));
}
/// Rows first .. first + count of the weight decoded into device memory `out`.
inline result<void> try_decode_rows(const ::ninfer_linear* h, std::uint64_t first,
                                    std::uint64_t count, std::uint64_t out, dtype out_type,
                                    void* stream = nullptr) {
  return detail::call(::ninfer_cuda_linear_decode_rows(h, first, count, out, out_type, stream));
}

/// A weight prepared on a CUDA device (a ninfer_linear handle; move-only, freed with
/// ninfer_linear_free). try_prepare uploads a host view's planes (they may be freed
/// afterwards); try_prepare_device borrows planes already in device memory, which must
/// outlive this object. forward() works on device buffers; forward_host() on host ones.
class linear {
 public:
  linear() noexcept = default;

  /// Uploads `w`'s planes to device `ordinal` (ninfer_cuda_linear_prepare).
  static result<linear> try_prepare(const weight_view& w, std::uint32_t ordinal = 0) {
    ::ninfer_linear* raw = nullptr;
    ::ninfer_status st = ::ninfer_cuda_linear_prepare(w.c_view(), ordinal, &raw);
    return adopt(st, raw);
  }
  /// Borrows device planes (ninfer_cuda_linear_prepare_device, zero copy).
  static result<linear> try_prepare_device(const device_view& v, std::uint32_t ordinal = 0) {
    ::ninfer_linear* raw = nullptr;
    ::ninfer_status st = ::ninfer_cuda_linear_prepare_device(&v, ordinal, &raw);
    return adopt(st, raw);
  }
#if NINFER_HPP_EXCEPTIONS
  explicit linear(const weight_view& w, std::uint32_t ordinal = 0)
      : linear(try_prepare(w, ordinal).value()) {}
  explicit linear(const device_view& v, std::uint32_t ordinal = 0)
      : linear(try_prepare_device(v, ordinal).value()) {}
#endif

  explicit operator bool() const noexcept { return handle_ != nullptr; }
  /// N: outputs per row of x.
  std::uint64_t rows() const noexcept { return rows_; }
  /// K: inputs per row of x.
  std::uint64_t cols() const noexcept { return cols_; }
  ::ninfer_linear* get() const noexcept { return handle_.get(); }

  result<std::uint64_t> try_workspace_size(std::uint64_t m) const {
    return cuda::try_workspace_size(handle_.get(), m);
  }
  /// x: m × K values of x_type, y: m × N of y_type, bias: N floats or 0 (device addresses).
  result<void> try_forward(std::uint64_t x, dtype x_type, std::uint64_t m, std::uint64_t y,
                           dtype y_type, void* stream = nullptr, std::uint64_t bias = 0,
                           std::uint64_t workspace = 0,
                           std::uint64_t workspace_bytes = 0) const {
    return cuda::try_forward(handle_.get(), x, x_type, m, cols_, y, y_type, stream, bias,
                             workspace, workspace_bytes);
  }
  result<void> try_decode_rows(std::uint64_t first, std::uint64_t count, std::uint64_t out,
                               dtype out_type, void* stream = nullptr) const {
    return cuda::try_decode_rows(handle_.get(), first, count, out, out_type, stream);
  }
  /// Host buffers (ninfer_linear_forward: copies in and out, synchronous); f32 x [m, K],
  /// y [m, N].
  result<void> try_forward_host(span<const float> x, std::uint64_t m, span<float> y,
                                span<const float> bias = span<const float>()) const {
    return detail::call(::ninfer_linear_forward(handle_.get(), x.data(), x.size() * sizeof(float),
                                                NINFER_DTYPE_F32, m, cols_, bias.data(),
                                                bias.size(), y.data(), y.size() * sizeof(float),
                                                NINFER_DTYPE_F32));
  }

#if NINFER_HPP_EXCEPTIONS
  std::uint64_t workspace_size(std::uint64_t m) const { return try_workspace_size(m).value(); }
  void forward(std::uint64_t x, dtype x_type, std::uint64_t m, std::uint64_t y, dtype y_type,
               void* stream = nullptr, std::uint64_t bias = 0, std::uint64_t workspace = 0,
               std::uint64_t workspace_bytes = 0) const {
    try_forward(x, x_type, m, y, y_type, stream, bias, workspace, workspace_bytes).value();
  }
  void decode_rows(std::uint64_t first, std::uint64_t count, std::uint64_t out, dtype out_type,
                   void* stream = nullptr) const {
    try_decode_rows(first, count, out, out_type, stream).value();
  }
  void forward_host(span<const float> x, std::uint64_t m, span<float> y,
                    span<const float> bias = span<const float>()) const {
    try_forward_host(x, m, y, bias).value();
  }
#endif

 private:
  static result<linear> adopt(::ninfer_status st, ::ninfer_linear* raw) {
    if (st != NINFER_STATUS_OK) return result<linear>(st, last_error_message());
    linear out;
    out.handle_.reset(raw);
    st = ::ninfer_linear_shape(raw, &out.rows_, &out.cols_);
    if (st != NINFER_STATUS_OK) return result<linear>(st, last_error_message());
    return result<linear>(std::move(out));
  }

  handle<::ninfer_linear, ::ninfer_linear_free> handle_{};
  std::uint64_t rows_ = 0;
  std::uint64_t cols_ = 0;
};

#if NINFER_HPP_EXCEPTIONS
inline std::uint32_t device_count() { return try_device_count().value(); }
inline device_info device_properties(std::uint32_t ordinal = 0) {
  return try_device_properties(ordinal).value();
}
#endif

}  // namespace cuda
}  // namespace ninfer

#endif  // NINFER_HPP
