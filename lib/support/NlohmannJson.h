//===- NlohmannJson.h - nlohmann/json.hpp, never throwing -------*- C++ -*-===//
//
// Json.cpp and JsonParse.cpp include nlohmann_json through this header alone
// (the rest of tlm reads and writes JSON through Json.h). The code is built
// without exceptions: JSON_NOEXCEPTION makes a throw inside the library
// std::abort(), and those two files use only its paths that cannot throw.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_SUPPORT_NLOHMANNJSON_H
#define TLM_SUPPORT_NLOHMANNJSON_H

#ifndef JSON_NOEXCEPTION
#define JSON_NOEXCEPTION 1
#endif
#include <nlohmann/json.hpp>

#endif // TLM_SUPPORT_NLOHMANNJSON_H
