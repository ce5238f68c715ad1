//===- Alloc.cpp - the compiled code's heap, counted and bounded ----------===//

#include "lib/runtime/abi/Alloc.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace {

std::atomic<uint64_t> live{0};
std::atomic<uint64_t> peak{0};
std::atomic<uint64_t> limit{0};

/// In front of every block: its size and how far before the block malloc's
/// pointer lies. 16 bytes keep a plain block as aligned as malloc's.
struct alignas(16) Header {
  uint64_t size;
  uint64_t offset;
};

/// A buffer of the model's own (not an input's) could not be had: the
/// process cannot go on, and the caller has no error path to take.
[[noreturn]] void outOfMemory(uint64_t size, bool overLimit) {
  char line[400];
  int n = overLimit
              ? std::snprintf(
                    line, sizeof(line),
                    "error: out of memory: the compiled model could not "
                    "allocate a buffer of %.3f GB: it holds %.3f GB and the "
                    "memory left to this run when it started was %.3f GB "
                    "(see docs/memory.md)\n",
                    double(size) / 1e9, double(live.load()) / 1e9,
                    double(limit.load()) / 1e9)
              : std::snprintf(
                    line, sizeof(line),
                    "error: out of memory: the compiled model could not "
                    "allocate a buffer of %.3f GB (the machine's memory, "
                    "ulimit -v or the cgroup's limit; see docs/memory.md)\n",
                    double(size) / 1e9);
  ssize_t written = ::write(2, line, n > 0 ? size_t(n) : 0);
  (void)written;
  ::_exit(1);
}

/// Counts `size` in, or dies with the limit's message.
void take(uint64_t size) {
  uint64_t now = live.fetch_add(size) + size;
  uint64_t cap = limit.load(std::memory_order_relaxed);
  if (cap && now > cap)
    outOfMemory(size, /*overLimit=*/true);
  uint64_t high = peak.load(std::memory_order_relaxed);
  while (now > high && !peak.compare_exchange_weak(high, now))
    ;
}

void *place(void *raw, uint64_t offset, uint64_t size) {
  auto *block = static_cast<char *>(raw) + offset;
  reinterpret_cast<Header *>(block)[-1] = {size, offset};
  return block;
}

} // namespace

extern "C" void *_mlir_memref_to_llvm_alloc(uint64_t size) {
  take(size);
  void *raw = size > UINT64_MAX - sizeof(Header)
                  ? nullptr
                  : std::malloc(size + sizeof(Header));
  if (!raw)
    outOfMemory(size, /*overLimit=*/false);
  return place(raw, sizeof(Header), size);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment,
                                                     uint64_t size) {
  // The header goes in a whole alignment step ahead of the block.
  uint64_t step = alignment < sizeof(Header) ? sizeof(Header) : alignment;
  take(size);
  void *raw = nullptr;
  if (size > UINT64_MAX - step ||
      ::posix_memalign(&raw, step < sizeof(void *) ? sizeof(void *) : step,
                       size + step) != 0)
    outOfMemory(size, /*overLimit=*/false);
  return place(raw, step, size);
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  Header header = static_cast<Header *>(ptr)[-1];
  live.fetch_sub(header.size);
  std::free(static_cast<char *>(ptr) - header.offset);
}

extern "C" uint64_t tlm_abi_heap_live(void) { return live.load(); }
extern "C" uint64_t tlm_abi_heap_peak(void) { return peak.load(); }
extern "C" void tlm_abi_heap_reset_peak(void) { peak.store(live.load()); }
extern "C" void tlm_abi_heap_set_limit(uint64_t bytes) { limit.store(bytes); }
