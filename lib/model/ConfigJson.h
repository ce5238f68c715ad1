//===- ConfigJson.h - parse and validate a model config ---------*- C++ -*-===//
#ifndef TLM_MODEL_CONFIGJSON_H
#define TLM_MODEL_CONFIGJSON_H

#include "lib/model/Config.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace tlm::model {

/// Parses the JSON of docs/spec/config.md#config and checks every rule of
/// docs/spec/model.md. Errors read `config: <key> (<value>) <rule>`, or give the
/// line and column of a JSON syntax error.
llvm::Expected<Config> parseConfig(llvm::StringRef text);

/// Reads `path` and parses it; errors name the file.
llvm::Expected<Config> loadConfig(const std::string &path);

/// The checks of docs/spec/model.md on an already-filled config.
llvm::Error validateConfig(const Config &config);

/// The JSON text of `config`, which parseConfig reads back.
std::string configToJson(const Config &config);

} // namespace tlm::model

#endif // TLM_MODEL_CONFIGJSON_H
