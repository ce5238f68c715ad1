//===- Allocator.cpp - the process's heap policy for decoding -------------===//

#include "lib/runtime/Allocator.h"

#include <limits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

void tlm::runtime::keepFreedMemory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}
