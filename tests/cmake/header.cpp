// The generated header alone, compiled as strict C++11 / C++17 / C++20; from C++17 on,
// ninfer.hpp too.
#include "ninfer.h"
#if __cplusplus >= 201703L
#include "ninfer.hpp"
#endif

int main() {
  ninfer_weight_view v = {};
  ninfer_status st = NINFER_STATUS_OK;
  (void)v;
#if __cplusplus >= 201703L
  if (!ninfer::library_matches_header()) return 2;
#endif
  return (ninfer_format_count() > 0 && st == NINFER_STATUS_OK) ? 0 : 1;
}
