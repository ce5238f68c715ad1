//===- Checkpoint.cpp - a training run's saved state ----------------------===//

#include "lib/runtime/Checkpoint.h"

#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace tlm::runtime {

namespace {

namespace fs = std::filesystem;

Error writeJson(const std::string &path, const json::Value &value) {
  auto file = io::AtomicFile::create(path);
  if (!file)
    return file.takeError();
  if (Error err = file->write(value.dump(json::Value::Layout::Indented) + "\n"))
    return err;
  return file->commit();
}

/// Every parameter's moment `prefix.<name>` (zeros before the first step).
void momentViews(const Trainer &trainer, const char *prefix,
                 const std::vector<std::vector<float>> &moments,
                 std::vector<std::vector<float>> &zeros,
                 std::vector<io::TensorView> &out) {
  const std::vector<model::WeightSpec> &specs = trainer.specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    const float *data;
    if (moments.empty()) {
      zeros.emplace_back(size_t(specs[i].numElements()), 0.0f);
      data = zeros.back().data();
    } else {
      data = moments[i].data();
    }
    out.push_back({std::string(prefix) + "." + specs[i].name, io::DType::F32,
                   specs[i].shape, data});
  }
}

Error writeFiles(const std::string &dir, const Trainer &trainer,
                 const CheckpointState &state) {
  const std::vector<model::WeightSpec> &specs = trainer.specs();
  std::vector<io::TensorView> weights;
  for (size_t i = 0; i < specs.size(); ++i)
    weights.push_back({specs[i].name, io::DType::F32, specs[i].shape,
                       trainer.parameters()[i].data()});
  if (Error err = io::writeSafeTensors(dir + "/model.safetensors", weights))
    return err;
  std::vector<io::TensorView> moments;
  std::vector<std::vector<float>> zeros;
  zeros.reserve(2 * specs.size()); // the views point into it
  momentViews(trainer, "m", trainer.firstMoments(), zeros, moments);
  momentViews(trainer, "v", trainer.secondMoments(), zeros, moments);
  if (Error err =
          io::writeSafeTensors(dir + "/optimizer.safetensors", moments))
    return err;
  json::Value s = json::Value::object();
  s.set("step", state.step);
  // 64 bits do not fit a JSON number exactly everywhere: a decimal string.
  s.set("rng", std::to_string(state.rng));
  s.set("time_s", state.seconds);
  s.set("config", state.config);
  s.set("args", state.args);
  return writeJson(dir + "/state.json", s);
}

} // namespace

Error writeCheckpoint(const std::string &dir, const Trainer &trainer,
                      const CheckpointState &state) {
  std::string temp = dir + ".partial-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(temp, ec);
  if (!fs::create_directory(temp, ec))
    return makeError(temp + ": " + (ec ? ec.message() : "exists"));
  if (Error err = writeFiles(temp, trainer, state)) {
    fs::remove_all(temp, ec);
    return err;
  }
  // A folder renames only onto a missing or empty one: an older checkpoint
  // of the same name goes aside first, and away once the new one is in.
  std::string old = dir + ".old-" + std::to_string(::getpid());
  fs::remove_all(old, ec); // a crashed run's, which would block the rename
  bool replaced = fs::exists(dir, ec);
  if (replaced && ::rename(dir.c_str(), old.c_str()) != 0) {
    std::string why = std::strerror(errno);
    fs::remove_all(temp, ec);
    return makeError(dir + ": " + why);
  }
  if (::rename(temp.c_str(), dir.c_str()) != 0) {
    std::string why = std::strerror(errno);
    if (replaced)
      ::rename(old.c_str(), dir.c_str());
    fs::remove_all(temp, ec);
    return makeError(dir + ": " + why);
  }
  if (replaced)
    fs::remove_all(old, ec);
  return Error::success();
}

Expected<Checkpoint> readCheckpoint(const std::string &dir,
                                    const std::vector<model::WeightSpec> &specs) {
  Checkpoint c;
  std::string statePath = dir + "/state.json";
  auto text = io::readRegularFile(statePath, uint64_t(16) << 20);
  if (!text)
    return text.takeError();
  auto root = json::Value::parse(*text);
  if (!root)
    return makeError(statePath + ": " + root.takeError().message());
  const json::Value *step = root->find("step");
  const json::Value *rng = root->find("rng");
  if (!step || !step->isInt64() || step->asInt() < 0 || !rng ||
      !rng->isString())
    return makeError(statePath + ": expected a 'step' >= 0 and an 'rng' "
                                 "string");
  c.state.step = step->asInt();
  errno = 0;
  char *end = nullptr;
  c.state.rng = std::strtoull(rng->asString().c_str(), &end, 10);
  if (errno || rng->asString().empty() || *end)
    return makeError(statePath + ": 'rng' is not a 64-bit number");
  if (const json::Value *t = root->find("time_s"); t && t->isNumber())
    c.state.seconds = t->asDouble();
  if (const json::Value *config = root->find("config"))
    c.state.config = *config;
  if (const json::Value *args = root->find("args"))
    c.state.args = *args;

  std::string momentsPath = dir + "/optimizer.safetensors";
  auto file = io::SafeTensors::open(momentsPath);
  if (!file)
    return file.takeError();
  for (const char *prefix : {"m", "v"}) {
    auto &out = *prefix == 'm' ? c.m : c.v;
    for (const model::WeightSpec &spec : specs) {
      std::string name = std::string(prefix) + "." + spec.name;
      const io::Tensor *t = file->find(name);
      if (!t || t->dtype != io::DType::F32 || t->shape != spec.shape)
        return makeError(momentsPath + ": expected an F32 '" + name +
                         "' of the parameter's shape");
      out.emplace_back(t->f32(), t->f32() + t->numElements());
    }
  }
  return c;
}

} // namespace tlm::runtime
