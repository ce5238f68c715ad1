//===- HfImport.cpp - import Hugging Face Llama-family checkpoints --------===//

#include "lib/model/HfImport.h"

#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"
#include "lib/model/ConfigJson.h"
#include "lib/model/Weights.h"
#include "lib/support/Json.h"
#include "lib/support/Strings.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

namespace tlm::model {

namespace {

Error fail(const std::string &what) { return makeError("import-hf: " + what); }

/// config.json's `key` as an integer >= 1 (`fallback` when absent and
/// given).
Error readSize(const json::Value &j, const char *key, int64_t &out,
               std::optional<int64_t> fallback = std::nullopt) {
  const json::Value *v = j.find(key);
  if (!v || v->isNull()) {
    if (fallback) {
      out = *fallback;
      return Error::success();
    }
    return fail("config.json: missing '" + std::string(key) + "'");
  }
  if (!v->isInt64() || v->asInt() < 1)
    return fail("config.json: '" + std::string(key) +
                "' must be an integer >= 1");
  out = v->asInt();
  return Error::success();
}

Error readReal(const json::Value &j, const char *key, double &out) {
  const json::Value *v = j.find(key);
  if (!v || v->isNull())
    return Error::success(); // the default stays
  if (!v->isNumber() || !(v->asDouble() > 0))
    return fail("config.json: '" + std::string(key) + "' must be a number > 0");
  out = v->asDouble();
  return Error::success();
}

/// Whether `key` is absent, null or false.
bool unset(const json::Value &j, const char *key) {
  const json::Value *v = j.find(key);
  return !v || v->isNull() || (v->isBool() && !v->asBool());
}

/// HF's name of each of our tensors (for the messages and the mapping).
std::map<std::string, std::string> ourNames(const Config &c) {
  std::map<std::string, std::string> hf{
      {"model.embed_tokens.weight", "token_embeddings.weight"},
      {"model.norm.weight", "ln_final.weight"}};
  if (!c.tieEmbeddings)
    hf["lm_head.weight"] = "lm_head.weight";
  const std::pair<const char *, const char *> block[] = {
      {"self_attn.q_proj.weight", "attn.q_proj.weight"},
      {"self_attn.k_proj.weight", "attn.k_proj.weight"},
      {"self_attn.v_proj.weight", "attn.v_proj.weight"},
      {"self_attn.o_proj.weight", "attn.output_proj.weight"},
      {"mlp.gate_proj.weight", "ffn.w1.weight"},
      {"mlp.down_proj.weight", "ffn.w2.weight"},
      {"mlp.up_proj.weight", "ffn.w3.weight"},
      {"input_layernorm.weight", "ln1.weight"},
      {"post_attention_layernorm.weight", "ln2.weight"}};
  for (int64_t i = 0; i < c.numLayers; ++i)
    for (const auto &[from, to] : block)
      hf["model.layers." + std::to_string(i) + "." + from] =
          "layers." + std::to_string(i) + "." + to;
  return hf;
}

/// Whether `path` lies in the folder `root` (both canonical).
bool within(const std::filesystem::path &path,
            const std::filesystem::path &root) {
  std::filesystem::path rel = path.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

/// An error when `file`, a file of the model folder `dir`, is a link that
/// leads out of it (or around in a loop). The Hugging Face cache's layout
/// is the one way out allowed: a file in a repository's blobs/ folder
/// (hub/models--ORG--NAME/blobs/SHA), where snapshots and --local-dir
/// downloads link. A missing file is the reader's to report.
Error checkInsideFolder(const std::string &dir, const std::string &file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path real = fs::canonical(file, ec);
  if (ec == std::errc::no_such_file_or_directory)
    return Error::success();
  if (ec)
    return fail(file + ": " + ec.message());
  fs::path home = fs::canonical(dir, ec);
  if (ec)
    return fail(dir + ": " + ec.message());
  if (within(real, home))
    return Error::success();
  // The hub cache's blobs/ of a repository (models--ORG--NAME/blobs/SHA):
  // where a snapshot's files, and those `huggingface-cli download
  // --local-dir` linked, really are.
  fs::path blobs = real.parent_path();
  if (blobs.filename() == "blobs" &&
      blobs.parent_path().filename().string().rfind("models--", 0) == 0)
    return Error::success();
  return fail(file + " links to " + real.string() + ", outside " + dir +
              " (the model's files must be in its folder)");
}

/// The shard files of `dir`: those model.safetensors.index.json lists, or
/// model.safetensors; each checked to be the folder's own.
Expected<std::vector<std::string>> shardFiles(const std::string &dir) {
  std::string index = dir + "/model.safetensors.index.json";
  std::error_code ec;
  bool indexed = std::filesystem::exists(index, ec);
  if (ec)
    return fail(index + ": " + ec.message());
  if (!indexed) {
    std::string single = dir + "/model.safetensors";
    if (Error err = checkInsideFolder(dir, single))
      return err;
    return std::vector<std::string>{single};
  }
  if (Error err = checkInsideFolder(dir, index))
    return err;
  auto text = io::readRegularFile(index, 64ull << 20);
  if (!text)
    return text.takeError();
  auto j = json::Value::parse(*text);
  if (!j)
    return fail(index + ": " + j.takeError().message());
  const json::Value *map = j->find("weight_map");
  if (!map || !map->isObject())
    return fail(index + ": no 'weight_map' object");
  std::set<std::string> files;
  for (const json::Value &file : map->elements()) {
    if (!file.isString() || file.asString().find('/') != std::string::npos)
      return fail(index + ": 'weight_map' values must be file names in " + dir);
    files.insert(file.asString());
  }
  std::vector<std::string> out;
  for (const std::string &f : files) {
    out.push_back(dir + "/" + f);
    if (Error err = checkInsideFolder(dir, out.back()))
      return err;
  }
  return out;
}

/// `message` about tlm's config fields, with each field named as
/// config.json names it.
std::string hfNames(std::string message) {
  const std::pair<const char *, const char *> names[] = {
      {"context_length", "max_position_embeddings"},
      {"d_model", "hidden_size"},
      {"num_layers", "num_hidden_layers"},
      {"num_kv_heads", "num_key_value_heads"},
      {"num_heads", "num_attention_heads"},
      {"d_ff", "intermediate_size"},
      {"tie_embeddings", "tie_word_embeddings"}};
  for (const auto &[ours, theirs] : names) {
    size_t at = message.find(ours);
    if (at != std::string::npos)
      message.replace(at, std::strlen(ours), theirs);
  }
  return message;
}

/// Row r of the permuted q/k matrix is HF's row perm(r): within each head
/// of d rows, 2i <- i and 2i + 1 <- i + d / 2.
int64_t hfRow(int64_t r, int64_t d) {
  int64_t head = r / d, i = r % d;
  return head * d + (i % 2 == 0 ? i / 2 : i / 2 + d / 2);
}

} // namespace

Expected<Config> readHfConfig(const std::string &dir) {
  std::string path = dir + "/config.json";
  if (Error err = checkInsideFolder(dir, path))
    return err;
  auto text = io::readRegularFile(path, 1 << 20);
  if (!text)
    return fail(text.takeError().message());
  auto parsed = json::Value::parse(*text);
  if (!parsed)
    return fail(path + ": " + parsed.takeError().message());
  const json::Value &j = *parsed;
  if (!j.isObject())
    return fail(path + ": not a JSON object");
  Config c;
  c.rmsNormEps = 1e-6; // LlamaConfig's default
  if (Error err = readSize(j, "hidden_size", c.dModel))
    return err;
  if (Error err = readSize(j, "intermediate_size", c.dFF))
    return err;
  if (Error err = readSize(j, "num_hidden_layers", c.numLayers))
    return err;
  if (Error err = readSize(j, "num_attention_heads", c.numHeads))
    return err;
  if (Error err = readSize(j, "num_key_value_heads", c.numKvHeads, c.numHeads))
    return err;
  if (Error err = readSize(j, "vocab_size", c.vocabSize))
    return err;
  if (Error err = readSize(j, "max_position_embeddings", c.contextLength))
    return err;
  if (Error err = readReal(j, "rms_norm_eps", c.rmsNormEps))
    return err;
  if (Error err = readReal(j, "rope_theta", c.ropeTheta))
    return err;
  // transformers reads the flag as Python does: 0 and 1 (any number) are
  // false and true; anything else but a bool or null is refused.
  if (const json::Value *t = j.find("tie_word_embeddings"); t && !t->isNull()) {
    if (t->isBool())
      c.tieEmbeddings = t->asBool();
    else if (t->isNumber())
      c.tieEmbeddings = t->asDouble() != 0;
    else
      return fail("config.json: 'tie_word_embeddings' must be true or false, "
                  "found " + t->dump());
  }
  // What our model cannot express: refused by name, never approximated.
  if (const json::Value *act = j.find("hidden_act");
      act && !(act->isString() && act->asString() == "silu"))
    return fail("config.json: 'hidden_act' must be \"silu\" (tlm's SwiGLU)");
  for (const char *key : {"rope_scaling", "attention_bias", "mlp_bias"})
    if (!unset(j, key))
      return fail("config.json: '" + std::string(key) +
                  "' is set, which tlm's model does not support");
  // Mistral-style sliding windows; Qwen2 keeps a window size but turns it
  // off with use_sliding_window.
  if (!unset(j, "sliding_window") && (j.find("use_sliding_window") == nullptr ||
                                      !unset(j, "use_sliding_window")))
    return fail("config.json: 'sliding_window' is set, which tlm's "
                "attention does not support (it attends to every past "
                "token)");
  if (const json::Value *hd = j.find("head_dim"); hd && !hd->isNull()) {
    if (!hd->isInt64() || hd->asInt() * c.numHeads != c.dModel)
      return fail("config.json: 'head_dim' must be hidden_size / "
                  "num_attention_heads (" +
                  std::to_string(c.dModel / c.numHeads) + ")");
  }
  // The rules tlm's own config loader applies (the largest sizes, a normal
  // f32 epsilon and theta, ...): a folder written that the loader refused
  // would be useless.
  if (Error err = checkLoadable(c))
    return fail("config.json: " + hfNames(err.message()));
  return c;
}

namespace {

/// Every tensor of the shards by its Hugging Face name; a name in two
/// shards is an error. The shards stay open (mapped) in `shards`.
Expected<std::map<std::string, const io::Tensor *>>
openShards(const std::vector<std::string> &files,
           std::vector<io::SafeTensors> &shards) {
  for (const std::string &file : files) {
    auto st = io::SafeTensors::open(file, io::SafeTensors::Load::Map);
    if (!st)
      return fail(st.takeError().message());
    shards.push_back(std::move(*st));
  }
  std::map<std::string, const io::Tensor *> byName;
  for (const io::SafeTensors &st : shards)
    for (const auto &[name, tensor] : st.tensors())
      if (!byName.try_emplace(name, &tensor).second)
        return fail("tensor '" + name + "' is in two shards");
  return byName;
}

/// The shards' tensors under tlm's names, with each one's HF name.
struct Matched {
  std::map<std::string, const io::Tensor *> ours;
  std::map<std::string, std::string> hfOf;
  std::set<io::DType> matrixTypes;
};

/// Matches every HF tensor to tlm's name for it (`names`: HF -> ours);
/// one with no counterpart, or of a dtype tlm does not read, is an error.
Expected<Matched> matchTensors(
    const std::map<std::string, const io::Tensor *> &byName,
    const std::map<std::string, std::string> &names) {
  Matched m;
  for (const auto &[name, tensor] : byName) {
    if (endsWith(name, ".rotary_emb.inv_freq"))
      continue; // a buffer derived from rope_theta
    auto it = names.find(name);
    if (it == names.end())
      return fail("tensor '" + name + "' has no counterpart in tlm's model" +
                  (name.find("bias") != std::string::npos
                       ? " (biases are not supported)"
                   : name == "lm_head.weight"
                       ? " (the config ties the embeddings)"
                       : ""));
    if (tensor->dtype != io::DType::F32 && tensor->dtype != io::DType::BF16 &&
        tensor->dtype != io::DType::F16)
      return fail("tensor '" + name + "' has dtype " +
                  std::string(io::dtypeName(tensor->dtype)) +
                  ", expected F32, BF16 or F16");
    if (tensor->shape.size() == 2)
      m.matrixTypes.insert(tensor->dtype);
    m.ours[it->second] = tensor;
    m.hfOf[it->second] = name;
  }
  return m;
}

/// `t` as `spec` asks: rows permuted from HF's RoPE layout when `rope`,
/// elements widened to f32 when the dtypes differ; written into `out`.
void convertTensor(const io::Tensor &t, const WeightSpec &spec, bool rope,
                   int64_t headDim, char *out) {
  size_t elem = io::dtypeSize(spec.dtype);
  int64_t rows = spec.shape.size() == 2 ? spec.shape[0] : 1;
  int64_t cols = spec.shape.back();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t from = rope ? hfRow(r, headDim) : r;
    if (t.dtype == spec.dtype) {
      std::memcpy(out + r * cols * elem,
                  static_cast<const char *>(t.data) + from * cols * elem,
                  size_t(cols) * elem);
      continue;
    }
    // Only widening to f32 reaches here (the dtype is the matrices' own
    // or f32; gains are f32).
    for (int64_t k = 0; k < cols; ++k) {
      float v = io::elementAsF32(t.data, t.dtype, size_t(from * cols + k));
      std::memcpy(out + (r * cols + k) * elem, &v, sizeof(float));
    }
  }
}

} // namespace

Expected<Config> importHf(const std::string &dir, const std::string &outDir,
                          const std::vector<ModelFile> &extra) {
  auto config = readHfConfig(dir);
  if (!config)
    return config.takeError();
  Config c = *config;
  auto files = shardFiles(dir);
  if (!files)
    return files.takeError();
  std::vector<io::SafeTensors> shards;
  auto byName = openShards(*files, shards);
  if (!byName)
    return byName.takeError();
  std::map<std::string, std::string> names = ourNames(c);
  auto matched = matchTensors(*byName, names);
  if (!matched)
    return matched.takeError();
  // One dtype for the matrices: theirs when they agree, else f32 (exact).
  const std::set<io::DType> &matrixTypes = matched->matrixTypes;
  c.dtype = WeightDtype::F32;
  if (matrixTypes.size() == 1 && *matrixTypes.begin() == io::DType::BF16)
    c.dtype = WeightDtype::BF16;
  if (matrixTypes.size() == 1 && *matrixTypes.begin() == io::DType::F16)
    c.dtype = WeightDtype::F16;

  // Our tensors in order, converted (gains to f32, matrices to the dtype)
  // and q/k permuted where needed; untouched matrices are written from the
  // mapped shards.
  std::map<std::string, std::string> hfName;
  for (const auto &[hf, our] : names)
    hfName[our] = hf;
  std::vector<io::TensorView> views;
  std::vector<std::vector<char>> owned;
  for (const WeightSpec &spec : weightSpecs(c)) {
    auto it = matched->ours.find(spec.name);
    if (it == matched->ours.end())
      return fail("missing tensor '" + hfName[spec.name] +
                  "' (expected shape " + io::shapeString(spec.shape) + ")");
    const io::Tensor &t = *it->second;
    if (t.shape != spec.shape)
      return fail("tensor '" + matched->hfOf[spec.name] + "' has shape " +
                  io::shapeString(t.shape) + ", expected " +
                  io::shapeString(spec.shape));
    bool rope =
        c.useRope && (spec.name.find("attn.q_proj") != std::string::npos ||
                      spec.name.find("attn.k_proj") != std::string::npos);
    if (t.dtype == spec.dtype && !rope) {
      views.push_back({spec.name, spec.dtype, spec.shape, t.data});
      continue;
    }
    int64_t rows = spec.shape.size() == 2 ? spec.shape[0] : 1;
    owned.emplace_back(size_t(rows * spec.shape.back()) *
                       io::dtypeSize(spec.dtype));
    convertTensor(t, spec, rope, c.headDim(), owned.back().data());
    views.push_back({spec.name, spec.dtype, spec.shape, owned.back().data()});
  }

  std::vector<std::string> inputs = *files;
  inputs.push_back(dir + "/config.json");
  if (Error err = writeModelFolder(
          outDir, c, views,
          {{"tlm.dtype", std::string(dtypeName(c.dtype))}, {"tlm.source", "hf"}},
          inputs, "import-hf", extra, {"tokenizer.json"}))
    return err;
  return c;
}

} // namespace tlm::model
