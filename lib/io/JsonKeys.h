//===- JsonKeys.h - JSON keys given twice ----------------------*- C++ -*-===//
//
// nlohmann::json keeps the last of two equal keys without a word; the config
// and the safetensors header run this SAX pass to refuse them.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_JSONKEYS_H
#define TLM_IO_JSONKEYS_H

#include <nlohmann/json.hpp>

#include <set>
#include <string>

namespace tlm::io {

/// A SAX handler that accepts everything (to derive from).
struct AcceptAllJson : nlohmann::json_sax<nlohmann::json> {
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t &) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string &,
                   const nlohmann::detail::exception &) override {
    return false;
  }
};

/// Finds the first top-level key that appears twice (nlohmann keeps the
/// last one silently: a config typo, or a safetensors header naming a tensor
/// twice, must not pass).
struct DuplicateKeyFinder : AcceptAllJson {
  int depth = 0;
  std::set<std::string> seen;
  std::string duplicate;
  bool start_object(std::size_t) override { return ++depth, true; }
  bool key(string_t &k) override {
    if (depth == 1 && !seen.insert(k).second && duplicate.empty())
      duplicate = k;
    return true;
  }
  bool end_object() override { return --depth, true; }
  bool start_array(std::size_t) override { return ++depth, true; }
  bool end_array() override { return --depth, true; }
};

} // namespace tlm::io

#endif // TLM_IO_JSONKEYS_H
