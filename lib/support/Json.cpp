//===- Json.cpp - JSON values and their printing (parsing: JsonParse.cpp) ===//

#include "lib/support/Json.h"
#include "lib/support/JsonLocale.h"

#include <clocale>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <locale.h>

namespace tlm::json {

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

} // namespace tlm::json
