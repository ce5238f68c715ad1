//===- ConfigJson.cpp - parse and validate a model config -----------------===//
//
// Parsed with lib/support/Json.h, which reports a syntax error's line and
// column and refuses a key given twice.
//
//===----------------------------------------------------------------------===//

#include "lib/model/ConfigJson.h"

#include "lib/io/FileIO.h"

#include "lib/support/Json.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <set>

namespace tlm::model {

namespace {

Error configError(const std::string &message) {
  return makeError("config: " + message);
}

std::string show(const json::Value &v) { return v.dump(); }

/// Sizes above this are rejected up front: every tensor must stay far from
/// int64 overflow and allocation sizes stay meaningful.
constexpr int64_t kMaxSize = int64_t(1) << 24;

/// Sets a field from a config value; returns why the value is wrong, or "".
using Setter = std::function<std::string(const json::Value &)>;

Setter positive(int64_t &field) {
  return [&field](const json::Value &v) -> std::string {
    if (!v.isInteger())
      return "must be an integer";
    if (v.isUnsigned() && v.asUint() > uint64_t(kMaxSize))
      return "exceeds the supported maximum " + std::to_string(kMaxSize);
    if (!v.isUnsigned() || v.asUint() < 1)
      return "must be >= 1";
    field = static_cast<int64_t>(v.asUint());
    return "";
  };
}

Setter positiveReal(double &field) {
  return [&field](const json::Value &v) -> std::string {
    if (!v.isNumber())
      return "must be a number";
    if (!(v.asDouble() > 0))
      return "must be > 0";
    // The compiled code computes in f32: a value that rounds to 0 or
    // overflows there would silently change the model.
    float f = static_cast<float>(v.asDouble());
    if (!(f > 0) || !std::isfinite(f) || !std::isnormal(f))
      return "is not a normal f32 number (the model computes in f32)";
    field = v.asDouble();
    return "";
  };
}

Setter boolean(bool &field) {
  return [&field](const json::Value &v) -> std::string {
    if (!v.isBool())
      return "must be true or false";
    field = v.asBool();
    return "";
  };
}

Setter normPosition(bool &postNorm) {
  return [&postNorm](const json::Value &v) -> std::string {
    if (!v.isString() || (v.asString() != "pre" && v.asString() != "post"))
      return "must be \"pre\" or \"post\"";
    postNorm = v.asString() == "post";
    return "";
  };
}

Setter weightDtype(WeightDtype &dtype) {
  return [&dtype](const json::Value &v) -> std::string {
    std::optional<WeightDtype> d =
        v.isString() ? parseWeightDtype(v.asString()) : std::nullopt;
    if (!d)
      return "must be one of " + std::string(dtypeNames());
    dtype = *d;
    return "";
  };
}

struct Key {
  const char *name;
  bool required;
  Setter set;
};

/// Every key of a config (docs/spec/config.md), setting `c`'s fields;
/// `haveKvHeads` records whether num_kv_heads was given.
std::vector<Key> configKeys(Config &c, bool &haveKvHeads) {
  return {
      {"vocab_size", true, positive(c.vocabSize)},
      {"context_length", true, positive(c.contextLength)},
      {"d_model", true, positive(c.dModel)},
      {"num_layers", true, positive(c.numLayers)},
      {"num_heads", true, positive(c.numHeads)},
      {"d_ff", true, positive(c.dFF)},
      {"rope_theta", true, positiveReal(c.ropeTheta)},
      {"num_kv_heads", false,
       [&c, &haveKvHeads](const json::Value &v) {
         haveKvHeads = true;
         return positive(c.numKvHeads)(v);
       }},
      {"rms_norm_eps", false, positiveReal(c.rmsNormEps)},
      {"use_rmsnorm", false, boolean(c.useRMSNorm)},
      {"norm_position", false, normPosition(c.postNorm)},
      {"use_rope", false, boolean(c.useRope)},
      {"use_swiglu", false, boolean(c.useSwiGLU)},
      {"tie_embeddings", false, boolean(c.tieEmbeddings)},
      {"dtype", false, weightDtype(c.dtype)},
  };
}

/// Applies `keys` to the object `j`: a required key missing, a bad value
/// or a key none of them names (other than a comment) is an error.
Error applyKeys(const json::Value &j, const std::vector<Key> &keys) {
  std::set<std::string> known;
  for (const Key &k : keys) {
    known.insert(k.name);
    const json::Value *it = j.find(k.name);
    if (!it) {
      if (k.required)
        return configError(std::string("missing required key '") + k.name +
                           "'");
      continue;
    }
    std::string why = k.set(*it);
    if (!why.empty())
      return configError(std::string(k.name) + " (" + show(*it) + ") " + why);
  }
  for (const std::string &key : j.keys()) {
    bool comment = !key.empty() && (key[0] == '_' || key.rfind("//", 0) == 0);
    if (!comment && !known.count(key))
      return configError("unknown key '" + key +
                         "' (keys starting with '_' or '//' are comments)");
  }
  return Error::success();
}

} // namespace

Expected<Config> parseConfig(std::string_view text) {
  std::string duplicate;
  Expected<json::Value> parsed = json::Value::parse(text, &duplicate);
  if (!duplicate.empty())
    return configError("key '" + duplicate + "' appears more than once");
  if (!parsed)
    return configError("invalid JSON at " + parsed.takeError().message());
  if (!parsed->isObject())
    return configError("expected a JSON object, found " +
                       std::string(parsed->typeName()));
  Config c;
  bool haveKvHeads = false;
  if (Error err = applyKeys(*parsed, configKeys(c, haveKvHeads)))
    return err;
  if (!haveKvHeads)
    c.numKvHeads = c.numHeads;
  if (Error err = validateConfig(c))
    return err;
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

Error checkLoadable(const Config &c) {
  // Through the loader itself: one set of rules, never two to keep equal.
  auto loaded = parseConfig(configToJson(c));
  return loaded ? Error::success() : loaded.takeError();
}

std::string configToJson(const Config &c) {
  json::Value j = json::Value::object();
  j.set("vocab_size", c.vocabSize);
  j.set("context_length", c.contextLength);
  j.set("d_model", c.dModel);
  j.set("num_layers", c.numLayers);
  j.set("num_heads", c.numHeads);
  j.set("num_kv_heads", c.kvHeads());
  j.set("d_ff", c.dFF);
  j.set("rope_theta", c.ropeTheta);
  j.set("rms_norm_eps", c.rmsNormEps);
  j.set("use_rmsnorm", c.useRMSNorm);
  j.set("norm_position", c.postNorm ? "post" : "pre");
  j.set("use_rope", c.useRope);
  j.set("use_swiglu", c.useSwiGLU);
  j.set("tie_embeddings", c.tieEmbeddings);
  // Only when it is not the default: an f32 model's text (an artifact's
  // manifest, the compile cache's key) is what it was before dtypes.
  if (c.dtype != WeightDtype::F32)
    j.set("dtype", std::string(dtypeName(c.dtype)));
  return j.dump(json::Value::Layout::Indented) + "\n";
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
