//===- Alloc.cpp - the compiled code's heap, with its failure reported ----===//

#include "lib/runtime/abi/Alloc.h"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace {

/// A buffer of the model's own (not an input's) could not be had: the
/// process cannot go on, and the caller has no error path to take.
[[noreturn]] void outOfMemory(uint64_t size) {
  char line[200];
  int n = std::snprintf(line, sizeof(line),
                        "error: out of memory: the compiled model could not "
                        "allocate a buffer of %.3f GB (the machine's memory, "
                        "ulimit -v or the cgroup's limit; see docs/memory.md)\n",
                        double(size) / 1e9);
  ssize_t written = ::write(2, line, n > 0 ? size_t(n) : 0);
  (void)written;
  ::_exit(1);
}

} // namespace

extern "C" void *_mlir_memref_to_llvm_alloc(uint64_t size) {
  void *p = std::malloc(size);
  if (!p && size)
    outOfMemory(size);
  return p;
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment,
                                                     uint64_t size) {
  void *p = nullptr;
  if (::posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *)
                                                      : alignment,
                       size) != 0 &&
      size)
    outOfMemory(size);
  return p;
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) { std::free(ptr); }
