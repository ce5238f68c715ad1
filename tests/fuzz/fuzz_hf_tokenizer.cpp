//===- fuzz_hf_tokenizer.cpp - libFuzzer target for tokenizer.json --------===//
//
// Loads the input as a Hugging Face tokenizer.json (tlm::io::
// loadHfTokenizer, through a temporary file as fuzz_tokenizer.cpp does).
// When it loads, fixed strings (ASCII, contractions, digits, multi-byte and
// invalid UTF-8, the spellings of added tokens) are encoded with and
// without BOS and added-token recognition, decoded whole and through a
// StreamDecoder, and out-of-range ids are fed to piece(). With
// TLM_FUZZ_INVARIANTS=1: ids inside the vocabulary, every encoded id
// decodable, the stream equal to decode, out-of-range ids errors.
//
//===----------------------------------------------------------------------===//

#include "lib/io/Tokenizer.h"
#include "tests/fuzz/TokenizerChecks.h"

#include "lib/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

tlm::fuzz::InputFile &input() {
  static tlm::fuzz::InputFile file("hf-tokenizer");
  return file;
}

const char *const kTexts[] = {
    "",
    "the thing",
    " It'S 2024, WE'LL  see\ttabs\r\n\n end ",
    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82 1234567",
    "\xff\xfe\xc3 \x80\x80\xe6\x97 bad utf-8 \xf0\x9f",
    "<s>x</s><|endoftext|><tool><0x41>",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
};

void exercise(const tlm::io::Tokenizer &tok, std::string_view text,
              bool addBos) {
  (void)tlm::fuzz::checkDecoding(tok, tok.encode(text, addBos));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input().write(data, size);
  tlm::Expected<std::unique_ptr<tlm::io::Tokenizer>> tok =
      tlm::io::loadHfTokenizer(input().path());
  if (!tok) {
    (void)tok.takeError();
    return 0;
  }
  tlm::io::Tokenizer &t = **tok;
  for (bool special : {false, true}) {
    TLM_FUZZ_CHECK(t.setParseSpecial(special),
                   "a tokenizer.json refused --special");
    for (const char *text : kTexts)
      for (bool addBos : {true, false})
        exercise(t, text, addBos);
  }
  tlm::fuzz::checkInvalidIds(t);
  return 0;
}
