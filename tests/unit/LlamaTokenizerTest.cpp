//===- LlamaTokenizerTest.cpp - the llama2.c tokenizer ---===//
//
// The Llama 2 vocabulary ("Once upon a time", UTF-8 round trips, streaming)
// and small hand-written vocabularies (merge order, corrupt files).
//
//===----------------------------------------------------------------------===//

#include "tests/unit/TokenizerTestUtil.h"

using namespace tlm::test::tok;

namespace {

//===----------------------------------------------------------------------===//
// llama2.c tokenizer on the Llama 2 vocabulary
//===----------------------------------------------------------------------===//

class LlamaTokenizerTest : public SharedTokenizerTest<llamaPath, llamaPath> {};

TEST_F(LlamaTokenizerTest, OnceUponATimeMatchesLlama2c) {
  EXPECT_EQ(tok->vocabSize(), 32000);
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  EXPECT_EQ(tok->encode("Once upon a time", /*addBos=*/true),
            (std::vector<int64_t>{1, 9038, 2501, 263, 931}));
  EXPECT_EQ(tok->encode("", /*addBos=*/true), (std::vector<int64_t>{1}));
  EXPECT_EQ(tok->encode("", /*addBos=*/false), (std::vector<int64_t>{}));
}

TEST_F(LlamaTokenizerTest, RoundTripsUtf8Corpus) {
  std::vector<std::string> texts = corpus();
  texts.push_back(longText());
  for (const std::string &text : texts) {
    std::vector<int64_t> ids = tok->encode(text, /*addBos=*/true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], 1);
    for (int64_t id : ids)
      ASSERT_TRUE(id >= 0 && id < tok->vocabSize()) << id;
    EXPECT_EQ(decodeOrDie(*tok, ids), text);
  }
}

TEST_F(LlamaTokenizerTest, RoundTripsBytesThatAreNotUtf8) {
  for (const std::string &text : brokenUtf8())
    EXPECT_EQ(decodeOrDie(*tok, tok->encode(text, /*addBos=*/true)), text);
}

TEST_F(LlamaTokenizerTest, WithoutBosTheDummyPrefixSpaceStays) {
  // Only the piece after BOS loses its leading space (as in llama2.c), so
  // without BOS the dummy prefix shows in the text.
  for (const std::string &text : corpus()) {
    std::string expected = text.empty() ? "" : " " + text;
    EXPECT_EQ(decodeOrDie(*tok, tok->encode(text, /*addBos=*/false)), expected);
  }
}

TEST_F(LlamaTokenizerTest, UnknownCodepointsFallBackToBytes) {
  // U+10FFFD (private use) is no piece: its four bytes become <0xXX> = b+3,
  // after the dummy prefix " " (29871).
  EXPECT_EQ(
      tok->encode("\xf4\x8f\xbf\xbd", /*addBos=*/true),
      (std::vector<int64_t>{1, 29871, 0xF4 + 3, 0x8F + 3, 0xBF + 3, 0xBD + 3}));
  // A byte piece after BOS is a real byte, not a prefix to strip.
  EXPECT_EQ(decodeOrDie(*tok, {1, 0x20 + 3, 0x41 + 3}), " A");
}

TEST_F(LlamaTokenizerTest, InvalidIdsAreErrors) {
  std::vector<std::vector<int64_t>> bad = {{1, 32000}, {-1}, {9038, 1LL << 40}};
  for (const std::vector<int64_t> &ids : bad) {
    auto text = tok->decode(ids);
    ASSERT_FALSE(bool(text));
    EXPECT_NE(text.takeError().message().find("outside the vocabulary"),
              std::string::npos);
  }
}

TEST_F(LlamaTokenizerTest, StreamDecoderMatchesDecode) {
  std::string text = "Grüße, 世界! 🙂 \xf4\x8f\xbf\xbd done";
  std::vector<int64_t> ids = tok->encode(text, /*addBos=*/true);
  StreamDecoder stream(*tok);
  std::string streamed;
  for (int64_t id : ids) {
    auto chunk = stream.feed(id);
    ASSERT_TRUE(bool(chunk)) << chunk.takeError().message();
    EXPECT_TRUE(isUtf8(*chunk)) << "chunk splits a character: " << *chunk;
    streamed += *chunk;
  }
  streamed += stream.finish();
  EXPECT_EQ(streamed, decodeOrDie(*tok, ids));
  EXPECT_EQ(streamed, text);

  // Primed with the prompt's last id, the generated ids continue the text.
  size_t split = 3;
  StreamDecoder tail(*tok, ids[split - 1]);
  std::string rest;
  for (size_t i = split; i < ids.size(); ++i) {
    auto chunk = tail.feed(ids[i]);
    ASSERT_TRUE(bool(chunk));
    rest += *chunk;
  }
  rest += tail.finish();
  EXPECT_EQ(decodeOrDie(*tok, tlm::Span<int64_t>(ids.data(), split)) + rest,
            text);
}

TEST_F(LlamaTokenizerTest, TruncatedFileIsAnError) {
  auto buffer = llvm::MemoryBuffer::getFile(llamaPath());
  ASSERT_TRUE(bool(buffer));
  llvm::StringRef bytes = (*buffer)->getBuffer();
  TempDir dir;
  for (size_t size : {size_t(0), size_t(3), size_t(4), size_t(10),
                      bytes.size() / 2, bytes.size() - 1}) {
    std::string file = dir.write("tokenizer.bin", bytes.take_front(size).str());
    std::string err = loadError(file);
    EXPECT_NE(err.find(file), std::string::npos)
        << "size " << size << ": " << (err.empty() ? "loaded" : err);
  }
}

//===----------------------------------------------------------------------===//
// llama2.c format on a small vocabulary written here
//===----------------------------------------------------------------------===//

/// A tokenizer.bin: the control pieces, the 256 byte pieces (ids 3..258),
/// then `extra` pieces with their scores (ids 259..).
std::string llamaFile(const std::vector<std::pair<std::string, float>> &extra,
                      int32_t maxLen = 16) {
  std::vector<std::pair<std::string, float>> entries = {
      {"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    entries.push_back({name, 0});
  }
  entries.insert(entries.end(), extra.begin(), extra.end());
  std::string out(reinterpret_cast<const char *>(&maxLen), 4);
  for (auto &[piece, score] : entries) {
    int32_t len = piece.size();
    out.append(reinterpret_cast<const char *>(&score), 4);
    out.append(reinterpret_cast<const char *>(&len), 4);
    out += piece;
  }
  return out;
}

const std::vector<std::pair<std::string, float>> kSmallPieces = {
    {" ", -10}, {"a", -3},  {"b", -3},    {"c", -3},  // 259..262
    {" a", -1}, {"ab", -2}, {"bc", -0.5}, {"é", -3}}; // 263..266

TEST(LlamaTokenizerFormat, MergesTheBestScoringPairFirst) {
  TempDir dir;
  auto tok = Tokenizer::load(dir.write("t.bin", llamaFile(kSmallPieces)));
  ASSERT_TRUE(bool(tok)) << tok.takeError().message();
  // " a" (-1) beats "ab" (-2) although both start at a word's first letter.
  EXPECT_EQ((*tok)->encode("ab", true), (std::vector<int64_t>{1, 263, 261}));
  // "bc" (-0.5) goes first, then " a" (-1).
  EXPECT_EQ((*tok)->encode("abc", true), (std::vector<int64_t>{1, 263, 265}));
  // "x" is no piece: byte fallback 'x' + 3; "é" is one piece.
  EXPECT_EQ((*tok)->encode("xé", false),
            (std::vector<int64_t>{259, 'x' + 3, 266}));
  EXPECT_EQ(decodeOrDie(**tok, {1, 263, 265}), "abc");
  EXPECT_EQ(decodeOrDie(**tok, {263, 265}), " abc");
  EXPECT_EQ(decodeOrDie(**tok, {1, 259, 'x' + 3, 266, 2}), "xé");
}

TEST(LlamaTokenizerFormat, TruncatedOrCorruptFilesAreErrors) {
  TempDir dir;
  std::string good = llamaFile(kSmallPieces);
  // Every cut fails: inside the header or an entry, or at an entry boundary
  // before the byte pieces or the " " piece exist.
  for (size_t size : {size_t(0), size_t(2), size_t(4), size_t(9), size_t(24),
                      size_t(4 + 8 + 5), good.size() - 1}) {
    std::string file = dir.write("cut.bin", good.substr(0, size));
    EXPECT_NE(loadError(file).find("cut.bin"), std::string::npos)
        << "size " << size;
  }
  std::string file =
      dir.write("long.bin", llamaFile({{" ", 0}, {"much too long", 0}}, 8));
  EXPECT_NE(loadError(file).find("outside 0..max_token_length"),
            std::string::npos);
  file = dir.write("nan.bin", llamaFile({{" ", std::nanf("")}}));
  EXPECT_NE(loadError(file).find("NaN"), std::string::npos);
  file = dir.write("nospace.bin", llamaFile({{"a", 0}}));
  EXPECT_NE(loadError(file).find("dummy prefix"), std::string::npos);
  EXPECT_NE(loadError(dir.path + "/absent.bin").find("absent.bin"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// GPT-2 byte-level BPE on the GPT-2 vocabulary
//===----------------------------------------------------------------------===//

/// Loads the vocabulary once for all tests of the suite (GPT-2's takes a
/// while to parse).
} // namespace
