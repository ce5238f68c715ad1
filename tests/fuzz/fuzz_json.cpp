//===- fuzz_json.cpp - libFuzzer target for tlm::json::Value::parse -------===//
//
// Feeds the input to the runtime's JSON parser. A failure must carry a
// message; a success must print (dump) as JSON that parses back to the same
// text, when TLM_FUZZ_INVARIANTS=1 (see FuzzUtil.h).
//
//===----------------------------------------------------------------------===//

#include "lib/support/Json.h"
#include "tests/fuzz/FuzzUtil.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  tlm::Expected<tlm::json::Value> value = tlm::json::Value::parse(text);
  if (!value) {
    std::string message = value.takeError().message();
    TLM_FUZZ_CHECK(!message.empty(), "parse failed with an empty message");
    return 0;
  }
  std::string printed = value->dump();
  tlm::Expected<tlm::json::Value> again = tlm::json::Value::parse(printed);
  TLM_FUZZ_CHECK(bool(again), "its own output does not parse");
  if (again)
    TLM_FUZZ_CHECK(again->dump() == printed, "printing is not a fixed point");
  return 0;
}
