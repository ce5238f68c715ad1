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

#include <initializer_list>

namespace mlir::tlm {

struct OptionBound {
  llvm::StringRef name;
  int64_t value;
  int64_t min;
};

/// Fails with "<pass>: <name> must be >= <min>, got <value>" on `op` for the
/// first option below its bound.
inline LogicalResult checkOptions(Operation *op, llvm::StringRef pass,
                                  std::initializer_list<OptionBound> options) {
  for (const OptionBound &o : options)
    if (o.value < o.min)
      return op->emitError() << pass << ": " << o.name
                             << " must be >= " << o.min << ", got " << o.value;
  return success();
}

} // namespace mlir::tlm

#endif // TLM_PASSES_COMMON_OPTIONCHECKS_H
