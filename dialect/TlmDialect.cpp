//===- TlmDialect.cpp - the tlm dialect -----------------------------------===//

#include "dialect/TlmDialect.h"

using namespace mlir;
using namespace mlir::tlm;

#include "dialect/TlmOpsDialect.cpp.inc"

void TlmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/TlmOps.cpp.inc"
      >();
}
