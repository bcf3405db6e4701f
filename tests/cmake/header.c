/* The generated header alone, compiled as strict C99 / C11 (see CMakeLists.txt). */
#include "ninfer.h"

int main(void) {
  ninfer_weight_view v = {0};
  ninfer_status st = NINFER_STATUS_OK;
  (void)v;
  return (ninfer_format_count() > 0 && st == 0) ? 0 : 1;
}
