//===- ConfigJson.cpp - parse and validate a model config -----------------===//
//
// Uses nlohmann's non-throwing API (LLVM builds without exceptions); a
// syntax error is re-parsed with a SAX handler to learn its position.
//
//===----------------------------------------------------------------------===//

#include "lib/model/ConfigJson.h"

#include "lib/io/FileIO.h"
#include "lib/io/JsonKeys.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

using nlohmann::json;

namespace tlm::model {

namespace {

Error configError(const std::string &message) {
  return makeError("config: " + message);
}

/// A SAX handler that accepts every event; the finders below override the
/// ones they watch.

/// Records the first syntax error.
struct ErrorFinder : io::AcceptAllJson {
  size_t position = 0;
  std::string message;
  bool parse_error(std::size_t pos, const std::string &,
                   const nlohmann::detail::exception &ex) override {
    position = pos;
    message = ex.what();
    return false;
  }
};

Error syntaxError(std::string_view text) {
  ErrorFinder finder;
  json::sax_parse(std::string(text), &finder);
  // nlohmann counts the byte after the offending token; report the line
  // and column of the last byte read.
  size_t end = std::min(finder.position, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i + 1 < end; ++i) {
    if (text[i] == '\n')
      ++line, column = 1;
    else
      ++column;
  }
  std::string why = finder.message;
  if (size_t p = why.find("syntax error"); p != std::string::npos)
    why = why.substr(p);
  return configError("invalid JSON at line " + std::to_string(line) +
                     ", column " + std::to_string(column) + ": " + why);
}

std::string show(const json &v) { return v.dump(); }

/// Sizes above this are rejected up front: every tensor must stay far from
/// int64 overflow and allocation sizes stay meaningful.
constexpr int64_t kMaxSize = int64_t(1) << 24;

} // namespace

Expected<Config> parseConfig(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded())
    return syntaxError(text);
  if (!j.is_object())
    return configError("expected a JSON object, found " +
                       std::string(j.type_name()));
  io::DuplicateKeyFinder dups;
  json::sax_parse(std::string(text), &dups);
  if (!dups.duplicate.empty())
    return configError("key '" + dups.duplicate + "' appears more than once");

  Config c;
  bool haveKvHeads = false;
  // key -> (required, setter returning an error message or "").
  using Setter = std::function<std::string(const json &)>;
  auto positive = [](int64_t &field) -> Setter {
    return [&field](const json &v) -> std::string {
      if (!v.is_number_integer())
        return "must be an integer";
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(kMaxSize))
        return "exceeds the supported maximum " + std::to_string(kMaxSize);
      if (v.get<int64_t>() < 1)
        return "must be >= 1";
      if (v.get<int64_t>() > kMaxSize)
        return "exceeds the supported maximum " + std::to_string(kMaxSize);
      field = v.get<int64_t>();
      return "";
    };
  };
  auto positiveReal = [](double &field) -> Setter {
    return [&field](const json &v) -> std::string {
      if (!v.is_number())
        return "must be a number";
      if (!(v.get<double>() > 0))
        return "must be > 0";
      // The compiled code computes in f32: a value that rounds to 0 or
      // overflows there would silently change the model.
      float f = static_cast<float>(v.get<double>());
      if (!(f > 0) || !std::isfinite(f) || !std::isnormal(f))
        return "is not a normal f32 number (the model computes in f32)";
      field = v.get<double>();
      return "";
    };
  };
  auto boolean = [](bool &field) -> Setter {
    return [&field](const json &v) -> std::string {
      if (!v.is_boolean())
        return "must be true or false";
      field = v.get<bool>();
      return "";
    };
  };
  struct Key {
    const char *name;
    bool required;
    Setter set;
  };
  std::vector<Key> keys = {
      {"vocab_size", true, positive(c.vocabSize)},
      {"context_length", true, positive(c.contextLength)},
      {"d_model", true, positive(c.dModel)},
      {"num_layers", true, positive(c.numLayers)},
      {"num_heads", true, positive(c.numHeads)},
      {"d_ff", true, positive(c.dFF)},
      {"rope_theta", true, positiveReal(c.ropeTheta)},
      {"num_kv_heads", false,
       [&](const json &v) {
         haveKvHeads = true;
         return positive(c.numKvHeads)(v);
       }},
      {"rms_norm_eps", false, positiveReal(c.rmsNormEps)},
      {"use_rmsnorm", false, boolean(c.useRMSNorm)},
      {"norm_position", false,
       [&](const json &v) -> std::string {
         if (!v.is_string() || (v != "pre" && v != "post"))
           return "must be \"pre\" or \"post\"";
         c.postNorm = v == "post";
         return "";
       }},
      {"use_rope", false, boolean(c.useRope)},
      {"use_swiglu", false, boolean(c.useSwiGLU)},
      {"tie_embeddings", false, boolean(c.tieEmbeddings)},
      {"dtype", false,
       [](const json &v) -> std::string {
         if (!v.is_string() || (v != "f32" && v != "bf16" && v != "f16"))
           return "must be \"f32\", \"bf16\" or \"f16\"";
         if (v != "f32")
           return "is not supported yet (only \"f32\")";
         return "";
       }},
  };
  std::set<std::string> known;
  for (const Key &k : keys) {
    known.insert(k.name);
    auto it = j.find(k.name);
    if (it == j.end()) {
      if (k.required)
        return configError(std::string("missing required key '") + k.name +
                           "'");
      continue;
    }
    std::string why = k.set(*it);
    if (!why.empty())
      return configError(std::string(k.name) + " (" + show(*it) + ") " + why);
  }
  for (auto &[key, value] : j.items()) {
    bool comment = !key.empty() && (key[0] == '_' || key.rfind("//", 0) == 0);
    if (!comment && !known.count(key))
      return configError("unknown key '" + key +
                         "' (keys starting with '_' or '//' are comments)");
  }
  if (!haveKvHeads)
    c.numKvHeads = c.numHeads;
  if (Error err = validateConfig(c))
    return std::move(err);
  return c;
}

Error validateConfig(const Config &c) {
  auto v = [](int64_t x) { return "(" + std::to_string(x) + ")"; };
  if (c.numLayers > kMaxLayers)
    return configError("num_layers " + v(c.numLayers) +
                       " exceeds the supported maximum " +
                       std::to_string(kMaxLayers) +
                       " (the compile time grows with the layers)");
  if (c.dModel % c.numHeads != 0)
    return configError("d_model " + v(c.dModel) +
                       " must be divisible by num_heads " + v(c.numHeads));
  if (c.numHeads % c.kvHeads() != 0)
    return configError("num_heads " + v(c.numHeads) +
                       " must be divisible by num_kv_heads " + v(c.kvHeads()));
  if (c.useRope && c.headDim() % 2 != 0)
    return configError("d_model / num_heads " + v(c.headDim()) +
                       " must be even when use_rope is true (RoPE rotates "
                       "pairs)");
  return Error::success();
}

std::string configToJson(const Config &c) {
  std::ostringstream os;
  os << "{\n"
     << "  \"vocab_size\": " << c.vocabSize << ",\n"
     << "  \"context_length\": " << c.contextLength << ",\n"
     << "  \"d_model\": " << c.dModel << ",\n"
     << "  \"num_layers\": " << c.numLayers << ",\n"
     << "  \"num_heads\": " << c.numHeads << ",\n"
     << "  \"num_kv_heads\": " << c.kvHeads() << ",\n"
     << "  \"d_ff\": " << c.dFF
     << ",\n"
     // Shortest digits that read back as the same double.
     << "  \"rope_theta\": " << json(c.ropeTheta).dump() << ",\n"
     << "  \"rms_norm_eps\": " << json(c.rmsNormEps).dump() << ",\n"
     << "  \"use_rmsnorm\": " << (c.useRMSNorm ? "true" : "false") << ",\n"
     << "  \"norm_position\": \"" << (c.postNorm ? "post" : "pre") << "\",\n"
     << "  \"use_rope\": " << (c.useRope ? "true" : "false") << ",\n"
     << "  \"use_swiglu\": " << (c.useSwiGLU ? "true" : "false") << ",\n"
     << "  \"tie_embeddings\": " << (c.tieEmbeddings ? "true" : "false")
     << "\n}\n";
  return os.str();
}

Expected<Config> loadConfig(const std::string &path) {
  // A config is a few hundred bytes; 1 MiB bounds the read of anything else.
  Expected<std::string> text = io::readRegularFile(path, 1 << 20);
  if (!text)
    return makeError("config: " + text.takeError().message());
  auto config = parseConfig(*text);
  if (!config)
    return makeError(config.takeError().message() + " (in " + path + ")");
  return config;
}

} // namespace tlm::model
