//===- LlvmError.cpp - tlm::Error across the compiler boundary -----------===//

#include "lib/support/LlvmError.h"

char tlm::UnavailableError::ID = 0;
