//===- fuzz_tokens.cpp - libFuzzer target for the token-file reader -------===//
//
// Writes the input to a temporary file and reads it as a --tokens-file; when
// it is accepted, every id is read and the matrix must hold batch x seq ids.
//
//===----------------------------------------------------------------------===//

#include "lib/io/TokenFile.h"
#include "tests/fuzz/FuzzUtil.h"

#include <cstdlib>

namespace {
tlm::fuzz::InputFile &input() {
  static tlm::fuzz::InputFile file("tokens");
  return file;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input().write(data, size);
  auto tokens = tlm::io::readTokenFile(input().path());
  if (!tokens) {
    (void)tokens.takeError();
    return 0;
  }
  if (tokens->batch < 1 || tokens->seq < 1 ||
      int64_t(tokens->ids.size()) != tokens->batch * tokens->seq)
    std::abort(); // an accepted file must describe its matrix exactly
  volatile uint64_t sum = 0; // unsigned: wrapping is defined
  for (int64_t id : tokens->ids)
    sum = sum + uint64_t(id);
  return 0;
}
