//===- LlvmError.cpp - tlm::Error across the compiler boundary -----------===//

#include "lib/compiler/LlvmError.h"

char tlm::UnavailableError::ID = 0;
