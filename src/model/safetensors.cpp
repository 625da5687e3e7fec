#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dcu {
namespace {

using json = nlohmann::json;

std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  if (s == "I32") return DType::I32;
  if (s == "I8") return DType::I8;
  if (s == "U8") return DType::U8;
  return std::nullopt;
}

size_t stored_dtype_size(const std::string& s) {
  static const std::map<std::string, size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2},
      {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2}, {"U32", 4}, {"U64", 8}};
  auto it = sizes.find(s);
  return it == sizes.end() ? 0 : it->second;
}

// A list of integers of type T; nlohmann's get<> would cast a float or a negative number without a check.
template <typename T>
std::vector<T> whole_numbers(const json& list, const std::string& path, const std::string& name) {
  if (!list.is_array()) fail("{}: tensor {}: shape and data_offsets must be lists of integers", path, name);
  std::vector<T> out;
  for (const auto& v : list) {
    const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                                             : v.is_number_integer() && v.get<int64_t>() >= 0;
    if (!fits) fail("{}: tensor {}: {} is not a size or an offset", path, name, v.dump());
    out.push_back(T(v.get<uint64_t>()));
  }
  return out;
}

}  // namespace

std::map<std::string, StoredTensor> parse_safetensors(const unsigned char* data, size_t size, const std::string& path) {
  if (size < 8) fail("{}: truncated safetensors file ({} bytes, no header)", path, size);
  uint64_t header_len = 0;
  std::memcpy(&header_len, data, 8);
  if (header_len > size - 8)
    fail("{}: truncated or corrupt safetensors file (header of {} bytes in a file of {})", path, header_len, size);
  json header;
  try {
    header = json::parse(data + 8, data + 8 + header_len);
  } catch (const json::exception& e) {
    fail("{}: corrupt safetensors header ({})", path, e.what());
  }
  if (!header.is_object()) fail("{}: corrupt safetensors header (not a JSON object)", path);
  const unsigned char* base = data + 8 + header_len;
  const size_t data_size = size - 8 - header_len;
  std::map<std::string, StoredTensor> tensors;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    StoredTensor t;
    t.name = name;
    try {
      t.dtype_name = entry.at("dtype").get<std::string>();
      t.shape = whole_numbers<int64_t>(entry.at("shape"), path, name);
      const auto offsets = whole_numbers<uint64_t>(entry.at("data_offsets"), path, name);
      if (offsets.size() != 2) fail("{}: tensor {}: data_offsets must have two entries", path, name);
      if (offsets[0] > offsets[1] || offsets[1] > data_size)
        fail("{}: tensor {} lies outside the file (bytes {}..{} of {}): truncated or corrupt file", path, name,
             offsets[0], offsets[1], data_size);
      t.data = base + offsets[0];
      t.bytes = offsets[1] - offsets[0];
    } catch (const json::exception& e) {
      fail("{}: tensor {}: malformed header entry ({})", path, name, e.what());
    }
    size_t elem = stored_dtype_size(t.dtype_name);
    if (elem == 0) fail("{}: tensor {} has unknown dtype {}", path, name, t.dtype_name);
    // The product of the dimensions must not wrap around: a huge shape would otherwise pass as a few bytes.
    size_t bytes = elem;
    for (int64_t d : t.shape) {
      if (d < 0) fail("{}: tensor {} has a negative dimension", path, name);
      if (__builtin_mul_overflow(bytes, size_t(d), &bytes)) bytes = std::numeric_limits<size_t>::max();
    }
    if (bytes != t.bytes)
      fail("{}: tensor {} holds {} bytes but its shape and dtype need {}", path, name, t.bytes,
           bytes == std::numeric_limits<size_t>::max() ? std::string("more than the file") : std::to_string(bytes));
    t.dtype = parse_dtype(t.dtype_name);
    tensors.emplace(name, std::move(t));
  }
  return tensors;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : file_(path), tensors_(parse_safetensors(file_.data(), file_.size(), path)) {
  for (auto& [name, t] : tensors_) t.file = &file_.path();
}

Checkpoint Checkpoint::open(const std::string& model_dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(model_dir)) fail("model folder {} does not exist", model_dir);
  std::vector<std::string> shard_paths;
  fs::path index_path = fs::path(model_dir) / "model.safetensors.index.json";
  fs::path single = fs::path(model_dir) / "model.safetensors";
  if (fs::exists(index_path)) {
    std::ifstream in(index_path);
    json index;
    try {
      index = json::parse(in);
    } catch (const json::exception& e) {
      fail("{}: not valid JSON ({})", index_path.string(), e.what());
    }
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      fail("{}: missing \"weight_map\"", index_path.string());
    std::set<std::string> shards;
    for (auto& [name, file] : index["weight_map"].items()) {
      if (!file.is_string()) fail("{}: weight_map entry {} is not a file name", index_path.string(), name);
      shards.insert(file.get<std::string>());
    }
    for (const auto& s : shards) {
      fs::path p = fs::path(model_dir) / s;
      if (!fs::exists(p)) fail("{}: shard {} listed in the index is missing", model_dir, s);
      shard_paths.push_back(p.string());
    }
  } else if (fs::exists(single)) {
    shard_paths.push_back(single.string());
  } else {
    for (const auto& entry : fs::directory_iterator(model_dir))
      if (entry.path().extension() == ".safetensors") shard_paths.push_back(entry.path().string());
    std::sort(shard_paths.begin(), shard_paths.end());
    if (shard_paths.empty()) fail("{}: no model.safetensors, index, or *.safetensors file", model_dir);
  }
  Checkpoint ckpt;
  for (const auto& p : shard_paths) {
    ckpt.files_.push_back(std::make_unique<SafetensorsFile>(p));
    for (const auto& [name, t] : ckpt.files_.back()->tensors()) {
      if (ckpt.index_.count(name)) fail("{}: tensor {} appears in more than one shard", model_dir, name);
      ckpt.index_[name] = &t;
    }
  }
  return ckpt;
}

const StoredTensor* Checkpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : index_) out.push_back(name);
  return out;
}

size_t Checkpoint::total_bytes() const {
  size_t total = 0;
  for (const auto& [_, t] : index_) total += t->bytes;
  return total;
}

}  // namespace dcu
