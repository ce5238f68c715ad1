//===- TokenizerTest.cpp - llama2.c and GPT-2 tokenizers ------------------===//
//
// Against real vocabularies from $TLM_SHARED_DIR/models (default
// ../shared/models): llama2.c's known encoding of "Once upon a time", the
// GPT-2 encodings an independent encoder produced (gpt2/encodings.json),
// exact round trips of a UTF-8 corpus, streaming. Absent data skips those
// tests, except under CI=true where it fails them. Small vocabularies written
// here check merge order, GPT-2's pre-tokenisation and that bad files are
// errors, with no data needed.
//
//===----------------------------------------------------------------------===//

#include "lib/io/Tokenizer.h"
#include "lib/io/Gpt2PreTokenizer.h"

#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

using namespace tlm::io;
using nlohmann::json;

namespace {

std::string sharedModels() {
  const char *env = std::getenv("TLM_SHARED_DIR");
  return std::string(env ? env : "../shared") + "/models";
}

bool inCI() {
  const char *ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

/// Skips the test when `path` is absent, or fails it under CI=true.
#define REQUIRE_DATA(path)                                                     \
  do {                                                                         \
    if (!llvm::sys::fs::exists(path)) {                                        \
      if (inCI())                                                              \
        FAIL() << "test data missing under CI=true: " << (path);               \
      GTEST_SKIP() << "test data not found: " << (path)                        \
                   << " (set TLM_SHARED_DIR)";                                 \
    }                                                                          \
  } while (false)

std::string llamaPath() { return sharedModels() + "/llama2-tokenizer.bin"; }
std::string gpt2Path() { return sharedModels() + "/gpt2"; }

/// A fresh directory, removed with everything in it at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    llvm::SmallString<128> p;
    std::error_code ec =
        llvm::sys::fs::createUniqueDirectory("tlm-tokenizer-test", p);
    EXPECT_FALSE(ec) << ec.message();
    path = std::string(p);
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string write(const std::string &name, const std::string &bytes) const {
    std::string file = path + "/" + name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }
};

/// The message of a load that must fail ("" when it loaded).
std::string loadError(const std::string &path) {
  auto tok = Tokenizer::load(path);
  if (tok)
    return "";
  return llvm::toString(tok.takeError());
}

std::string decodeOrDie(const Tokenizer &tok, llvm::ArrayRef<int64_t> ids) {
  auto text = tok.decode(ids);
  if (!text) {
    ADD_FAILURE() << llvm::toString(text.takeError());
    return "<decode failed>";
  }
  return *text;
}

bool isUtf8(const std::string &s) {
  auto *p = reinterpret_cast<const llvm::UTF8 *>(s.data());
  return llvm::isLegalUTF8String(&p, p + s.size());
}

/// Text both tokenizers must reproduce byte for byte.
const std::vector<std::string> &corpus() {
  static const std::vector<std::string> texts = {
      "",
      "a",
      " ",
      "  ",
      "\n",
      "Hello, world!",
      " leading space",
      "trailing space ",
      "  two leading and two trailing  ",
      "line one\nline two\n",
      "\n\nblank lines around\n\n",
      "tabs\tand\r\nCRLF\r\n",
      "It's a dog's life; we'll see, they've gone.",
      "naïve café — déjà vu, Grüße aus Köln",
      "Ελληνικά και Русский текст",
      "日本語のテキスト、中文测试：你好，世界！",
      "한국어 텍스트",
      "emoji 🙂🚀 end",
      "👩‍👩‍👧 family and flags 🇫🇷🇯🇵",
      "math ∑ x² ≤ ∞ and ４５６ fullwidth",
      "combining e\u0301 and non\u00a0breaking",
      "private use \xf4\x8f\xbf\xbd and \xee\x80\x80",
      "<0x41> <s> </s> <unk> <|endoftext|> look special",
      "Numbers: 1234567890 and 3.14159, ½ ¾",
  };
  return texts;
}

/// A longer text, so merges run over many symbols at once.
std::string longText() {
  std::string s;
  for (int i = 0; i < 40; ++i)
    s += "Once upon a time, in a land of 日本語 and émigrés, a fox #" +
         std::to_string(i) + " jumped 🙂 over\tthe lazy dog.\n";
  return s;
}

/// Bytes that are not UTF-8: a tokenizer must still round-trip them.
const std::vector<std::string> &brokenUtf8() {
  static const std::vector<std::string> texts = {
      "\xff",
      "\xc3",
      "ab\xc3",
      "\x80\x80 stray",
      "\xe6\x97 cut \xf0\x9f",
      "\xfe\xff BOM-ish",
      "a\xc3(b",
  };
  return texts;
}

//===----------------------------------------------------------------------===//
// llama2.c tokenizer on the Llama 2 vocabulary
//===----------------------------------------------------------------------===//

/// Loads the vocabulary once for all tests of the suite (GPT-2's takes a
/// while to parse).
class LlamaTokenizerTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (!llvm::sys::fs::exists(llamaPath()))
      return;
    auto loaded = Tokenizer::load(llamaPath());
    if (loaded)
      shared = std::move(*loaded);
    else
      loadMessage = llvm::toString(loaded.takeError());
  }
  static void TearDownTestSuite() { shared.reset(); }
  void SetUp() override {
    REQUIRE_DATA(llamaPath());
    ASSERT_NE(shared, nullptr) << loadMessage;
    tok = shared.get();
  }
  static std::unique_ptr<Tokenizer> shared;
  static std::string loadMessage;
  const Tokenizer *tok = nullptr;
};
std::unique_ptr<Tokenizer> LlamaTokenizerTest::shared;
std::string LlamaTokenizerTest::loadMessage;

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
    EXPECT_NE(llvm::toString(text.takeError()).find("outside the vocabulary"),
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
    ASSERT_TRUE(bool(chunk)) << llvm::toString(chunk.takeError());
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
  EXPECT_EQ(decodeOrDie(*tok, llvm::ArrayRef(ids).take_front(split)) + rest,
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
  ASSERT_TRUE(bool(tok)) << llvm::toString(tok.takeError());
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
class Gpt2TokenizerTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (!llvm::sys::fs::exists(gpt2Path() + "/vocab.json"))
      return;
    auto loaded = Tokenizer::load(gpt2Path());
    if (loaded)
      shared = std::move(*loaded);
    else
      loadMessage = llvm::toString(loaded.takeError());
  }
  static void TearDownTestSuite() { shared.reset(); }
  void SetUp() override {
    REQUIRE_DATA(gpt2Path() + "/vocab.json");
    ASSERT_NE(shared, nullptr) << loadMessage;
    tok = shared.get();
  }
  static std::unique_ptr<Tokenizer> shared;
  static std::string loadMessage;
  const Tokenizer *tok = nullptr;
};
std::unique_ptr<Tokenizer> Gpt2TokenizerTest::shared;
std::string Gpt2TokenizerTest::loadMessage;

TEST_F(Gpt2TokenizerTest, MatchesReferenceEncodings) {
  std::string path = gpt2Path() + "/encodings.json";
  REQUIRE_DATA(path);
  std::ifstream in(path);
  json cases = json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(cases.is_discarded()) << path << " is not JSON";
  ASSERT_TRUE(cases.is_array() && !cases.empty());
  for (const json &c : cases) {
    ASSERT_TRUE(c.is_object() && c.contains("text") && c["text"].is_string() &&
                c.contains("ids") && c["ids"].is_array())
        << c.dump();
    std::string text = c["text"].get<std::string>();
    std::vector<int64_t> expected;
    for (const json &id : c["ids"]) {
      ASSERT_TRUE(id.is_number_integer()) << c.dump();
      expected.push_back(id.get<int64_t>());
    }
    EXPECT_EQ(tok->encode(text, /*addBos=*/false), expected) << text;
    EXPECT_EQ(decodeOrDie(*tok, expected), text);
  }
}

TEST_F(Gpt2TokenizerTest, HasNoBos) {
  EXPECT_EQ(tok->vocabSize(), 50257);
  EXPECT_EQ(tok->bos(), -1);
  EXPECT_EQ(tok->eos(), 50256);
  EXPECT_EQ(tok->encode("Hello world", /*addBos=*/true),
            tok->encode("Hello world", /*addBos=*/false));
  EXPECT_TRUE(tok->encode("", /*addBos=*/true).empty());
}

TEST_F(Gpt2TokenizerTest, RoundTripsUtf8Corpus) {
  std::vector<std::string> texts = corpus();
  texts.push_back(longText());
  texts.insert(texts.end(), brokenUtf8().begin(), brokenUtf8().end());
  for (const std::string &text : texts) {
    std::vector<int64_t> ids = tok->encode(text, /*addBos=*/false);
    EXPECT_EQ(ids.empty(), text.empty());
    EXPECT_EQ(decodeOrDie(*tok, ids), text);
  }
}

TEST_F(Gpt2TokenizerTest, InvalidIdsAreErrors) {
  for (int64_t id : {int64_t(50257), int64_t(-2)}) {
    auto text = tok->decode({15496, id});
    ASSERT_FALSE(bool(text));
    EXPECT_NE(llvm::toString(text.takeError()).find("outside the vocabulary"),
              std::string::npos);
  }
}

TEST_F(Gpt2TokenizerTest, StreamDecoderMatchesDecode) {
  std::string text = "emoji 🙂🚀 end — 日本語のテキスト";
  std::vector<int64_t> ids = tok->encode(text, /*addBos=*/false);
  StreamDecoder stream(*tok);
  std::string streamed;
  bool heldBack = false;
  for (int64_t id : ids) {
    auto chunk = stream.feed(id);
    ASSERT_TRUE(bool(chunk)) << llvm::toString(chunk.takeError());
    EXPECT_TRUE(isUtf8(*chunk)) << "chunk splits a character: " << *chunk;
    heldBack |= chunk->empty();
    streamed += *chunk;
  }
  streamed += stream.finish();
  EXPECT_TRUE(heldBack) << "no token ended inside a character";
  EXPECT_EQ(streamed, decodeOrDie(*tok, ids));
  EXPECT_EQ(streamed, text);

  // A bad id is an error and the stream carries on.
  auto bad = stream.feed(-1);
  ASSERT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
  auto next = stream.feed(ids[0]);
  ASSERT_TRUE(bool(next));
  EXPECT_EQ(*next, decodeOrDie(*tok, ids[0]));
}

//===----------------------------------------------------------------------===//
// GPT-2 format on a small vocabulary written here
//===----------------------------------------------------------------------===//

/// `bytes` spelled in GPT-2's byte alphabet: printable Latin-1 bytes as
/// themselves, the others as U+0100 + their rank among the non-printable.
std::string spell(llvm::StringRef bytes) {
  std::string out;
  for (char ch : bytes) {
    auto b = static_cast<uint8_t>(ch);
    auto printable = [](int v) {
      return (v >= 0x21 && v <= 0x7E) || (v >= 0xA1 && v <= 0xAC) ||
             (v >= 0xAE && v <= 0xFF);
    };
    unsigned cp = b;
    if (!printable(b)) {
      cp = 0x100;
      for (int v = 0; v < b; ++v)
        cp += !printable(v);
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      out += static_cast<char>(0xC0 | cp >> 6);
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

/// vocab.json with the 256 bytes as ids 0..255, then `extra` (raw bytes).
std::string vocabJson(const std::vector<std::string> &extra,
                      int skipByte = -1) {
  json vocab = json::object();
  int64_t id = 0;
  for (int b = 0; b < 256; ++b)
    if (b != skipByte)
      vocab[spell(std::string(1, static_cast<char>(b)))] = id++;
  for (const std::string &t : extra)
    vocab[spell(t)] = id++;
  return vocab.dump();
}

const std::vector<std::string> kSmallTokens = {"ab", "aa", "aaaa"};
const char *kSmallMerges = "#version: 0.2\na b\na a\naa aa\n";

TEST(Gpt2TokenizerFormat, MergesByRankWithinPieces) {
  TempDir dir;
  dir.write("vocab.json", vocabJson(kSmallTokens));
  dir.write("merges.txt", kSmallMerges);
  auto tok = Tokenizer::load(dir.path);
  ASSERT_TRUE(bool(tok)) << llvm::toString(tok.takeError());
  const Tokenizer &t = **tok;
  EXPECT_EQ(t.vocabSize(), 259);
  EXPECT_EQ(t.eos(), -1);
  // "a b" (rank 1) before "a a" (rank 2), wherever they are.
  EXPECT_EQ(t.encode("aab", false), (std::vector<int64_t>{'a', 256}));
  // One rank merges every occurrence left to right, then the next rank.
  EXPECT_EQ(t.encode("aaa", false), (std::vector<int64_t>{257, 'a'}));
  EXPECT_EQ(t.encode("aaaa", false), (std::vector<int64_t>{258}));
  // Merges never cross pieces: " ab" is a piece of its own.
  EXPECT_EQ(t.encode("ab ab", false), (std::vector<int64_t>{256, ' ', 256}));
  EXPECT_EQ(decodeOrDie(t, {256, ' ', 258, '\n'}), "ab aaaa\n");
}

TEST(Gpt2TokenizerFormat, BadFilesAreErrors) {
  TempDir dir;
  // A folder without merges.txt.
  dir.write("vocab.json", vocabJson(kSmallTokens));
  std::string err = loadError(dir.path);
  EXPECT_NE(err.find("merges.txt"), std::string::npos) << err;

  dir.write("merges.txt", kSmallMerges);
  ASSERT_EQ(loadError(dir.path), "");

  dir.write("vocab.json", "{\"a\": 0, ");
  err = loadError(dir.path);
  EXPECT_NE(err.find("vocab.json: is not valid JSON"), std::string::npos)
      << err;

  dir.write("vocab.json", "{\"a\": \"zero\"}");
  err = loadError(dir.path);
  EXPECT_NE(err.find("ids must be integers"), std::string::npos) << err;

  dir.write("vocab.json", vocabJson(kSmallTokens, /*skipByte=*/0));
  err = loadError(dir.path);
  EXPECT_NE(err.find("no token for byte 0"), std::string::npos) << err;

  dir.write("vocab.json", vocabJson(kSmallTokens));
  dir.write("merges.txt", "#version: 0.2\na b\nab zz\n");
  err = loadError(dir.path);
  EXPECT_NE(err.find("line 3: \"zz\" is not a token"), std::string::npos)
      << err;

  dir.write("merges.txt", "b a\n");
  err = loadError(dir.path);
  EXPECT_NE(err.find("line 1: the merge of \"b\" and \"a\" is not a token"),
            std::string::npos)
      << err;

  dir.write("merges.txt", "a b c\n");
  err = loadError(dir.path);
  EXPECT_NE(err.find("two tokens"), std::string::npos) << err;
}

//===----------------------------------------------------------------------===//
// GPT-2 pre-tokenisation and UTF-8 streaming, no data needed
//===----------------------------------------------------------------------===//

std::vector<std::string> split(llvm::StringRef text) {
  std::vector<std::string> out;
  for (llvm::StringRef p : splitGpt2(text))
    out.push_back(p.str());
  return out;
}

using Pieces = std::vector<std::string>;

TEST(Gpt2PreTokenizer, SplitsLikeGpt2sPattern) {
  EXPECT_EQ(split(""), Pieces{});
  EXPECT_EQ(split("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split("  leading and trailing  "),
            (Pieces{" ", " leading", " and", " trailing", "  "}));
  EXPECT_EQ(split("a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(split("It's isn't we'll they've I'm I'd you're 'S"),
            (Pieces{"It", "'s", " isn", "'t", " we", "'ll", " they", "'ve",
                    " I", "'m", " I", "'d", " you", "'re", " '", "S"}));
  EXPECT_EQ(split("tabs\tand\nnew\n\nlines"),
            (Pieces{"tabs", "\t", "and", "\n", "new", "\n", "\n", "lines"}));
  EXPECT_EQ(split("x 123 4.5!?"), (Pieces{"x", " 123", " 4", ".", "5", "!?"}));
  EXPECT_EQ(split("emoji 🙂🚀 end"),
            (Pieces{"emoji", " 🙂🚀", " end"}));
  EXPECT_EQ(split("naïve — déjà"), (Pieces{"naïve", " —", " déjà"}));
  EXPECT_EQ(split("日本語のテキスト・です"),
            (Pieces{"日本語のテキスト", "・", "です"}));
  EXPECT_EQ(split("\xff\xfe!ab \xc3"), (Pieces{"\xff\xfe!", "ab", " \xc3"}));
}

TEST(Gpt2PreTokenizer, ClassifiesCodepoints) {
  EXPECT_EQ(classifyCodepoint('a'), CharClass::Letter);
  EXPECT_EQ(classifyCodepoint('7'), CharClass::Number);
  EXPECT_EQ(classifyCodepoint('\v'), CharClass::Space);
  EXPECT_EQ(classifyCodepoint('_'), CharClass::Other);
  EXPECT_EQ(classifyCodepoint(0xE9), CharClass::Letter);   // é
  EXPECT_EQ(classifyCodepoint(0xB5), CharClass::Letter);   // µ
  EXPECT_EQ(classifyCodepoint(0xB2), CharClass::Number);   // ²
  EXPECT_EQ(classifyCodepoint(0xA0), CharClass::Space);    // no-break space
  EXPECT_EQ(classifyCodepoint(0xD7), CharClass::Other);    // ×
  EXPECT_EQ(classifyCodepoint(0x301), CharClass::Other);   // combining acute
  EXPECT_EQ(classifyCodepoint(0x2014), CharClass::Other);  // em dash
  EXPECT_EQ(classifyCodepoint(0x3000), CharClass::Space);  // ideographic space
  EXPECT_EQ(classifyCodepoint(0x4E2D), CharClass::Letter); // 中
  EXPECT_EQ(classifyCodepoint(0xFF15), CharClass::Number); // fullwidth 5
  EXPECT_EQ(classifyCodepoint(0x1F642), CharClass::Other); // 🙂
  EXPECT_EQ(classifyCodepoint(0x0663), CharClass::Number); // Arabic-Indic 3
}

TEST(Utf8Stream, HoldsBackIncompleteUtf8) {
  EXPECT_EQ(completeUtf8Prefix(""), 0u);
  EXPECT_EQ(completeUtf8Prefix("abc"), 3u);
  EXPECT_EQ(completeUtf8Prefix("a\xc3"), 1u);
  EXPECT_EQ(completeUtf8Prefix("a\xc3\xa9"), 3u);
  EXPECT_EQ(completeUtf8Prefix("\xe6\x97"), 0u);
  EXPECT_EQ(completeUtf8Prefix("\xf0\x9f\x99"), 0u);
  EXPECT_EQ(completeUtf8Prefix("\xf0\x9f\x99\x82"), 4u);
  // Bytes no continuation can complete are let through.
  EXPECT_EQ(completeUtf8Prefix("\x80\x80\x80\x80"), 4u);
  EXPECT_EQ(completeUtf8Prefix("a\xff"), 2u);
}

} // namespace
