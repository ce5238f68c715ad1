//===- Gpt2PreTokenizer.h - GPT-2's split of text into pieces ---*- C++ -*-===//
//
// GPT-2 applies its BPE merges inside the pieces of this regular expression:
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// matched by hand here, so no Unicode-aware regex library is needed. The
// classes \s, \p{L} and \p{N} come from a table that is exact for ASCII and
// Latin-1 and covers the common non-letter blocks beyond (punctuation,
// symbols, combining diacritics, CJK punctuation, fullwidth forms, emoji, a
// few scripts' digits and marks); any other codepoint counts as a letter.
// The approximation shows only in scripts whose combining marks or digits
// the table lacks, where pieces may split differently from GPT-2.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_GPT2PRETOKENIZER_H
#define TLM_IO_GPT2PRETOKENIZER_H

#include "lib/support/Strings.h"

#include <cstdint>
#include <vector>

namespace tlm::io {

enum class CharClass : uint8_t { Letter, Number, Space, Other };

/// The class of Unicode codepoint `cp` (\p{L}, \p{N}, \s, or none of them).
CharClass classifyCodepoint(uint32_t cp);

/// `text` cut into GPT-2's pieces; their concatenation is `text`. Bytes that
/// are not valid UTF-8 count as single "other" characters.
std::vector<std::string_view> splitGpt2(std::string_view text);

/// `text` cut into the pieces of Llama 3's split pattern (also used by
/// later byte-level tokenizers), with the same character classes:
///
///   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
///    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
std::vector<std::string_view> splitLlama3(std::string_view text);

/// `text` cut around its numbers (\p{N}, as Rust's char::is_numeric): each
/// number character a piece when `individual`, else each run of them; the
/// text between stays whole (tokenizers' Digits pre-tokenizer).
std::vector<std::string_view> splitDigits(std::string_view text,
                                          bool individual);

} // namespace tlm::io

#endif // TLM_IO_GPT2PRETOKENIZER_H
