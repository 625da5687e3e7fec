#pragma once
// What the checkpoint format decoders (model/*_format.cpp, behind model/checkpoint_formats.h) share:
// one module's stored tensors with checks that name them, element readers, the group layout (GPTQ
// act-order included), and the assembly of canonical Int4 / Int8 matrices.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "model/host_linear.h"
#include "model/quantization_config.h"
#include "model/safetensors.h"

namespace dcu {

struct ModuleTensors {
  const Checkpoint& ckpt;
  const std::string& module;
  const ModuleQuant& quant;
  int64_t N, K;

  const StoredTensor* find(std::string_view suffix) const;
  // "<module>.<suffix>", or an error naming it and the module's format.
  const StoredTensor& need(std::string_view suffix) const;
  // Fails naming `t` unless its dtype is one of `dtypes` and its shape is `shape`.
  void expect(const StoredTensor& t, std::initializer_list<std::string_view> dtypes,
              const std::vector<int64_t>& shape) const;
  // k per scale (K for one group per row), checked: it divides K and is a multiple of 32.
  int64_t group() const;
  [[noreturn]] void fail_at(const StoredTensor& t, const std::string& why) const;
};

uint32_t u32_at(const StoredTensor& t, size_t i);  // I32 element i, as stored bits
float float_at(const StoredTensor& t, size_t i);   // F32, F16 or BF16 element i

// The group of each input feature and the canonical column order that makes every group a run of
// `group` consecutive columns.
struct GroupLayout {
  int64_t group = 0;
  std::vector<int32_t> group_of;  // [K]: g_idx, or k / group
  std::vector<int32_t> k_order;   // [K]: input feature of canonical column j; empty: the identity
};

// From a g_idx tensor [K] (nullptr: k / group). Each group must hold exactly `group` features.
GroupLayout group_layout(const ModuleTensors& m, int64_t group, const StoredTensor* g_idx);

// Canonical matrices from codes indexed by input feature: q [N, K] row-major, scales [N, K / group],
// Int4 zeros [N, K / group] in 0..15 (dropped when all are 8, the symmetric zero).
HostLinear int4_linear(const ModuleTensors& m, const GroupLayout& layout, const std::vector<uint8_t>& q,
                       std::vector<float> scales, std::vector<uint8_t> zeros);
HostLinear int8_linear(const ModuleTensors& m, const GroupLayout& layout, const std::vector<int8_t>& q,
                       std::vector<float> scales);

// q - z as an int8 code: dcuserve's Int8 is symmetric, so an asymmetric 8-bit weight whose code leaves
// -128..127 cannot be represented and fails naming `t` and the element.
int8_t int8_code(int value, const ModuleTensors& m, const StoredTensor& t, int64_t n, int64_t k);

HostLinear decode_gptq(const ModuleTensors& m);
HostLinear decode_awq(const ModuleTensors& m);
HostLinear decode_ct_packed(const ModuleTensors& m);
HostLinear decode_ct_int(const ModuleTensors& m);
HostLinear decode_fp8_block(const ModuleTensors& m);

}  // namespace dcu
