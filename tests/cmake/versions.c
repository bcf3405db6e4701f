/* The three version sources agree: Cargo.toml (passed by CMake as CARGO_VERSION_*), the
 * header macros and the runtime functions; and the ABI number is the SONAME's. */
#include "ninfer.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  int bad = 0;
  if (NINFER_VERSION_MAJOR != CARGO_VERSION_MAJOR || NINFER_VERSION_MINOR != CARGO_VERSION_MINOR ||
      NINFER_VERSION_PATCH != CARGO_VERSION_PATCH) {
    fprintf(stderr, "header %d.%d.%d != Cargo.toml %s\n", NINFER_VERSION_MAJOR,
            NINFER_VERSION_MINOR, NINFER_VERSION_PATCH, CARGO_VERSION);
    bad = 1;
  }
  if (ninfer_version_major() != NINFER_VERSION_MAJOR || ninfer_version_minor() != NINFER_VERSION_MINOR ||
      ninfer_version_patch() != NINFER_VERSION_PATCH || ninfer_abi_version() != NINFER_ABI_VERSION) {
    fprintf(stderr, "runtime numbers differ from the header\n");
    bad = 1;
  }
  if (strcmp(ninfer_version(), CARGO_VERSION) != 0) {
    fprintf(stderr, "ninfer_version() = %s != Cargo.toml %s\n", ninfer_version(), CARGO_VERSION);
    bad = 1;
  }
  {
    char soname[32];
    snprintf(soname, sizeof soname, "libninfer.so.%d", NINFER_ABI_VERSION);
    if (strcmp(soname, SONAME) != 0) {
      fprintf(stderr, "NINFER_ABI_VERSION gives %s, CMake stages %s\n", soname, SONAME);
      bad = 1;
    }
  }
  printf("versions: Cargo %s, header %d.%d.%d (ABI %d), library %s: %s\n", CARGO_VERSION,
         NINFER_VERSION_MAJOR, NINFER_VERSION_MINOR, NINFER_VERSION_PATCH, NINFER_ABI_VERSION,
         ninfer_version(), bad ? "MISMATCH" : "agree");
  return bad;
}
