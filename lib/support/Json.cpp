//===- Json.cpp - JSON values and their printing (parsing: JsonParse.cpp) ===//
//
// The text comes from nlohmann_json's serializer: a Value is copied into an
// ordered_json (keys in order) and dumped, with ill-formed UTF-8 in a string
// replaced by U+FFFD so that no path can throw or abort.
//
//===----------------------------------------------------------------------===//

#include "lib/support/Json.h"
#include "lib/support/NlohmannJson.h"

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

namespace {

using Ordered = nlohmann::ordered_json;

Ordered toNlohmann(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Null:
    return nullptr;
  case Value::Kind::Bool:
    return v.asBool();
  case Value::Kind::Number:
    if (v.isUnsigned())
      return v.asUint();
    if (v.isInteger())
      return v.asInt();
    return v.asDouble();
  case Value::Kind::String:
    return v.asString();
  case Value::Kind::Array: {
    Ordered out = Ordered::array();
    auto &elements = *out.get_ptr<Ordered::array_t *>();
    elements.reserve(v.size());
    for (const Value &e : v.elements())
      elements.push_back(toNlohmann(e));
    return out;
  }
  case Value::Kind::Object: {
    Ordered out = Ordered::object();
    // ordered_map is a vector of pairs: append to it, since the keys are
    // distinct already and its own insert would compare each with all.
    auto &members = *out.get_ptr<Ordered::object_t *>();
    members.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      members.emplace_back(v.keys()[i], toNlohmann(v.elements()[i]));
    return out;
  }
  }
  return nullptr;
}

/// The text of `j`, never throwing: ill-formed UTF-8 becomes U+FFFD.
std::string print(const Ordered &j, int indent = -1) {
  return j.dump(indent, ' ', false, Ordered::error_handler_t::replace);
}

/// Compact JSON `text` with a space after each ',' and ':' outside strings.
std::string spaced(const std::string &text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  bool inString = false, escaped = false;
  for (char c : text) {
    out += c;
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == ',' || c == ':') {
      out += ' ';
    }
  }
  return out;
}

} // namespace

std::string formatDouble(double d) { return print(Ordered(d)); }

std::string quote(std::string_view s) { return print(Ordered(std::string(s))); }

std::string Value::dump(Layout layout) const {
  Ordered j = toNlohmann(*this);
  switch (layout) {
  case Layout::Compact:
    return print(j);
  case Layout::Line:
    return spaced(print(j));
  case Layout::Indented:
    return print(j, 2);
  }
  return print(j);
}

} // namespace tlm::json
