#pragma once
// Test helpers for the GPU backend: host tensors with random contents, their device copies, and batch
// layouts mirrored to both backends. The CPU backend is the oracle.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "backend/gpu_backend_api.h"

namespace dcu::testing {

// A host tensor that owns its bytes.
struct HostTensor {
  std::vector<uint8_t> bytes;
  Tensor t;
  HostTensor(DType dtype, std::initializer_list<int64_t> shape) {
    t = Tensor(nullptr, dtype, shape);
    bytes.resize(t.bytes() + 16);
    t.data = bytes.data();
  }
  HostTensor(const HostTensor& other) : bytes(other.bytes), t(other.t) { t.data = bytes.data(); }
  HostTensor& operator=(const HostTensor&) = delete;
  // Uniform values in [lo, hi), stored in the tensor's dtype.
  HostTensor& random(std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i) set(i, dist(rng));
    return *this;
  }
  void set(int64_t i, float v) {
    switch (t.dtype) {
      case DType::F32: t.as<float>()[i] = v; break;
      case DType::F16: t.as<uint16_t>()[i] = f32_to_f16(v); break;
      case DType::BF16: t.as<uint16_t>()[i] = f32_to_bf16(v); break;
      case DType::I32: t.as<int32_t>()[i] = int32_t(v); break;
      case DType::I8: t.as<int8_t>()[i] = int8_t(v); break;
      case DType::U8: t.as<uint8_t>()[i] = uint8_t(v); break;
    }
  }
  float get(int64_t i) const { return load_as_f32(t.data, t.dtype, size_t(i)); }
  std::vector<float> floats() const {
    std::vector<float> out(size_t(t.numel()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = get(int64_t(i));
    return out;
  }
};

// A device copy of a host tensor, released with the owning backend.
class DeviceTensor {
 public:
  DeviceTensor(Backend& be, const HostTensor& h) : be_(&be), t(h.t) {
    t.data = be.allocate(h.t.bytes());
    be.upload(t.data, h.t.data, h.t.bytes());
  }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor() { be_->release(t.data); }
  // The device contents read back as f32.
  std::vector<float> floats() const {
    std::vector<uint8_t> raw(t.bytes());
    be_->download(raw.data(), t.data, raw.size());
    std::vector<float> out(size_t(t.numel()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = load_as_f32(raw.data(), t.dtype, i);
    return out;
  }

 private:
  Backend* be_;

 public:
  Tensor t;
};

// max |a - b| / max(1, max |b|): the error relative to the reference's magnitude.
inline float relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  float diff = 0, scale = 1.0f;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return INFINITY;
    diff = std::max(diff, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return diff / scale;
}

// Sequences of a step: (tokens already cached, new tokens) each, with shuffled KV blocks and slots.
struct TestBatch {
  BatchHost host;
  std::vector<int32_t> device_ints;
  BatchLayout host_layout, device_layout;
  void* device_memory = nullptr;
  Backend* device = nullptr;

  TestBatch(Backend& dev, const std::vector<std::pair<int, int>>& seqs, int block_size, int num_blocks,
            int num_slots, std::mt19937& rng)
      : device(&dev) {
    std::vector<int32_t> free_blocks(static_cast<size_t>(num_blocks)), free_slots(static_cast<size_t>(num_slots));
    for (int i = 0; i < num_blocks; ++i) free_blocks[size_t(i)] = i;
    for (int i = 0; i < num_slots; ++i) free_slots[size_t(i)] = i;
    std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
    std::shuffle(free_slots.begin(), free_slots.end(), rng);
    std::vector<std::vector<int32_t>> tables;
    for (auto [ctx, n] : seqs) {
      std::vector<int32_t> table;
      for (int b = 0; b < (ctx + n + block_size - 1) / block_size; ++b) {
        table.push_back(free_blocks.back());
        free_blocks.pop_back();
      }
      host.max_blocks_per_seq = std::max(host.max_blocks_per_seq, int(table.size()));
      tables.push_back(table);
    }
    host.seq_row_begin.push_back(0);
    for (size_t s = 0; s < seqs.size(); ++s) {
      auto [ctx, n] = seqs[s];
      for (int i = 0; i < n; ++i) {
        const int pos = ctx + i;
        host.positions.push_back(pos);
        host.position_limit = std::max(host.position_limit, pos + 1);
        host.slot_mapping.push_back(tables[s][size_t(pos / block_size)] * block_size + pos % block_size);
      }
      host.seq_row_begin.push_back(host.seq_row_begin.back() + n);
      host.seq_context_before.push_back(ctx);
      host.state_slots.push_back(free_slots[s]);
      host.state_write_slots.insert(host.state_write_slots.end(), size_t(n - 1), -1);
      host.state_write_slots.push_back(free_slots[s]);
      for (int i = 0; i < host.max_blocks_per_seq; ++i)
        host.block_tables.push_back(i < int(tables[s].size()) ? tables[s][size_t(i)] : -1);
    }
    upload();
  }
  // Every row of sequence `s` keeps its state: row i in `slots[i]` (the last one must be its read slot).
  void keep_every_row(int s, const std::vector<int32_t>& slots) {
    const int r0 = host.seq_row_begin[size_t(s)];
    DCU_CHECK(int(slots.size()) == host.seq_rows(s) && slots.back() == host.state_slots[size_t(s)]);
    std::copy(slots.begin(), slots.end(), host.state_write_slots.begin() + r0);
    device->release(device_memory);
    device_ints.clear();
    upload();
  }
  ~TestBatch() { device->release(device_memory); }

 private:
  void upload() {
    Backend& dev = *device;
    host_layout = {&host,
                   host.seq_row_begin.data(),
                   host.seq_context_before.data(),
                   host.positions.data(),
                   host.slot_mapping.data(),
                   host.block_tables.data(),
                   host.state_slots.data(),
                   host.state_write_slots.data()};
    std::vector<const std::vector<int32_t>*> arrays = {&host.seq_row_begin, &host.seq_context_before,
                                                       &host.positions,     &host.slot_mapping,
                                                       &host.block_tables,  &host.state_slots,
                                                       &host.state_write_slots};
    std::vector<size_t> offsets;
    for (auto* a : arrays) {
      offsets.push_back(device_ints.size());
      device_ints.insert(device_ints.end(), a->begin(), a->end());
    }
    device_memory = dev.allocate(device_ints.size() * 4);
    dev.upload(device_memory, device_ints.data(), device_ints.size() * 4);
    auto* base = static_cast<int32_t*>(device_memory);
    device_layout = {&host,           base + offsets[0], base + offsets[1], base + offsets[2],
                     base + offsets[3], base + offsets[4], base + offsets[5], base + offsets[6]};
  }
};

}  // namespace dcu::testing
