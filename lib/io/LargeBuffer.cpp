//===- LargeBuffer.cpp - memory for weights and the KV cache --------------===//

#include "lib/io/LargeBuffer.h"

#include <algorithm>
#include <cstdlib>
#include <sys/mman.h>

using namespace tlm::io;

void LargeBuffer::Free::operator()(void *p) const { std::free(p); }

LargeBuffer LargeBuffer::allocate(size_t bytes, bool hugePages) {
  LargeBuffer b;
  bool huge = hugePages && bytes >= kHugePage;
  size_t align = huge ? kHugePage : 64;
  // aligned_alloc wants a multiple of the alignment; the rounding wastes
  // less than one huge page, which is never touched.
  size_t size = (std::max<size_t>(bytes, 1) + align - 1) / align * align;
  b.data_.reset(std::aligned_alloc(align, size));
  if (!b.data_)
    return b;
  b.size_ = bytes;
#ifdef MADV_HUGEPAGE
  // Advice only: a kernel without THP refuses it and the memory stays as
  // it is, which is still correct.
  b.huge_ = huge && ::madvise(b.data_.get(), size, MADV_HUGEPAGE) == 0;
#endif
  return b;
}
