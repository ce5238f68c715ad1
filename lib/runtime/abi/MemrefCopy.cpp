//===- MemrefCopy.cpp - the one runtime function compiled code may call ---===//
//
// `memref.copy` between buffers whose layouts differ lowers to a call of
// memrefCopy (the name and signature MLIR's LLVM lowering emits). The JIT
// resolves it from MLIR's runner utilities; an artifact carries this
// implementation instead (linked in from libtlm_abi.a), so it needs no MLIR
// library at run time. Plain C++, no dependencies.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

/// A memref descriptor of any rank as the lowering lays it out: allocated
/// and aligned pointers, offset, then `rank` sizes and `rank` strides (in
/// elements).
struct Descriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[1];
};

struct UnrankedMemref {
  int64_t rank;
  Descriptor *descriptor;
};

} // namespace

extern "C" void memrefCopy(int64_t elemSize, UnrankedMemref *src,
                           UnrankedMemref *dst) {
  int64_t rank = src->rank;
  const Descriptor *s = src->descriptor, *d = dst->descriptor;
  const int64_t *sizes = s->sizesAndStrides;
  const int64_t *srcStrides = s->sizesAndStrides + rank;
  const int64_t *dstStrides = d->sizesAndStrides + rank;
  char *from = s->aligned + s->offset * elemSize;
  char *to = d->aligned + d->offset * elemSize;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i)
    count *= sizes[i];
  if (count == 0)
    return;
  // Both row-major and dense: one block.
  bool dense = true;
  for (int64_t i = rank - 1, expect = 1; i >= 0; --i) {
    if (sizes[i] != 1 && (srcStrides[i] != expect || dstStrides[i] != expect))
      dense = false;
    expect *= sizes[i];
  }
  if (dense) {
    std::memmove(to, from, count * elemSize);
    return;
  }
  // Otherwise element by element, the index counting up like an odometer.
  std::vector<int64_t> index(rank, 0);
  int64_t srcAt = 0, dstAt = 0;
  for (int64_t n = 0; n < count; ++n) {
    std::memcpy(to + dstAt * elemSize, from + srcAt * elemSize, elemSize);
    for (int64_t i = rank - 1; i >= 0; --i) {
      srcAt += srcStrides[i];
      dstAt += dstStrides[i];
      if (++index[i] < sizes[i])
        break;
      srcAt -= srcStrides[i] * sizes[i];
      dstAt -= dstStrides[i] * sizes[i];
      index[i] = 0;
    }
  }
}
