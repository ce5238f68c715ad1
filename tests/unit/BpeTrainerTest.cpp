//===- BpeTrainerTest.cpp - BPE training against a recount per merge ------===//
//
// lib/io/BpeTrainer.cpp updates pair counts incrementally; the reference
// here recounts every pair of every word before each merge, as CS336's
// handout describes the algorithm. Both must merge the same pairs in the
// same order, on texts made to stress the update: repeated symbols (whose
// pairs overlap), ties, special tokens, bytes above 0x7F.
//
//===----------------------------------------------------------------------===//

#include "lib/io/BpeTrainer.h"
#include "lib/io/Gpt2PreTokenizer.h"
#include "lib/io/Tokenizer.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace tlm;

namespace {

/// The merges of CS336's algorithm, recounting before each one.
std::vector<std::pair<std::string, std::string>>
referenceMerges(std::string_view text, const std::vector<std::string> &specials,
                int64_t vocabSize) {
  // Pre-tokens between the special tokens (the earliest, then longest).
  std::map<std::string, int64_t> counts;
  size_t at = 0;
  while (at <= text.size()) {
    size_t next = std::string_view::npos, length = 0;
    for (const std::string &s : specials) {
      size_t f = text.find(s, at);
      if (f < next || (f == next && s.size() > length)) {
        next = f;
        length = s.size();
      }
    }
    std::string_view part = text.substr(
        at, next == std::string_view::npos ? std::string_view::npos
                                           : next - at);
    for (std::string_view p : io::splitGpt2(part))
      ++counts[std::string(p)];
    if (next == std::string_view::npos)
      break;
    at = next + length;
  }
  std::vector<std::pair<std::vector<std::string>, int64_t>> words;
  for (const auto &[w, c] : counts) {
    std::vector<std::string> symbols;
    for (char ch : w)
      symbols.push_back(std::string(1, ch));
    words.push_back({symbols, c});
  }
  std::vector<std::pair<std::string, std::string>> merges;
  int64_t size = 256 + int64_t(specials.size());
  while (size < vocabSize) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto &[s, c] : words)
      for (size_t i = 0; i + 1 < s.size(); ++i)
        pairs[{s[i], s[i + 1]}] += c;
    if (pairs.empty())
      break;
    // The most frequent; among those the greatest (std::string compares
    // bytes as unsigned, as Python's bytes do).
    auto best = pairs.begin();
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second ||
          (it->second == best->second && it->first > best->first))
        best = it;
    merges.push_back(best->first);
    for (auto &[s, c] : words) {
      std::vector<std::string> out;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == best->first.first &&
            s[i + 1] == best->first.second) {
          out.push_back(s[i] + s[i + 1]);
          ++i;
        } else {
          out.push_back(s[i]);
        }
      }
      s = std::move(out);
    }
    ++size;
  }
  return merges;
}

std::vector<std::pair<std::string, std::string>>
trainedMerges(std::string_view text, const std::vector<std::string> &specials,
              int64_t vocabSize, size_t chunkBytes = size_t(1) << 20) {
  io::BpeTrainingOptions options;
  options.vocabSize = vocabSize;
  options.specials = specials;
  options.chunkBytes = chunkBytes;
  auto vocab = io::trainBpe(text, options);
  EXPECT_TRUE(bool(vocab));
  std::vector<std::pair<std::string, std::string>> merges;
  if (!vocab)
    return merges;
  for (auto [a, b] : vocab->merges)
    merges.push_back({vocab->tokens[a], vocab->tokens[b]});
  return merges;
}

/// Text of words drawn from a small alphabet, so that pairs repeat, tie and
/// overlap; with special tokens and a two-byte character among them.
std::string randomText(uint32_t seed, size_t words) {
  std::mt19937 rng(seed);
  const std::vector<std::string> letters{"a", "b", "c", "aa", "é", " ", "\n"};
  std::string text;
  for (size_t w = 0; w < words; ++w) {
    size_t len = 1 + rng() % 6;
    text += rng() % 3 ? " " : "";
    for (size_t i = 0; i < len; ++i)
      text += letters[rng() % letters.size()];
    if (rng() % 17 == 0)
      text += "<|endoftext|>";
    if (rng() % 23 == 0)
      text += "<|end";
  }
  return text;
}

TEST(BpeTrainer, MatchesARecountPerMerge) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::string text = randomText(seed, 400);
    std::vector<std::string> specials{"<|endoftext|>", "<|end"};
    auto got = trainedMerges(text, specials, 320);
    auto want = referenceMerges(text, specials, 320);
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(got, want);
  }
}

// Pre-tokenized in chunks of about 16 bytes, cut only where cutting cannot
// change the pre-tokens: the same merges as the whole text's.
TEST(BpeTrainer, ChunksDoNotChangeTheMerges) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::string text = randomText(seed, 400);
    // Lines of ASCII words too, so that the cut places exist.
    for (int line = 0; line < 40; ++line)
      text += "line" + std::to_string(line) + "\nx  y\n\nz'" +
              std::to_string(seed) + "\n";
    std::vector<std::string> specials{"<|endoftext|>"};
    EXPECT_EQ(trainedMerges(text, specials, 320, 16),
              referenceMerges(text, specials, 320));
  }
}

TEST(BpeTrainer, OverlappingPairsCountEveryPosition) {
  // "aaaa" holds (a, a) three times; merged left to right it is "aa aa",
  // whose pair (aa, aa) comes next.
  auto got = trainedMerges("aaaa aaaa", {}, 259);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], std::make_pair(std::string("a"), std::string("a")));
  EXPECT_EQ(got[1], std::make_pair(std::string("aa"), std::string("aa")));
  EXPECT_EQ(got, referenceMerges("aaaa aaaa", {}, 259));
}

TEST(BpeTrainer, StopsWhenNoPairIsLeft) {
  io::BpeTrainingOptions options;
  options.vocabSize = 1000;
  auto vocab = io::trainBpe("ab ab", options);
  ASSERT_TRUE(bool(vocab));
  // "ab", " ab": two merges, then every word is one token.
  EXPECT_EQ(vocab->merges.size(), 2u);
  EXPECT_EQ(vocab->tokens.size(), 258u);
}

TEST(BpeTrainer, RejectsASizeBelowTheBase) {
  io::BpeTrainingOptions options;
  options.vocabSize = 256;
  options.specials = {"<s>"};
  auto vocab = io::trainBpe("text", options);
  ASSERT_FALSE(bool(vocab));
  EXPECT_NE(vocab.takeError().message().find("at least 257"),
            std::string::npos);
}

TEST(ByteTokenizer, IsTheIdentityOnBytes) {
  auto t = io::Tokenizer::load("bytes");
  ASSERT_TRUE(bool(t));
  std::string text("\x00\xff z\x80", 5);
  std::vector<int64_t> ids = (*t)->encode(text, true);
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 255, 32, 122, 128}));
  auto back = (*t)->decode(ids);
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, text);
  EXPECT_EQ((*t)->vocabSize(), 256);
}

} // namespace
