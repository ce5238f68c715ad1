//===- Json.cpp - JSON values, parsed and printed, without a library ------===//

#include "lib/support/Json.h"

#include <clocale>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <locale.h>
#include <unordered_set>

namespace tlm::json {

namespace {

/// Numbers read and print in the C locale whatever the process's: an
/// application embedding the C API may have set LC_NUMERIC (de_DE's decimal
/// comma would make "0.5" read as 0 and 1.5e-05 print as "1,5e-05"). On
/// this thread only, for the duration of the scope.
class CLocale {
public:
  CLocale() : previous_(locale_ ? ::uselocale(locale_) : nullptr) {}
  ~CLocale() {
    if (previous_)
      ::uselocale(previous_);
  }

private:
  static inline locale_t locale_ = ::newlocale(LC_ALL_MASK, "C", nullptr);
  locale_t previous_;
};

} // namespace

Value::Value(int64_t v)
    : kind_(Kind::Number), integer_(true), negative_(v < 0),
      uint_(v < 0 ? 0 : uint64_t(v)), int_(v), double_(double(v)) {}

Value::Value(uint64_t v)
    : kind_(Kind::Number), integer_(true), uint_(v), int_(0),
      double_(double(v)) {}

Value::Value(double v) : kind_(Kind::Number), double_(v) {}

Value::Value(const std::vector<int64_t> &v) : kind_(Kind::Array) {
  for (int64_t x : v)
    values_.emplace_back(x);
}

const char *Value::typeName() const {
  switch (kind_) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "boolean";
  case Kind::Number:
    return "number";
  case Kind::String:
    return "string";
  case Kind::Array:
    return "array";
  case Kind::Object:
    return "object";
  }
  return "value";
}

const Value *Value::find(std::string_view key) const {
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key)
      return &values_[i];
  return nullptr;
}

void Value::set(std::string key, Value v) {
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key) {
      values_[i] = std::move(v);
      return;
    }
  keys_.push_back(std::move(key));
  values_.push_back(std::move(v));
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string formatDouble(double d) {
  if (!std::isfinite(d))
    return "null"; // JSON has no NaN or infinity.
  CLocale c;
  // The fewest significant digits that read back as `d`...
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  // ... ("[-]D[.DDD]e±XX"), written out in fixed notation where the
  // decimal point is near (as common JSON writers do: 10000.0, 0.0001,
  // 1e-05, 1e+300).
  std::string_view text = buf;
  bool negative = text[0] == '-';
  if (negative)
    text.remove_prefix(1);
  size_t e = text.find('e');
  int exponent = std::atoi(std::string(text.substr(e + 1)).c_str());
  std::string digits;
  for (char c : text.substr(0, e))
    if (c != '.')
      digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 15) {
    size_t point = exponent + 1; // digits before the decimal point
    if (exponent < 0)
      out += "0." + std::string(-exponent - 1, '0') + digits;
    else if (digits.size() <= point)
      out += digits + std::string(point - digits.size(), '0') + ".0";
    else
      out += digits.substr(0, point) + "." + digits.substr(point);
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1)
    out += "." + digits.substr(1);
  char exp[8];
  std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+',
                std::abs(exponent));
  return out + exp;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += ch;
      }
    }
  }
  return out + "\"";
}

void Value::dumpTo(std::string &out) const {
  switch (kind_) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Bool:
    out += bool_ ? "true" : "false";
    return;
  case Kind::Number:
    if (integer_)
      out += negative_ ? std::to_string(int_) : std::to_string(uint_);
    else
      out += formatDouble(double_);
    return;
  case Kind::String:
    out += quote(string_);
    return;
  case Kind::Array:
    out += '[';
    for (size_t i = 0; i < values_.size(); ++i) {
      if (i)
        out += ',';
      values_[i].dumpTo(out);
    }
    out += ']';
    return;
  case Kind::Object:
    out += '{';
    for (size_t i = 0; i < values_.size(); ++i) {
      if (i)
        out += ',';
      out += quote(keys_[i]);
      out += ':';
      values_[i].dumpTo(out);
    }
    out += '}';
    return;
  }
}

std::string Value::dump() const {
  std::string out;
  dumpTo(out);
  return out;
}

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
