//===- JsonParse.cpp - JSON text into values ------------------------------===//

#include "lib/support/Json.h"
#include "lib/support/JsonLocale.h"

#include <cstdio>
#include <cstdlib>
#include <unordered_set>

namespace tlm::json {

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

class Parser {
public:
  Parser(std::string_view text, std::string *duplicateKey)
      : text_(text), duplicateKey_(duplicateKey) {}

  Expected<Value> parseDocument() {
    skipSpace();
    Value v;
    if (!parseValue(v, 0))
      return failure();
    skipSpace();
    if (pos_ != text_.size()) {
      fail("unexpected '" + describe() + "' after the value");
      return failure();
    }
    return v;
  }

private:
  std::string_view text_;
  std::string *duplicateKey_;
  size_t pos_ = 0;
  std::string error_;
  size_t errorPos_ = 0;

  bool fail(std::string what) {
    if (error_.empty()) {
      error_ = std::move(what);
      errorPos_ = pos_;
    }
    return false;
  }

  Error failure() const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < errorPos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n')
        ++line, column = 1;
      else
        ++column;
    }
    return makeError("line " + std::to_string(line) + ", column " +
                     std::to_string(column) + ": " + error_);
  }

  /// The character at the cursor, printable, for messages.
  std::string describe() const {
    if (pos_ >= text_.size())
      return "end of input";
    auto c = static_cast<unsigned char>(text_[pos_]);
    if (c >= 0x20 && c < 0x7f)
      return std::string(1, char(c));
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\x%02X", c);
    return buf;
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }

  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      ++pos_;
  }

  bool unexpected(const char *expected) {
    if (atEnd())
      return fail(std::string("unexpected end of input; expected ") + expected);
    return fail("unexpected '" + describe() + "'; expected " + expected);
  }

  bool literal(std::string_view word, Value v, Value &out) {
    if (text_.substr(pos_, word.size()) != word)
      return unexpected("a value");
    pos_ += word.size();
    out = std::move(v);
    return true;
  }

  bool parseValue(Value &out, int depth) {
    if (depth >= Value::kMaxDepth)
      return fail("nesting deeper than " + std::to_string(Value::kMaxDepth) +
                  " levels");
    switch (peek()) {
    case '{':
      return parseObject(out, depth);
    case '[':
      return parseArray(out, depth);
    case '"':
      out = Value(Value::Kind::String);
      return parseString(out.string_);
    case 't':
      return literal("true", Value(true), out);
    case 'f':
      return literal("false", Value(false), out);
    case 'n':
      return literal("null", Value(), out);
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9'))
        return parseNumber(out);
      return unexpected("a value");
    }
  }

  /// The elements of an array or the members of an object, after its
  /// opening bracket: `element()` for each, separated by commas, up to
  /// `close`.
  template <typename Element>
  bool parseList(char close, const char *expected, Element element) {
    ++pos_; // the opening bracket
    skipSpace();
    if (peek() == close) {
      ++pos_;
      return true;
    }
    for (;;) {
      if (!element())
        return false;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        skipSpace();
        continue;
      }
      if (peek() == close) {
        ++pos_;
        return true;
      }
      return unexpected(expected);
    }
  }

  bool parseObject(Value &out, int depth) {
    out = Value::object();
    // Keys seen, hashed: GPT-2's vocab.json has 50257 of them.
    std::unordered_set<std::string> seen;
    return parseList('}', "',' or '}'", [&] {
      if (peek() != '"')
        return unexpected("a string key");
      size_t keyPos = pos_;
      std::string key;
      if (!parseString(key))
        return false;
      if (!seen.insert(key).second) {
        if (depth == 0 && duplicateKey_)
          *duplicateKey_ = key;
        pos_ = keyPos;
        return fail("key '" + key + "' appears more than once");
      }
      skipSpace();
      if (peek() != ':')
        return unexpected("':'");
      ++pos_;
      skipSpace();
      Value v;
      if (!parseValue(v, depth + 1))
        return false;
      out.keys_.push_back(std::move(key));
      out.values_.push_back(std::move(v));
      return true;
    });
  }

  bool parseArray(Value &out, int depth) {
    out = Value::array();
    return parseList(']', "',' or ']'", [&] {
      Value v;
      if (!parseValue(v, depth + 1))
        return false;
      out.values_.push_back(std::move(v));
      return true;
    });
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | cp >> 6);
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | cp >> 12);
      out += char(0x80 | (cp >> 6 & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | cp >> 18);
      out += char(0x80 | (cp >> 12 & 0x3F));
      out += char(0x80 | (cp >> 6 & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(uint32_t &v) {
    v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      char c = peek();
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0)
        return unexpected("a hex digit of a \\u escape");
      v = v << 4 | d;
    }
    return true;
  }

  /// One UTF-8 sequence starting at the cursor, appended; false (with an
  /// error) when ill-formed (RFC 3629: no overlongs, no surrogates).
  bool utf8(std::string &out) {
    auto at = [&](size_t i) {
      return i < text_.size() ? static_cast<unsigned char>(text_[i]) : 0;
    };
    unsigned char c = at(pos_);
    int n = c >= 0xF0 && c <= 0xF4   ? 4
            : c >= 0xE0              ? 3
            : c >= 0xC2 && c <= 0xDF ? 2
                                     : 0;
    if (c >= 0xF5)
      n = 0;
    if (n == 0)
      return fail("ill-formed UTF-8 byte '" + describe() + "' in a string");
    uint32_t cp = c & (0x7F >> n);
    for (int i = 1; i < n; ++i) {
      unsigned char d = at(pos_ + i);
      if ((d & 0xC0) != 0x80)
        return fail("ill-formed UTF-8 sequence in a string");
      cp = cp << 6 | (d & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return fail("ill-formed UTF-8 sequence in a string");
    out.append(text_.substr(pos_, n));
    pos_ += n;
    return true;
  }

  bool parseString(std::string &out) {
    ++pos_; // '"'
    for (;;) {
      if (atEnd())
        return fail("unexpected end of input in a string");
      auto c = static_cast<unsigned char>(peek());
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20)
        return fail("unescaped control character '" + describe() +
                    "' in a string");
      if (c >= 0x80) {
        if (!utf8(out))
          return false;
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += char(c);
        continue;
      }
      char e = peek();
      ++pos_;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00) {
          // A high surrogate must be followed by an escaped low one.
          uint32_t low;
          if (text_.substr(pos_, 2) != "\\u")
            return fail("a \\u high surrogate without its low half");
          pos_ += 2;
          if (!hex4(low))
            return false;
          if (low < 0xDC00 || low >= 0xE000)
            return fail("a \\u high surrogate without its low half");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return fail("a \\u low surrogate without its high half");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos_;
        return fail("invalid escape '\\" + describe() + "' in a string");
      }
    }
  }

  bool digits() {
    size_t start = pos_;
    while (peek() >= '0' && peek() <= '9')
      ++pos_;
    return pos_ > start;
  }

  bool parseNumber(Value &out) {
    size_t start = pos_;
    bool negative = peek() == '-';
    if (negative)
      ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (!digits()) {
      return unexpected("a digit");
    }
    bool integer = true;
    if (peek() == '.') {
      ++pos_;
      integer = false;
      if (!digits())
        return unexpected("a digit after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      integer = false;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (!digits())
        return unexpected("a digit in the exponent");
    }
    std::string literal(text_.substr(start, pos_ - start));
    out = Value(Value::Kind::Number);
    {
      CLocale c;
      out.double_ = std::strtod(literal.c_str(), nullptr);
    }
    if (!integer)
      return true;
    // Exactly, when it fits 64 bits; otherwise it stays a double.
    uint64_t magnitude = 0;
    for (size_t i = negative ? 1 : 0; i < literal.size(); ++i) {
      uint64_t d = literal[i] - '0';
      if (magnitude > (UINT64_MAX - d) / 10)
        return true;
      magnitude = magnitude * 10 + d;
    }
    if (negative && magnitude > uint64_t(INT64_MAX) + 1)
      return true;
    out.integer_ = true;
    out.negative_ = negative && magnitude != 0;
    if (out.negative_) {
      out.int_ = magnitude == uint64_t(INT64_MAX) + 1
                     ? INT64_MIN
                     : -static_cast<int64_t>(magnitude);
    } else {
      out.uint_ = magnitude;
    }
    return true;
  }
};

Expected<Value> Value::parse(std::string_view text, std::string *duplicateKey) {
  return Parser(text, duplicateKey).parseDocument();
}

} // namespace tlm::json
