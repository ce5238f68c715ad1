//===- LargeBuffer.cpp - memory for weights and the KV cache --------------===//

#include "lib/io/LargeBuffer.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

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

size_t LargeBuffer::residentBytes() const {
  if (!data_ || size_ == 0)
    return 0;
  // mincore wants a page-aligned start; the block's own pages are the ones
  // from its start (64-byte or huge-page aligned) to its end.
  size_t page = size_t(::sysconf(_SC_PAGESIZE));
  uintptr_t begin = reinterpret_cast<uintptr_t>(data_.get()) / page * page;
  uintptr_t end = reinterpret_cast<uintptr_t>(data_.get()) + size_;
  std::vector<unsigned char> in((end - begin + page - 1) / page);
  if (::mincore(reinterpret_cast<void *>(begin), end - begin, in.data()) != 0)
    return 0;
  size_t pages = 0;
  for (unsigned char c : in)
    pages += c & 1;
  return pages * page;
}
