//===- JsonTest.cpp - the runtime's own JSON ------------------------------===//
//
// lib/support/Json.h against RFC 8259's grammar and tlm's extra rules, and
// its doubles against strtod (shortest digits that read back the same).
//
//===----------------------------------------------------------------------===//

#include "lib/support/Json.h"

#include <gtest/gtest.h>

#include <clocale>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <unistd.h>

using namespace tlm;

namespace {

json::Value parseOk(std::string_view text) {
  std::string duplicate;
  auto v = json::Value::parse(text, &duplicate);
  EXPECT_TRUE(bool(v)) << text << ": " << v.takeError().message();
  return v ? std::move(*v) : json::Value();
}

std::string parseError(std::string_view text) {
  auto v = json::Value::parse(text);
  EXPECT_FALSE(bool(v)) << text << " parsed";
  return v ? std::string() : v.takeError().message();
}

} // namespace

TEST(Json, ParsesEveryKindAndKeepsKeyOrder) {
  json::Value v = parseOk(
      R"( {"b": [1, -2, 3.5, true, false, null], "a": "x\n\u00e9\ud83d\ude00"} )");
  ASSERT_TRUE(v.isObject());
  ASSERT_EQ(v.keys(), (std::vector<std::string>{"b", "a"}));
  const json::Value &b = *v.find("b");
  ASSERT_EQ(b.size(), 6u);
  EXPECT_TRUE(b.elements()[0].isUnsigned());
  EXPECT_EQ(b.elements()[1].asInt(), -2);
  EXPECT_FALSE(b.elements()[1].isUnsigned());
  EXPECT_FALSE(b.elements()[2].isInteger());
  EXPECT_EQ(b.elements()[2].asDouble(), 3.5);
  EXPECT_TRUE(b.elements()[3].asBool());
  EXPECT_TRUE(b.elements()[5].isNull());
  EXPECT_EQ(v.find("a")->asString(), "x\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(Json, IntegersKeepAll64Bits) {
  EXPECT_EQ(parseOk("18446744073709551615").asUint(), UINT64_MAX);
  EXPECT_FALSE(parseOk("18446744073709551615").isInt64());
  EXPECT_EQ(parseOk("-9223372036854775808").asInt(), INT64_MIN);
  EXPECT_TRUE(parseOk("-9223372036854775808").isInt64());
  // One past either end: a double, no longer an integer.
  json::Value big = parseOk("18446744073709551616");
  EXPECT_FALSE(big.isInteger());
  EXPECT_EQ(big.asDouble(), 18446744073709551616.0);
  EXPECT_FALSE(parseOk("-9223372036854775809").isInteger());
  EXPECT_TRUE(parseOk("-0").isUnsigned());
  EXPECT_FALSE(parseOk("1.0").isInteger());
  EXPECT_FALSE(parseOk("1e2").isInteger());
}

TEST(Json, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(parseError("{\n  \"a\": 1,\n  ,}"),
            "line 3, column 3: unexpected ','; expected a string key");
  EXPECT_EQ(parseError(""), "line 1, column 1: unexpected end of input; "
                            "expected a value");
  EXPECT_EQ(parseError("[1 2]"),
            "line 1, column 4: unexpected '2'; expected ',' or ']'");
  EXPECT_EQ(parseError("1 2"), "line 1, column 3: unexpected '2' after the "
                               "value");
  for (const char *bad : {"01",
                          "1.",
                          ".5",
                          "-",
                          "1e",
                          "+1",
                          "tru",
                          "nul",
                          "[1,]",
                          "{\"a\"}",
                          "{\"a\":1,}",
                          "\"\\x\"",
                          "\"\\u12\"",
                          "\"abc",
                          "\"\x01\"",
                          "'a'",
                          "\"\\ud800\"",
                          "\"\\udc00\"",
                          "\"\xc3\"",
                          "\"\xc0\xaf\"",
                          "\"\xed\xa0\x80\"",
                          "\"\xf4\x90\x80\x80\"",
                          "NaN",
                          "Infinity"})
    parseError(bad);
}

TEST(Json, ErrorsPointAtTheTokenAfterANumber) {
  // A number is read one character past its end; the position is not.
  EXPECT_EQ(parseError("[1"),
            "line 1, column 3: unexpected end of input; expected ',' or ']'");
  EXPECT_EQ(parseError("{\"a\":12 \"b\""),
            "line 1, column 9: unexpected '\"'; expected ',' or '}'");
  EXPECT_EQ(parseError("[00]"),
            "line 1, column 3: unexpected '0'; expected ',' or ']'");
  EXPECT_EQ(parseError("1-2"), "line 1, column 2: unexpected '-' after the "
                               "value");
  EXPECT_EQ(parseError("[1,\n -x]").substr(0, 18), "line 2, column 3: ");
  EXPECT_EQ(parseError("{\"a\" 1}"),
            "line 1, column 6: unexpected '1'; expected ':'");
  EXPECT_EQ(parseError("[1 \"abc"),
            "line 1, column 4: unexpected '\"'; expected ',' or ']'");
}

TEST(Json, NulBytesAndByteOrderMarksAreRefused) {
  using namespace std::string_literals;
  EXPECT_EQ(parseError("1\0"s), "line 1, column 2: unexpected '\\x00' after "
                                "the value");
  EXPECT_EQ(parseError("[1\0]"s),
            "line 1, column 3: unexpected '\\x00'; expected ',' or ']'");
  EXPECT_EQ(parseError("\xEF\xBB\xBF{}"),
            "line 1, column 1: unexpected '\\xEF'; expected a value");
}

TEST(Json, NumbersBeyondDoubleAreRefused) {
  EXPECT_EQ(parseError("[1,\n 1e400]"),
            "line 2, column 2: number 1e400 is out of range");
  EXPECT_EQ(parseOk("1e308").asDouble(), 1e308);
  EXPECT_EQ(parseOk("1e-400").asDouble(), 0.0);
}

TEST(Json, DuplicateKeysAreRefusedAndTheOutermostNamed) {
  std::string duplicate;
  auto v = json::Value::parse(R"({"a": 1, "b": {"c": 1, "c": 2}})", &duplicate);
  ASSERT_FALSE(bool(v));
  EXPECT_NE(v.takeError().message().find("key 'c' appears more than once"),
            std::string::npos);
  EXPECT_EQ(duplicate, "");
  v = json::Value::parse(R"({"a": 1, "a": 2})", &duplicate);
  ASSERT_FALSE(bool(v));
  EXPECT_EQ(duplicate, "a");
}

TEST(Json, DuplicateKeysNameTheirPosition) {
  std::string duplicate;
  auto v = json::Value::parse("{\"a\": 1,\n \"a\": 2}", &duplicate);
  ASSERT_FALSE(bool(v));
  EXPECT_EQ(v.takeError().message(),
            "line 2, column 2: key 'a' appears more than once");
  // Past a few keys they are hashed, in nested objects too.
  std::string nested = "{\"x\": {";
  for (int i = 0; i < 20; ++i)
    nested += "\"k" + std::to_string(i) + "\": 0, ";
  duplicate.clear();
  v = json::Value::parse(nested + "\"k3\": 1}}", &duplicate);
  ASSERT_FALSE(bool(v));
  EXPECT_NE(v.takeError().message().find("key 'k3' appears more than once"),
            std::string::npos);
  EXPECT_EQ(duplicate, "");
  EXPECT_EQ(parseOk(nested + "\"k20\": 1}}").find("x")->size(), 21u);
}

TEST(Json, NestingIsBounded) {
  std::string ok(json::Value::kMaxDepth, '['),
      deep(json::Value::kMaxDepth + 1, '[');
  ok += std::string(json::Value::kMaxDepth, ']');
  deep += std::string(json::Value::kMaxDepth + 1, ']');
  parseOk(ok);
  EXPECT_NE(parseError(deep).find("nesting deeper than"), std::string::npos);
  // Far past the bound fails the same way, without exhausting the stack.
  parseError(std::string(1 << 20, '['));
}

TEST(Json, NestingErrorsNameTheirPosition) {
  // A value inside kMaxDepth arrays is one level too deep, scalar or not.
  std::string deep(json::Value::kMaxDepth, '[');
  EXPECT_EQ(parseError(deep + "1" + std::string(json::Value::kMaxDepth, ']')),
            "line 1, column " + std::to_string(json::Value::kMaxDepth + 1) +
                ": nesting deeper than " +
                std::to_string(json::Value::kMaxDepth) + " levels");
  std::string objects; // {"k": {"k": ... "v"
  for (int i = 0; i < json::Value::kMaxDepth; ++i)
    objects += "{\"k\":";
  std::string column = std::to_string(5 * json::Value::kMaxDepth + 2);
  EXPECT_EQ(parseError(objects + " \"v\"").substr(0, 24 + column.size()),
            "line 1, column " + column + ": nesting");
}

TEST(Json, PrintingIllFormedUtf8NeverFails) {
  // Strings built by code are not checked; printing replaces what is not
  // UTF-8 with U+FFFD rather than failing.
  json::Value v = json::Value::array();
  v.push("a\xff");
  EXPECT_EQ(v.dump(), "[\"a\xef\xbf\xbd\"]");
  EXPECT_EQ(json::quote("\xc3"), "\"\xef\xbf\xbd\"");
  EXPECT_EQ(json::quote("caf\xc3\xa9\x7f/"), "\"caf\xc3\xa9\x7f/\"");
}

TEST(Json, DumpReadsBackAndEscapes) {
  json::Value v = json::Value::object();
  v.set("s", "q\"b\\n\n\x01");
  v.set("i", int64_t(-5));
  v.set("u", UINT64_MAX);
  v.set("d", 0.1);
  v.set("shape", std::vector<int64_t>{2, 3});
  v.set("i", int64_t(7)); // replaces, keeps the position
  std::string text = v.dump();
  EXPECT_EQ(text, R"({"s":"q\"b\\n\n\u0001","i":7,"u":18446744073709551615,)"
                  R"("d":0.1,"shape":[2,3]})");
  EXPECT_EQ(parseOk(text).dump(), text);
}

TEST(Json, DoublesUseTheShortestDigitsThatReadBack) {
  EXPECT_EQ(json::formatDouble(10000.0), "10000.0");
  EXPECT_EQ(json::formatDouble(1e-5), "1e-05");
  EXPECT_EQ(json::formatDouble(0.1), "0.1");
  EXPECT_EQ(json::formatDouble(-2.5), "-2.5");
  EXPECT_EQ(json::formatDouble(1e300), "1e+300");
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    if (!std::isfinite(d))
      continue;
    std::string s = json::formatDouble(d);
    ASSERT_EQ(std::strtod(s.c_str(), nullptr), d) << s;
    json::Value parsed = parseOk(s);
    ASSERT_EQ(parsed.asDouble(), d) << s;
  }
}

TEST(Json, DoublesPrintInFixedNotationNearTheDecimalPoint) {
  EXPECT_EQ(json::formatDouble(0.0), "0.0");
  EXPECT_EQ(json::formatDouble(0.0001), "0.0001");
  EXPECT_EQ(json::formatDouble(123.25), "123.25");
  EXPECT_EQ(json::formatDouble(1e14), "100000000000000.0");
  EXPECT_EQ(json::formatDouble(1e15), "1e+15");
  EXPECT_EQ(json::formatDouble(-1.5e-7), "-1.5e-07");
}

// formatDouble is nlohmann's writer now; what it promises is the layout:
// fixed notation for decimal exponents -4..14, with a fraction (".0" on an
// integral value), scientific notation elsewhere.
TEST(Json, DoublesFollowTheDocumentedLayout) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    double d = double(int64_t(rng() % 2000001) - 1000000) *
               std::pow(10.0, int(rng() % 41) - 20);
    if (d == 0)
      continue;
    std::string s = json::formatDouble(d);
    int exponent = int(std::floor(std::log10(std::fabs(d))));
    bool scientific = s.find('e') != std::string::npos;
    // Rounding at a power of ten can move the exponent by one: only the
    // clear cases are checked.
    if (exponent > -4 && exponent < 14)
      ASSERT_FALSE(scientific) << s;
    if (exponent < -5 || exponent > 15)
      ASSERT_TRUE(scientific) << s;
    if (!scientific)
      ASSERT_NE(s.find('.'), std::string::npos) << s;
  }
}

TEST(Json, LargeObjectsKeepEveryKey) {
  // GPT-2's vocab.json is one object of 50257 keys.
  std::string text = "{";
  for (int i = 0; i < 100000; ++i)
    text +=
        (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  text += "}";
  json::Value v = parseOk(text);
  ASSERT_EQ(v.size(), 100000u);
  EXPECT_EQ(v.keys()[99999], "k99999");
  EXPECT_EQ(v.elements()[54321].asUint(), 54321u);
  std::string duplicate;
  EXPECT_FALSE(bool(json::Value::parse(
      text.substr(0, text.size() - 1) + ",\"k7\":0}", &duplicate)));
  EXPECT_EQ(duplicate, "k7");
}

TEST(Json, NumbersIgnoreTheProcessLocale) {
  // A host application's LC_NUMERIC with a decimal comma: an installed
  // one, or de_DE made from the system's locale sources.
  auto setComma = [] {
    for (const char *name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8"})
      if (std::setlocale(LC_NUMERIC, name))
        return true;
    return false;
  };
  if (!setComma()) {
    std::string dir = "/tmp/tlm-json-locale-" + std::to_string(::getpid());
    std::string make = "mkdir -p " + dir + " && localedef -i de_DE -f UTF-8 " +
                       dir + "/de_DE.UTF-8 > /dev/null 2>&1";
    if (std::system(make.c_str()) == 0)
      ::setenv("LOCPATH", dir.c_str(), 1);
    if (!setComma())
      GTEST_SKIP() << "no locale with a decimal comma, nor localedef";
  }
  ASSERT_EQ(std::strtod("0.5", nullptr), 0.0) << "the locale reads '.'";
  EXPECT_EQ(parseOk("0.5").asDouble(), 0.5);
  EXPECT_EQ(json::formatDouble(1.5e-5), "1.5e-05");
  std::setlocale(LC_NUMERIC, "C");
  if (const char *made = std::getenv("LOCPATH");
      made && std::string(made).rfind("/tmp/tlm-json-locale-", 0) == 0)
    std::system(("rm -rf " + std::string(made)).c_str());
}

TEST(Json, LayoutsSpaceOnlyOutsideStrings) {
  json::Value v = json::Value::object();
  v.set("a, b: c", json::Value("x,\"y\":z"));
  json::Value list = json::Value::array();
  list.push(1);
  list.push(2.5);
  v.set("n", std::move(list));
  EXPECT_EQ(v.dump(), R"({"a, b: c":"x,\"y\":z","n":[1,2.5]})");
  EXPECT_EQ(v.dump(json::Value::Layout::Line),
            R"({"a, b: c": "x,\"y\":z", "n": [1, 2.5]})");
  EXPECT_EQ(v.dump(json::Value::Layout::Indented),
            "{\n  \"a, b: c\": \"x,\\\"y\\\":z\",\n  \"n\": [\n    1,\n"
            "    2.5\n  ]\n}");
  // Every layout reads back as the same value.
  for (auto layout : {json::Value::Layout::Compact, json::Value::Layout::Line,
                      json::Value::Layout::Indented})
    EXPECT_EQ(parseOk(v.dump(layout)).dump(), v.dump());
}
