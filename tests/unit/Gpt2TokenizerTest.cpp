//===- Gpt2TokenizerTest.cpp - GPT-2 byte-level BPE ---===//
//
// GPT-2's vocab.json + merges.txt against encodings.json, round trips,
// streaming, merge order, bad files, and GPT-2's pre-tokenisation.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/TokenizerTestUtil.h"

using namespace tlm::test::tok;

namespace {

class Gpt2TokenizerTest : public SharedTokenizerTest<gpt2Path, gpt2Vocab> {};

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
    auto text = tok->decode(std::vector<int64_t>{15496, id});
    ASSERT_FALSE(bool(text));
    EXPECT_NE(text.takeError().message().find("outside the vocabulary"),
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
    ASSERT_TRUE(bool(chunk)) << chunk.takeError().message();
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
  (void)bad.takeError();
  auto next = stream.feed(ids[0]);
  ASSERT_TRUE(bool(next));
  EXPECT_EQ(*next, decodeOrDie(*tok, {ids[0]}));
}

//===----------------------------------------------------------------------===//
// GPT-2 format on a small vocabulary written here
//===----------------------------------------------------------------------===//

/// `bytes` spelled in GPT-2's byte alphabet: printable Latin-1 bytes as
/// themselves, the others as U+0100 + their rank among the non-printable.
std::string spell(std::string_view bytes) {
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
  ASSERT_TRUE(bool(tok)) << tok.takeError().message();
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

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view p : splitGpt2(text))
    out.emplace_back(p);
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
