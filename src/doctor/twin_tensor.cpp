#include "doctor/twin_tensor.h"

#include <algorithm>
#include <cmath>

namespace dcu::doctor {
namespace {

void store(void* data, DType t, size_t i, float v) {
  switch (t) {
    case DType::F32:
      static_cast<float*>(data)[i] = v;
      break;
    case DType::F16:
      static_cast<uint16_t*>(data)[i] = f32_to_f16(v);
      break;
    case DType::BF16:
      static_cast<uint16_t*>(data)[i] = f32_to_bf16(v);
      break;
    case DType::I32:
      static_cast<int32_t*>(data)[i] = int32_t(v);
      break;
    case DType::I8:
      static_cast<int8_t*>(data)[i] = int8_t(v);
      break;
    case DType::U8:
      static_cast<uint8_t*>(data)[i] = uint8_t(v);
      break;
  }
}

// v as type t stores it.
float rounded(float v, DType t) {
  uint8_t bytes[4];
  store(bytes, t, 0, v);
  return load_as_f32(bytes, t, 0);
}

void upload_values(Backend& b, const Tensor& t, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(t.bytes());
  for (size_t i = 0; i < values.size(); ++i) store(bytes.data(), t.dtype, i, values[i]);
  b.upload(t.data, bytes.data(), bytes.size());
}

}  // namespace

Twin::Twin(BackendPair& pair, DType reference_dtype, DType device_dtype, std::initializer_list<int64_t> shape)
    : pair_(pair), reference_(nullptr, reference_dtype, shape), device_(nullptr, device_dtype, shape) {
  reference_.data = pair.reference.allocate(reference_.bytes());
  device_.data = pair.device.allocate(device_.bytes());
  pair.reference.fill_zero(reference_.data, reference_.bytes());
  pair.device.fill_zero(device_.data, device_.bytes());
}

Twin::~Twin() {
  pair_.reference.release(reference_.data);
  pair_.device.release(device_.data);
}

Twin& Twin::random(float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(size_t(reference_.numel()));
  for (float& v : values) v = dist(pair_.rng);
  return assign(values);
}

Twin& Twin::assign(const std::vector<float>& values) {
  DCU_CHECK(int64_t(values.size()) == reference_.numel());
  std::vector<float> v = values;
  for (float& x : v) x = rounded(rounded(x, reference_.dtype), device_.dtype);
  upload_values(pair_.reference, reference_, v);
  upload_values(pair_.device, device_, v);
  return *this;
}

std::vector<float> Twin::read(Side s) const {
  const Tensor& t = (*this)[s];
  std::vector<uint8_t> bytes(t.bytes());
  pair_[s].download(bytes.data(), t.data, bytes.size());
  std::vector<float> out(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_as_f32(bytes.data(), t.dtype, i);
  return out;
}

double Twin::error() const { return relative_error(read(Side::Device), read(Side::Reference)); }

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0, scale = 1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return INFINITY;
    if (std::isnan(got[i])) continue;
    if (std::isinf(got[i]) || std::isinf(want[i])) {
      if (got[i] != want[i]) return INFINITY;
      continue;
    }
    diff = std::max(diff, double(std::fabs(got[i] - want[i])));
    scale = std::max(scale, double(std::fabs(want[i])));
  }
  return diff / scale;
}

TwinBatch::TwinBatch(BackendPair& pair, const std::vector<std::pair<int, int>>& seqs, int block_size) : pair_(pair) {
  std::vector<std::vector<int32_t>> tables;
  for (auto [before, rows] : seqs) {
    std::vector<int32_t> table;
    for (int b = 0; b < (before + rows + block_size - 1) / block_size; ++b) table.push_back(blocks_used_++);
    host_.max_blocks_per_seq = std::max(host_.max_blocks_per_seq, int(table.size()));
    tables.push_back(std::move(table));
  }
  host_.seq_row_begin.push_back(0);
  for (size_t s = 0; s < seqs.size(); ++s) {
    auto [before, rows] = seqs[s];
    for (int i = 0; i < rows; ++i) {
      const int pos = before + i;
      host_.positions.push_back(pos);
      host_.position_limit = std::max(host_.position_limit, pos + 1);
      host_.slot_mapping.push_back(tables[s][size_t(pos / block_size)] * block_size + pos % block_size);
      host_.state_write_slots.push_back(i + 1 == rows ? int32_t(s) : -1);
    }
    host_.seq_row_begin.push_back(host_.seq_row_begin.back() + rows);
    host_.seq_context_before.push_back(before);
    host_.state_slots.push_back(int32_t(s));
  }
  for (const auto& table : tables)
    for (int i = 0; i < host_.max_blocks_per_seq; ++i)
      host_.block_tables.push_back(i < int(table.size()) ? table[size_t(i)] : -1);
  reference_ = upload(pair.reference, reference_memory_);
  device_ = upload(pair.device, device_memory_);
}

TwinBatch::~TwinBatch() {
  pair_.reference.release(reference_memory_);
  pair_.device.release(device_memory_);
}

BatchLayout TwinBatch::upload(Backend& b, void*& memory) {
  const std::vector<int32_t>* arrays[] = {&host_.seq_row_begin,    &host_.seq_context_before, &host_.positions,
                                          &host_.slot_mapping,     &host_.block_tables,       &host_.state_slots,
                                          &host_.state_write_slots};
  std::vector<int32_t> packed;
  std::vector<size_t> offsets;
  for (const auto* a : arrays) {
    offsets.push_back(packed.size());
    packed.insert(packed.end(), a->begin(), a->end());
  }
  memory = b.allocate(packed.size() * 4);
  b.upload(memory, packed.data(), packed.size() * 4);
  const auto* base = static_cast<const int32_t*>(memory);
  return {&host_,
          base + offsets[0],
          base + offsets[1],
          base + offsets[2],
          base + offsets[3],
          base + offsets[4],
          base + offsets[5],
          base + offsets[6]};
}

}  // namespace dcu::doctor
