//===- OptionChecks.h - pass options checked before any rewrite -*- C++ -*-===//
//
// A pass option out of its range (a zero block size, zero lanes) would
// divide by zero or loop forever deep inside a rewrite; every pass with
// numeric options checks them first and fails with one diagnostic instead.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_COMMON_OPTIONCHECKS_H
#define TLM_PASSES_COMMON_OPTIONCHECKS_H

#include "mlir/IR/Operation.h"
#include "llvm/Support/MathExtras.h"

#include <initializer_list>

namespace mlir::tlm {

struct OptionBound {
  llvm::StringRef name;
  int64_t value;
  int64_t min;
  /// Vector lanes: a count of f32 in a register, so 1, 2, 4, 8, 16, ...
  bool powerOfTwo = false;
};

/// Fails with "<pass>: <name> must be >= <min>, got <value>" (or "must be a
/// power of two") on `op` for the first option out of its bound.
inline LogicalResult checkOptions(Operation *op, llvm::StringRef pass,
                                  std::initializer_list<OptionBound> options) {
  for (const OptionBound &o : options) {
    if (o.value < o.min)
      return op->emitError() << pass << ": " << o.name
                             << " must be >= " << o.min << ", got " << o.value;
    if (o.powerOfTwo && !llvm::isPowerOf2_64(o.value))
      return op->emitError() << pass << ": " << o.name
                             << " must be a power of two (f32 lanes of a "
                                "vector register), got "
                             << o.value;
  }
  return success();
}

} // namespace mlir::tlm

#endif // TLM_PASSES_COMMON_OPTIONCHECKS_H
