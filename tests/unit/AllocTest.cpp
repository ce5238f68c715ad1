//===- AllocTest.cpp - the compiled code's heap: counted, bounded, failing -===//
//
// lib/runtime/abi/Alloc.cpp alone (as an artifact links it): blocks keep
// the alignment asked for, the live total and its peak follow allocations
// and frees, and the two ways an allocation fails (over the limit tlm-run
// sets, or malloc's null) end the process with one error line and exit 1.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/abi/Alloc.h"

#include <cstdint>

#include <gtest/gtest.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
// ASan aborts on an allocation it cannot serve; the malloc-failure test
// needs malloc's null, as without it.
extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1";
}
#endif
#endif

namespace {

TEST(Alloc, CountsLiveBytesAndPeak) {
  uint64_t base = tlm_abi_heap_live();
  tlm_abi_heap_reset_peak();
  void *a = _mlir_memref_to_llvm_alloc(1000);
  void *b = _mlir_memref_to_llvm_aligned_alloc(64, 5000);
  EXPECT_EQ(tlm_abi_heap_live(), base + 6000);
  _mlir_memref_to_llvm_free(a);
  EXPECT_EQ(tlm_abi_heap_live(), base + 5000);
  void *c = _mlir_memref_to_llvm_alloc(500);
  EXPECT_EQ(tlm_abi_heap_peak(), base + 6000) << "the high-water mark stays";
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);
  _mlir_memref_to_llvm_free(nullptr);
  EXPECT_EQ(tlm_abi_heap_live(), base);
  tlm_abi_heap_reset_peak();
  EXPECT_EQ(tlm_abi_heap_peak(), base);
}

TEST(Alloc, KeepsTheAlignmentAskedFor) {
  for (uint64_t alignment : {1, 8, 16, 32, 64, 128, 4096}) {
    void *p = _mlir_memref_to_llvm_aligned_alloc(alignment, 100);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u) << alignment;
    // Every byte asked for is usable (ASan-free build: a write past the
    // block would corrupt the next header, which the free would trip on).
    static_cast<char *>(p)[0] = 1;
    static_cast<char *>(p)[99] = 1;
    _mlir_memref_to_llvm_free(p);
  }
  void *p = _mlir_memref_to_llvm_alloc(24);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u) << "malloc's alignment";
  _mlir_memref_to_llvm_free(p);
}

TEST(AllocDeathTest, OverTheLimitIsOneErrorLine) {
  EXPECT_EXIT(
      {
        tlm_abi_heap_set_limit(tlm_abi_heap_live() + (1 << 20));
        void *fits = _mlir_memref_to_llvm_alloc(1 << 19);
        (void)fits;
        _mlir_memref_to_llvm_aligned_alloc(64, 1 << 20);
      },
      testing::ExitedWithCode(1),
      "^error: out of memory: the compiled model could not allocate a "
      "buffer of 0.001 GB: it holds 0.002 GB and the memory left to this run "
      "when it started was 0.001 GB \\(see docs/memory.md\\)\n$");
}

TEST(AllocDeathTest, MallocFailureIsOneErrorLine) {
  EXPECT_EXIT(_mlir_memref_to_llvm_alloc(uint64_t(1) << 62),
              testing::ExitedWithCode(1),
              // Not anchored at the start: ASan warns first.
              "error: out of memory: the compiled model could not allocate "
              "a buffer of 4611686018.427 GB \\(the machine's memory, "
              "ulimit -v or the cgroup's limit; see docs/memory.md\\)\n$");
  EXPECT_EXIT(_mlir_memref_to_llvm_aligned_alloc(64, UINT64_MAX - 8),
              testing::ExitedWithCode(1), "^error: out of memory");
}

} // namespace
