/* Input of translate-c (build.zig): the C API of libninfer. */
#include <ninfer.h>
