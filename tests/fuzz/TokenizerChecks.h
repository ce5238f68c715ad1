//===- TokenizerChecks.h - what every tokenizer target checks ---*- C++ -*-===//
//
// The promises of io::Tokenizer that hold for every vocabulary: encode's
// ids lie in the vocabulary, decode accepts them, and a StreamDecoder fed
// them one by one gives decode's text. Each target adds its own (llama2.c's
// round trip, say).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_FUZZ_TOKENIZERCHECKS_H
#define TLM_TESTS_FUZZ_TOKENIZERCHECKS_H

#include "lib/io/Tokenizer.h"
#include "tests/fuzz/FuzzUtil.h"

#include <optional>
#include <string>
#include <vector>

namespace tlm::fuzz {

/// decode(ids), after the checks above; nullopt when decode failed.
inline std::optional<std::string>
checkDecoding(const io::Tokenizer &tok, const std::vector<int64_t> &ids) {
  for (int64_t id : ids)
    TLM_FUZZ_CHECK(id >= 0 && id < tok.vocabSize(),
                   "encode produced an id outside the vocabulary");
  Expected<std::string> decoded = tok.decode(ids);
  if (!decoded) {
    (void)decoded.takeError();
    TLM_FUZZ_CHECK(false, "decode rejected the ids encode produced");
    return std::nullopt;
  }
  io::StreamDecoder stream(tok);
  std::string streamed;
  for (int64_t id : ids) {
    Expected<std::string> part = stream.feed(id);
    if (!part) {
      (void)part.takeError();
      TLM_FUZZ_CHECK(false, "StreamDecoder rejected an encoded id");
      return std::nullopt;
    }
    streamed += *part;
  }
  streamed += stream.finish();
  TLM_FUZZ_CHECK(streamed == *decoded, "streamed text != decode");
  return *decoded;
}

/// Out-of-range ids are errors from piece(), never reads past its tables.
inline void checkInvalidIds(const io::Tokenizer &tok) {
  for (int64_t id : {int64_t(-1), tok.vocabSize(), int64_t(INT64_MAX)}) {
    Expected<std::string_view> piece = tok.piece(-1, id);
    TLM_FUZZ_CHECK(!piece, "piece() accepted an id outside the vocabulary");
    if (!piece)
      (void)piece.takeError();
  }
}

} // namespace tlm::fuzz

#endif // TLM_TESTS_FUZZ_TOKENIZERCHECKS_H
