//===- TokenizerTestUtil.h - shared data and helpers of the tokenizer tests
//-===//
//
// Where the real vocabularies live (data/models, see TestData.h), the
// round-trip corpus, and small helpers. Absent data fails the tests that
// need it.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_UNIT_TOKENIZERTESTUTIL_H
#define TLM_TESTS_UNIT_TOKENIZERTESTUTIL_H

#include "lib/io/Gpt2PreTokenizer.h"
#include "lib/io/Tokenizer.h"
#include "tests/unit/TestData.h"

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

namespace tlm::test::tok {

inline std::string models() { return dataDir() + "/models"; }

/// Fails the test when `path` is absent.
#define REQUIRE_DATA(path)                                                     \
  do {                                                                         \
    if (!llvm::sys::fs::exists(path))                                          \
      FAIL() << "test data missing: " << (path) << " (see TLM_DATA_DIR)";      \
  } while (false)

inline std::string llamaPath() { return models() + "/llama2-tokenizer.bin"; }
inline std::string gpt2Path() { return models() + "/gpt2"; }

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
inline std::string loadError(const std::string &path) {
  auto tok = Tokenizer::load(path);
  if (tok)
    return "";
  return tok.takeError().message();
}

inline std::string decodeOrDie(const Tokenizer &tok, Span<int64_t> ids) {
  auto text = tok.decode(ids);
  if (!text) {
    ADD_FAILURE() << text.takeError().message();
    return "<decode failed>";
  }
  return *text;
}
inline std::string decodeOrDie(const Tokenizer &tok,
                               std::initializer_list<int64_t> ids) {
  return decodeOrDie(tok, Span<int64_t>(ids.begin(), ids.size()));
}

inline bool isUtf8(const std::string &s) {
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
inline std::string longText() {
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

/// The vocabulary at `Path()`, loaded once for all tests of a suite (GPT-2's
/// takes a while to parse). `Probe()` names the file whose absence fails
/// the suite's tests.
template <std::string (*Path)(), std::string (*Probe)()>
class SharedTokenizerTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (!llvm::sys::fs::exists(Probe()))
      return;
    auto loaded = Tokenizer::load(Path());
    if (loaded)
      shared = std::move(*loaded);
    else
      loadMessage = loaded.takeError().message();
  }
  static void TearDownTestSuite() { shared.reset(); }
  void SetUp() override {
    REQUIRE_DATA(Probe());
    ASSERT_NE(shared, nullptr) << loadMessage;
    tok = shared.get();
  }
  static inline std::unique_ptr<Tokenizer> shared;
  static inline std::string loadMessage;
  const Tokenizer *tok = nullptr;
};

inline std::string gpt2Vocab() { return gpt2Path() + "/vocab.json"; }

} // namespace tlm::test::tok

#endif // TLM_TESTS_UNIT_TOKENIZERTESTUTIL_H
