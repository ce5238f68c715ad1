//===- Json.h - JSON values, parsed and printed -----------------*- C++ -*-===//
//
// The runtime reads and writes four JSON formats (configs, safetensors
// headers, artifact manifests, GPT-2's vocab.json) through this one type.
// nlohmann_json (header-only) reads and prints the text, and only
// Json.cpp and JsonParse.cpp include it; on top of RFC 8259, tlm's formats
// get:
// - a key given twice in one object is a parse error (a config typo, or a
//   safetensors header naming a tensor twice, must not pass silently);
// - integers keep all 64 bits (signed or unsigned), apart from doubles;
// - nesting is bounded (kMaxDepth), so hostile input cannot exhaust the
//   stack;
// - strings are checked to be UTF-8;
// - numbers read and print the same in any process locale;
// - nothing throws: every error is one Error.
// Objects keep their keys in file order.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_SUPPORT_JSON_H
#define TLM_SUPPORT_JSON_H

#include "lib/support/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tlm::json {

class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  /// Deeper nesting is a parse error.
  static constexpr int kMaxDepth = 256;

  /// `text` as one JSON value (whitespace around it allowed). A syntax
  /// error says "line L, column C: what". A key given twice in the
  /// outermost object is also stored in `duplicateKey` (when given), for
  /// a message in the format's own words.
  static Expected<Value> parse(std::string_view text,
                               std::string *duplicateKey = nullptr);

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : kind_(Kind::Bool), bool_(b) {}
  Value(int v) : Value(static_cast<int64_t>(v)) {}
  Value(unsigned v) : Value(static_cast<uint64_t>(v)) {}
  Value(int64_t v);
  Value(uint64_t v);
  Value(long long v) : Value(static_cast<int64_t>(v)) {}
  Value(unsigned long long v) : Value(static_cast<uint64_t>(v)) {}
  Value(double v);
  Value(std::string s) : kind_(Kind::String), string_(std::move(s)) {}
  Value(const char *s) : Value(std::string(s)) {}
  Value(const std::vector<int64_t> &v);
  static Value array() { return Value(Kind::Array); }
  static Value object() { return Value(Kind::Object); }

  Kind kind() const { return kind_; }
  /// "null", "boolean", "number", "string", "array" or "object".
  const char *typeName() const;
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }
  /// A number written without fraction or exponent that fits int64_t or
  /// uint64_t.
  bool isInteger() const { return isNumber() && integer_; }
  /// An integer >= 0 (then asUint() holds all of it).
  bool isUnsigned() const { return isInteger() && !negative_; }
  /// An integer that fits int64_t.
  bool isInt64() const {
    return isInteger() && (negative_ || uint_ <= uint64_t(INT64_MAX));
  }

  bool asBool() const { return bool_; }
  const std::string &asString() const { return string_; }
  /// Integers as int64 (valid when isInt64()), uint64 (when isUnsigned()),
  /// any number as the nearest double.
  int64_t asInt() const { return negative_ ? int_ : int64_t(uint_); }
  uint64_t asUint() const { return uint_; }
  double asDouble() const { return double_; }

  /// Arrays: the elements; objects: the values in key order.
  const std::vector<Value> &elements() const { return values_; }
  /// Objects: the keys in file order (elements() holds their values).
  const std::vector<std::string> &keys() const { return keys_; }
  /// The value of `key` in an object, or null.
  const Value *find(std::string_view key) const;
  size_t size() const { return values_.size(); }

  /// Appends to an array.
  void push(Value v) { values_.push_back(std::move(v)); }
  /// Sets `key` of an object (replacing its value if present).
  void set(std::string key, Value v);

  /// How dump() lays out the text: Compact (no spaces), Line (one line with
  /// ", " and ": " between items, as tlm's --json lines are) or Indented
  /// (two spaces a level, as the config files tlm writes).
  enum class Layout { Compact, Line, Indented };
  /// The JSON text; doubles as formatDouble prints them; ill-formed UTF-8 in
  /// a string printed as U+FFFD.
  std::string dump(Layout layout = Layout::Compact) const;

private:
  explicit Value(Kind kind) : kind_(kind) {}

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  // Numbers: the double always; integers also exactly, as magnitude or
  // (negative) int64.
  bool integer_ = false, negative_ = false;
  uint64_t uint_ = 0;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
  std::vector<std::string> keys_;
  std::vector<Value> values_;

  friend class Parser;
};

/// `d` in digits that strtod reads back as `d` (nlohmann's Grisu2: the
/// fewest, or rarely one more), in fixed notation for decimal exponents
/// -4..14 (".0" on integral values) and scientific otherwise; "null" for
/// NaN and infinities, which JSON lacks.
std::string formatDouble(double d);

/// `s` as a JSON string literal, quotes included (ill-formed UTF-8 as
/// U+FFFD).
std::string quote(std::string_view s);

} // namespace tlm::json

#endif // TLM_SUPPORT_JSON_H
