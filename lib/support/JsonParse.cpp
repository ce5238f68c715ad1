//===- JsonParse.cpp - JSON text into values, over nlohmann's parser ------===//
//
// nlohmann_json's SAX parser reads the text (RFC 8259, UTF-8 checked, 64-bit
// integers exact, iterative so depth costs no stack); Parser, its SAX
// handler, builds the Value tree and adds tlm's rules: a key given twice is
// an error, and so is nesting deeper than Value::kMaxDepth. Every error,
// nlohmann's or ours, becomes one "line L, column C: what".
//
//===----------------------------------------------------------------------===//

#include "lib/support/Json.h"
#include "lib/support/NlohmannJson.h"

#include <clocale>
#include <cstdio>
#include <iterator>
#include <locale.h>
#include <unordered_set>

namespace tlm::json {

namespace {

/// Numbers read in the C locale whatever the process's: an application
/// embedding the C API may have set LC_NUMERIC, which nlohmann's strtod
/// follows. On this thread only, for the duration of the scope.
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

/// How far nlohmann's lexer has read: its SAX events carry no position.
struct Progress {
  const char *at;       // one past the last character read
  bool pastEnd = false; // it asked for a character after the last
};

/// The iterator nlohmann's input adapter reads the text through: each step
/// moves `Progress::at`. The adapter asks `current != end` before each
/// read, so a false answer is a read past the end.
class Cursor {
public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  Cursor(const char *p, Progress *progress) : p_(p), progress_(progress) {}
  reference operator*() const { return *p_; }
  Cursor &operator++() {
    progress_->at = ++p_;
    return *this;
  }
  Cursor operator++(int) {
    Cursor old = *this;
    ++*this;
    return old;
  }
  bool operator==(const Cursor &other) const { return p_ == other.p_; }
  bool operator!=(const Cursor &other) const {
    if (p_ != other.p_)
      return true;
    progress_->pastEnd = true;
    return false;
  }

private:
  const char *p_;
  Progress *progress_;
};

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

} // namespace

class Parser {
public:
  using Json = nlohmann::json;

  Parser(std::string_view text, std::string *duplicateKey)
      : text_(text), duplicateKey_(duplicateKey), progress_{text.data()} {}

  Expected<Value> parseDocument() {
    // A byte order mark is refused (RFC 8259 §8.1: JSON text has none),
    // where nlohmann would skip it.
    if (!text_.empty() && static_cast<unsigned char>(text_[0]) == 0xEF) {
      failUnexpected();
      return failure();
    }
    bool ok;
    {
      CLocale c;
      const char *begin = text_.data(), *end = begin + text_.size();
      ok = Json::sax_parse(Cursor(begin, &progress_), Cursor(end, &progress_),
                           this, Json::input_format_t::json, /*strict=*/true,
                           /*ignore_comments=*/false);
    }
    // nlohmann takes a NUL byte for the end of the text; JSON does not.
    if (ok && skipSpace(end_) != text_.size())
      failUnexpected();
    if (!ok && error_.empty())
      fail(end_, "invalid JSON");
    if (!error_.empty())
      return failure();
    return std::move(root_);
  }

  // The SAX interface (nlohmann::json_sax); returning false stops the parse.
  bool null() { return scalar(Value()); }
  bool boolean(bool b) { return scalar(Value(b)); }
  bool number_integer(Json::number_integer_t v) {
    return number(Value(int64_t(v)));
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    return number(Value(uint64_t(v)));
  }
  bool number_float(Json::number_float_t v, const Json::string_t &) {
    return number(Value(double(v)));
  }
  bool string(Json::string_t &s) { return scalar(Value(std::move(s))); }
  bool binary(Json::binary_t &) { return false; } // not in JSON text
  bool start_object(std::size_t) { return open(Value::object()); }
  bool start_array(std::size_t) { return open(Value::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(Json::string_t &key);
  bool parse_error(std::size_t position, const std::string &,
                   const Json::exception &e);

private:
  /// Where an array or object under construction is.
  enum class Expect { First, AfterKey, AfterValue };
  struct Frame {
    Value value;
    Expect expect = Expect::First;
    std::string key; // objects: the key whose value is being read
    // Objects past a few keys: those seen so far, hashed (GPT-2's
    // vocab.json has 50257 of them).
    std::unordered_set<std::string> seen;
  };
  static constexpr size_t kLinearKeys = 8;

  /// What may stand at the next token.
  enum class Want { Value, Key, Colon, CommaOrEnd, Nothing };
  struct Next {
    size_t at;
    Want want;
  };

  std::string_view text_;
  std::string *duplicateKey_;
  Progress progress_;
  std::vector<Frame> stack_;
  Value root_;
  bool rootDone_ = false;
  // The end of the last token an event reported.
  size_t end_ = 0;
  std::string error_;
  size_t errorPos_ = 0;

  size_t offset() const { return size_t(progress_.at - text_.data()); }
  size_t skipSpace(size_t i) const {
    while (i < text_.size() && isSpace(text_[i]))
      ++i;
    return i;
  }

  bool fail(size_t pos, std::string what) {
    if (error_.empty()) {
      error_ = std::move(what);
      errorPos_ = pos;
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

  /// The character at `pos`, printable, for messages.
  std::string describe(size_t pos) const {
    if (pos >= text_.size())
      return "end of input";
    auto c = static_cast<unsigned char>(text_[pos]);
    if (c >= 0x20 && c < 0x7f)
      return std::string(1, char(c));
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\x%02X", c);
    return buf;
  }

  /// The token after the last one an event reported (past the ',' or ':'
  /// the parser took since), and what may stand there.
  Next nextToken() const {
    size_t i = skipSpace(end_);
    if (stack_.empty())
      return {i, rootDone_ ? Want::Nothing : Want::Value};
    const Frame &f = stack_.back();
    Want item = f.value.isArray() ? Want::Value : Want::Key;
    switch (f.expect) {
    case Expect::First:
      return {i, item};
    case Expect::AfterKey:
      if (i < text_.size() && text_[i] == ':')
        return {skipSpace(i + 1), Want::Value};
      return {i, Want::Colon};
    case Expect::AfterValue:
      if (i < text_.size() && text_[i] == ',')
        return {skipSpace(i + 1), item};
      return {i, Want::CommaOrEnd};
    }
    return {i, Want::Value};
  }

  /// The next token is not what may stand there.
  bool failUnexpected() {
    Next next = nextToken();
    std::string what;
    switch (next.want) {
    case Want::Value:
      what = "a value";
      break;
    case Want::Key:
      what = "a string key";
      break;
    case Want::Colon:
      what = "':'";
      break;
    case Want::CommaOrEnd:
      what = stack_.back().value.isArray() ? "',' or ']'" : "',' or '}'";
      break;
    case Want::Nothing:
      return fail(next.at,
                  "unexpected '" + describe(next.at) + "' after the value");
    }
    if (next.at >= text_.size())
      return fail(next.at, "unexpected end of input; expected " + what);
    return fail(next.at,
                "unexpected '" + describe(next.at) + "'; expected " + what);
  }

  /// A value may start at the next token: not nested deeper than
  /// kMaxDepth.
  bool checkDepth() {
    if (stack_.size() < size_t(Value::kMaxDepth))
      return true;
    return fail(nextToken().at, "nesting deeper than " +
                                    std::to_string(Value::kMaxDepth) +
                                    " levels");
  }

  /// `v` ended at end_: the document, or the next element or member.
  void add(Value v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      rootDone_ = true;
      return;
    }
    Frame &f = stack_.back();
    if (f.value.isObject())
      f.value.keys_.push_back(std::move(f.key));
    f.value.values_.push_back(std::move(v));
    f.expect = Expect::AfterValue;
  }

  bool scalar(Value v) {
    if (!checkDepth())
      return false;
    end_ = offset();
    add(std::move(v));
    return true;
  }

  /// The lexer reads one character past a number, unless the text ended.
  bool number(Value v) {
    if (!checkDepth())
      return false;
    end_ = offset() - (progress_.pastEnd ? 0 : 1);
    add(std::move(v));
    return true;
  }

  bool open(Value container) {
    if (!checkDepth())
      return false;
    end_ = offset();
    stack_.emplace_back();
    stack_.back().value = std::move(container);
    return true;
  }

  bool close() {
    end_ = offset();
    Value v = std::move(stack_.back().value);
    stack_.pop_back();
    add(std::move(v));
    return true;
  }
};

bool Parser::key(Json::string_t &key) {
  Frame &f = stack_.back();
  const std::vector<std::string> &keys = f.value.keys_;
  bool duplicate = false;
  if (keys.size() < kLinearKeys) {
    for (const std::string &k : keys)
      duplicate = duplicate || k == key;
  } else {
    if (f.seen.empty())
      f.seen.insert(keys.begin(), keys.end());
    duplicate = !f.seen.insert(key).second;
  }
  if (duplicate) {
    if (stack_.size() == 1 && duplicateKey_)
      *duplicateKey_ = key;
    return fail(nextToken().at, "key '" + key + "' appears more than once");
  }
  end_ = offset();
  f.key = std::move(key);
  f.expect = Expect::AfterKey;
  return true;
}

bool Parser::parse_error(std::size_t position, const std::string &,
                         const Json::exception &e) {
  // The token the parser stopped at, and whether it may stand there: if
  // not, that is the error, whatever the lexer made of the token.
  Next next = nextToken();
  char c = next.at < text_.size() ? text_[next.at] : '\0';
  bool numeric = c == '-' || (c >= '0' && c <= '9');
  if (!(c == '"' && (next.want == Want::Value || next.want == Want::Key)) &&
      !(numeric && next.want == Want::Value))
    return failUnexpected();
  // A number beyond double's range (out_of_range.406), up to `position`.
  if (e.id == 406)
    return fail(next.at,
                "number " +
                    std::string(text_.substr(next.at, position - next.at)) +
                    " is out of range");
  // The lexer's message ("invalid string: ...", "invalid number; ...") for
  // the character it stopped at, from its exception's "syntax error while
  // parsing value - MESSAGE; last read: '...'".
  std::string_view what = e.what();
  size_t dash = what.find(" - ");
  size_t lastRead = what.find("; last read: '", dash);
  if (dash == std::string_view::npos || lastRead == std::string_view::npos)
    return fail(next.at, c == '"' ? "invalid string" : "invalid number");
  size_t stop = position > 0 ? position - 1 : 0;
  return fail(stop, std::string(what.substr(dash + 3, lastRead - dash - 3)));
}

Expected<Value> Value::parse(std::string_view text, std::string *duplicateKey) {
  return Parser(text, duplicateKey).parseDocument();
}

} // namespace tlm::json
