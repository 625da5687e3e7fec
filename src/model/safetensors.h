#pragma once
// Memory-mapped safetensors checkpoints: one file, or shards listed in model.safetensors.index.json.
// Headers are validated on open (offsets inside the file, sizes matching shapes), so a truncated or
// corrupt file is a clear error instead of a crash later.

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace dcu {

struct StoredTensor {
  std::string name;
  std::string dtype_name;        // as written in the header ("BF16", "F32", ...)
  std::optional<DType> dtype;    // nullopt for dtypes dcuserve does not read
  std::vector<int64_t> shape;
  const void* data = nullptr;    // into the mapping
  size_t bytes = 0;
  const std::string* file = nullptr;
};

// The tensors that a safetensors file's bytes describe, each checked to lie inside them with a size that
// matches its shape and dtype (`file` left null). Throws dcu::Error naming `path` on anything malformed.
std::map<std::string, StoredTensor> parse_safetensors(const unsigned char* data, size_t size, const std::string& path);

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::map<std::string, StoredTensor>& tensors() const { return tensors_; }
  const std::string& path() const { return file_.path(); }

 private:
  MappedFile file_;
  std::map<std::string, StoredTensor> tensors_;
};

class Checkpoint {
 public:
  // A model folder with model.safetensors, model.safetensors.index.json, or *.safetensors files.
  static Checkpoint open(const std::string& model_dir);

  const StoredTensor* find(const std::string& name) const;
  std::vector<std::string> names() const;
  size_t total_bytes() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const StoredTensor*> index_;
};

}  // namespace dcu
