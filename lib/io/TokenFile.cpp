//===- TokenFile.cpp - token id files (--tokens-file) ---------------------===//

#include "lib/io/TokenFile.h"

#include "lib/io/SafeTensors.h"

namespace tlm::io {

Expected<TokenMatrix> readTokenFile(const std::string &path) {
  auto file = SafeTensors::open(path);
  if (!file)
    return file.takeError();
  auto fail = [&](const std::string &what) {
    return makeError("token file " + path + what);
  };
  auto isInteger = [](DType d) { return d == DType::I64 || d == DType::I32; };
  const Tensor *t = file->find("tokens");
  if (!t) {
    for (const auto &[name, tensor] : file->tensors())
      if (isInteger(tensor.dtype)) {
        if (t)
          return fail(" has no 'tokens' tensor and several integer ones");
        t = &tensor;
      }
  }
  if (!t)
    return fail(" has no 'tokens' tensor");
  if (!isInteger(t->dtype))
    return fail(": tokens must be I64 or I32, found " +
                std::string(dtypeName(t->dtype)));
  if (t->shape.size() != 2 || t->shape[0] < 1 || t->shape[1] < 1)
    return fail(": tokens must have shape (batch, seq), found " +
                shapeString(t->shape));
  TokenMatrix out{{}, t->shape[0], t->shape[1]};
  out.ids.reserve(t->numElements());
  for (int64_t i = 0; i < t->numElements(); ++i)
    out.ids.push_back(t->dtype == DType::I64
                          ? static_cast<const int64_t *>(t->data)[i]
                          : static_cast<const int32_t *>(t->data)[i]);
  return out;
}

} // namespace tlm::io
