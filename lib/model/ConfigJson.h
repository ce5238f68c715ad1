//===- ConfigJson.h - parse and validate a model config ---------*- C++ -*-===//
#ifndef TLM_MODEL_CONFIGJSON_H
#define TLM_MODEL_CONFIGJSON_H

#include "lib/model/Config.h"

#include "lib/support/Error.h"
#include "lib/support/Strings.h"

namespace tlm::model {

/// Parses the JSON of docs/spec/config.md#config and checks every rule of
/// docs/spec/model.md. Errors read `config: <key> (<value>) <rule>`, or give
/// the line and column of a JSON syntax error.
Expected<Config> parseConfig(std::string_view text);

/// Reads `path` and parses it; errors name the file.
Expected<Config> loadConfig(const std::string &path);

/// The checks of docs/spec/model.md on an already-filled config.
Error validateConfig(const Config &config);

/// Every rule parseConfig applies, on a config made otherwise (by an
/// importer): an error when tlm would refuse to load it.
Error checkLoadable(const Config &config);

/// The JSON text of `config`, which parseConfig reads back.
std::string configToJson(const Config &config);

} // namespace tlm::model

#endif // TLM_MODEL_CONFIGJSON_H
