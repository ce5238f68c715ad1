//===- fuzz_tokenizer.cpp - libFuzzer target for llama2.c tokenizer.bin ---===//
//
// Writes the input to a temporary file (one per process, rewritten for every
// input; see InputFile in FuzzUtil.h) and loads it with
// tlm::io::loadLlama2cTokenizer. When it loads, a few fixed strings (ASCII,
// multi-byte UTF-8, invalid UTF-8, text that spells byte pieces) are encoded
// with and without BOS, decoded in one go and through a StreamDecoder, and
// out-of-range ids are fed to piece(). With TLM_FUZZ_INVARIANTS=1 the
// documented promises are checked: ids inside the vocabulary,
// decode(encode(text, true)) == text, the stream equals decode, out-of-range
// ids are errors.
//
//===----------------------------------------------------------------------===//

#include "lib/io/Tokenizer.h"
#include "tests/fuzz/TokenizerChecks.h"

#include "lib/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

tlm::fuzz::InputFile &input() {
  static tlm::fuzz::InputFile file("tokenizer");
  return file;
}

const char *const kTexts[] = {
    "",
    "hello",
    "Hello, world! hello hello",
    " leading and  double  spaces ",
    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82", // UTF-8
    "\xff\xfe\xc3 \x80\x80\xe6\x97 bad utf-8 \xf0\x9f",      // invalid
    "<0x41><0x20><s></s><unk>",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
};

void exercise(const tlm::io::Tokenizer &tok, std::string_view text,
              bool addBos) {
  std::optional<std::string> decoded =
      tlm::fuzz::checkDecoding(tok, tok.encode(text, addBos));
  if (!decoded)
    return;
  if (addBos)
    TLM_FUZZ_CHECK(*decoded == text, "decode(encode(text, true)) != text");
  else if (!text.empty())
    TLM_FUZZ_CHECK(*decoded == " " + std::string(text),
                   "decode(encode(text, false)) != \" \" + text");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input().write(data, size);
  tlm::Expected<std::unique_ptr<tlm::io::Tokenizer>> tok =
      tlm::io::loadLlama2cTokenizer(input().path());
  if (!tok) {
    (void)tok.takeError();
    return 0;
  }
  const tlm::io::Tokenizer &t = **tok;
  TLM_FUZZ_CHECK(t.vocabSize() > 2, "loaded a vocabulary without specials");
  for (const char *text : kTexts)
    for (bool addBos : {true, false})
      exercise(t, text, addBos);
  // Invalid ids must be errors, not reads outside the tables.
  tlm::fuzz::checkInvalidIds(t);
  // Every id has a piece, in every context the decoder uses.
  for (int64_t id = 0; id < t.vocabSize(); ++id)
    for (int64_t prev : {int64_t(-1), t.bos()}) {
      tlm::Expected<std::string_view> piece = t.piece(prev, id);
      if (!piece) {
        (void)piece.takeError();
        TLM_FUZZ_CHECK(false, "piece() rejected an id inside the vocabulary");
        continue;
      }
      tlm::fuzz::keep(piece->size());
    }
  return 0;
}
