//===- Strategy.cpp - every heuristic of the CPU codegen ------------------===//

#include "passes/cpu/Strategy.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;

tlm::CpuTarget tlm::withLanes(CpuTarget host, int64_t lanes) {
  if (lanes == 0 || lanes == host.lanes)
    return host;
  host.lanes = lanes;
  host.vectorRegisters = lanes >= 16 ? 32 : 16;
  return host;
}

tlm::RegisterBlocks tlm::registerBlocks(int64_t lanes,
                                        int64_t vectorRegisters) {
  // A packed tile keeps pack-rows x 2 accumulator vectors, plus the panel's
  // two vectors and a broadcast of x: 8 x 2 (+3) of AVX-512's 32 registers,
  // 6 x 2 of AVX2's 16 (8 x 2 spills there). A split-k block keeps
  // row-tile x col-tile (2) accumulators and loads of both operands.
  RegisterBlocks blocks;
  blocks.packCols = 2 * lanes;
  blocks.packRows = std::clamp<int64_t>((vectorRegisters - 3) / 2, 1, 8);
  blocks.rowTile = std::clamp<int64_t>(vectorRegisters / 4, 1, 8);
  return blocks;
}

int64_t tlm::gemvColumns(const CpuTarget &target, uint64_t weightBytes,
                         int64_t requested) {
  if (requested != 0)
    return requested;
  // From memory, one stream through W reads faster than eight streams at
  // once; from cache, eight rows sharing each load of x win.
  return weightBytes > target.lastLevelCacheBytes ? 1 : 8;
}

int64_t tlm::threadChunk(int64_t n, int64_t cols, int64_t threads) {
  int64_t even = llvm::divideCeil(llvm::divideCeil(n, threads), cols) * cols;
  if (ShapedType::isDynamic(n) || n % cols != 0)
    return even;
  // A ragged last chunk leaves its blocks scalar: 10000 columns of 16 on 2
  // threads as 5008 + 4992 made cs336-ts's head a scalar loop; 25 chunks of
  // 400 (13 and 12 per thread) keep every block whole.
  int64_t blocks = n / cols;
  for (int64_t size = blocks; size >= 1; --size) {
    if (blocks % size != 0)
      continue;
    int64_t busiest = llvm::divideCeil(blocks / size, threads) * size * cols;
    if (busiest * 16 <= even * 17)
      return size * cols;
  }
  return even;
}

int64_t tlm::headChunk(int64_t heads, int64_t threads) {
  threads = std::max<int64_t>(threads, 1);
  int64_t share = (heads + threads - 1) / threads;
  for (int64_t c = share; c > 1; --c)
    if (heads % c == 0)
      return c;
  return 1;
}

int64_t tlm::defaultThreads(uint64_t work, int64_t cores) {
  uint64_t threads = work / kStepWorkPerThread;
  return std::clamp<int64_t>(int64_t(std::min<uint64_t>(threads, 1 << 20)), 1,
                             std::max<int64_t>(cores, 1));
}
