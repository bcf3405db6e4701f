/* ninfer_cuda_compiled() agrees with the build (CMake NINFER_CUDA, passed as
 * EXPECT_CUDA_COMPILED), and on a machine without the NVIDIA driver or a GPU
 * ninfer_cuda_device_count answers NO_DEVICE with a message that says why, leaving its
 * output alone. Prints "ninfer_cuda_compiled() = N". */
#include "ninfer.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  uint32_t compiled = ninfer_cuda_compiled();
  uint32_t count = 77;
  char msg[512] = {0};
  ninfer_status st = ninfer_cuda_device_count(&count);
  ninfer_last_error_message(msg, sizeof msg);
  printf("ninfer_cuda_compiled() = %u\n", (unsigned)compiled);
  printf("ninfer_cuda_device_count: %s (%u) %s\n", ninfer_status_name(st), (unsigned)count, msg);
  if (compiled != EXPECT_CUDA_COMPILED) {
    fprintf(stderr, "expected ninfer_cuda_compiled() = %d\n", EXPECT_CUDA_COMPILED);
    return 1;
  }
  if (st == NINFER_STATUS_NO_DEVICE) {
    /* A build without CUDA says so; a build with it names the missing driver or device. */
    int says_not_compiled = strstr(msg, "no CUDA support") != NULL;
    if (msg[0] == '\0' || count != 77 || says_not_compiled != (compiled == 0)) {
      fprintf(stderr, "unexpected NO_DEVICE message or output\n");
      return 1;
    }
  } else if (st != NINFER_STATUS_OK || compiled == 0) {
    return 1; /* a machine with a GPU: only a CUDA build may report devices */
  }
  return 0;
}
