#include "model/format_decoding.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "backend/linear.h"
#include "core/dtype.h"
#include "core/error.h"

namespace dcu {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace

const StoredTensor* ModuleTensors::find(std::string_view suffix) const {
  return ckpt.find(module + "." + std::string(suffix));
}

const StoredTensor& ModuleTensors::need(std::string_view suffix) const {
  if (const StoredTensor* t = find(suffix)) return *t;
  std::string hint;
  if (const StoredTensor* dense = find("weight"); dense && suffix != "weight")
    hint = fmt::format(" (it has {}.weight, {}: is the module left unquantized in the quantization_config?)", module,
                       dense->dtype_name);
  fail("module {} is {} by the quantization_config, but the checkpoint has no tensor {}.{}{}", module,
       quant.describe(), module, suffix, hint);
}

void ModuleTensors::expect(const StoredTensor& t, std::initializer_list<std::string_view> dtypes,
                           const std::vector<int64_t>& shape) const {
  const bool dtype_ok = std::find(dtypes.begin(), dtypes.end(), t.dtype_name) != dtypes.end();
  if (dtype_ok && t.shape == shape) return;
  fail_at(t, fmt::format("is {} {}, but {} with N = {}, K = {} needs {} {}", t.dtype_name, shape_text(t.shape),
                         quant.describe(), N, K, fmt::join(dtypes, " or "), shape_text(shape)));
}

int64_t ModuleTensors::group() const {
  const int64_t g = quant.group_size == -1 ? K : quant.group_size;
  if (g <= 0 || K % g != 0)
    fail("module {} is {}: the group does not divide K = {}", module, quant.describe(), K);
  if (g % 32 != 0)
    fail("module {} is {}: dcuserve's quantized layouts need groups that are multiples of 32 (K = {})", module,
         quant.describe(), K);
  return g;
}

void ModuleTensors::fail_at(const StoredTensor& t, const std::string& why) const {
  fail("{}: tensor {} {}", *t.file, t.name, why);
}

uint32_t u32_at(const StoredTensor& t, size_t i) {
  uint32_t v;
  std::memcpy(&v, static_cast<const char*>(t.data) + 4 * i, 4);
  return v;
}

float float_at(const StoredTensor& t, size_t i) { return load_as_f32(t.data, *t.dtype, i); }

GroupLayout group_layout(const ModuleTensors& m, int64_t group, const StoredTensor* g_idx) {
  const int64_t K = m.K, groups = K / group;
  GroupLayout layout{group, std::vector<int32_t>(size_t(K)), {}};
  bool identity = true;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t g = g_idx ? int32_t(u32_at(*g_idx, size_t(k))) : k / group;
    if (g < 0 || g >= groups)
      m.fail_at(*g_idx, fmt::format("gives input feature {} group {}, outside 0..{} (K = {}, group {})", k, g,
                                    groups - 1, K, group));
    layout.group_of[size_t(k)] = int32_t(g);
    identity = identity && g == k / group;
  }
  if (identity) return layout;
  // Act-order (GPTQ desc_act): columns sorted by group, stably, so group g is columns [g G, (g + 1) G).
  std::vector<int64_t> next(size_t(groups), 0);
  for (int32_t g : layout.group_of) ++next[size_t(g)];
  for (int64_t g = 0; g < groups; ++g)
    if (next[size_t(g)] != group)
      m.fail_at(*g_idx, fmt::format("gives group {} {} input features, not the group size {}", g, next[size_t(g)], group));
  for (int64_t g = 0; g < groups; ++g) next[size_t(g)] = g * group;
  layout.k_order.resize(size_t(K));
  for (int64_t k = 0; k < K; ++k) layout.k_order[size_t(next[size_t(layout.group_of[size_t(k)])]++)] = int32_t(k);
  return layout;
}

namespace {

// An [N, K] HostLinear of `format` in `layout`'s groups and column order, codes still to be filled.
HostLinear canonical(WeightFormat format, const ModuleTensors& m, const GroupLayout& layout, std::vector<float> scales) {
  HostLinear h;
  h.format = format;
  h.rows = m.N;
  h.cols = m.K;
  h.group = layout.group;
  h.codes.resize(size_t(format == WeightFormat::Int8 ? m.N * m.K : m.N * m.K / 2));
  h.scales = std::move(scales);
  h.k_order = layout.k_order;
  return h;
}

}  // namespace

HostLinear int4_linear(const ModuleTensors& m, const GroupLayout& layout, const std::vector<uint8_t>& q,
                       std::vector<float> scales, std::vector<uint8_t> zeros) {
  const int64_t N = m.N, K = m.K;
  HostLinear h = canonical(WeightFormat::Int4, m, layout, std::move(scales));
#pragma omp parallel
  {
    std::vector<uint8_t> row(static_cast<size_t>(K));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      const uint8_t* src = q.data() + n * K;
      if (layout.k_order.empty()) std::copy(src, src + K, row.begin());
      else
        for (int64_t j = 0; j < K; ++j) row[size_t(j)] = src[layout.k_order[size_t(j)]];
      pack_int4_row(row.data(), K, h.codes.data() + n * (K / 2));
    }
  }
  if (!std::all_of(zeros.begin(), zeros.end(), [](uint8_t z) { return z == 8; })) h.zeros = std::move(zeros);
  return h;
}

HostLinear int8_linear(const ModuleTensors& m, const GroupLayout& layout, const std::vector<int8_t>& q,
                       std::vector<float> scales) {
  const int64_t N = m.N, K = m.K;
  HostLinear h = canonical(WeightFormat::Int8, m, layout, std::move(scales));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < K; ++j) {
      const int64_t k = layout.k_order.empty() ? j : layout.k_order[size_t(j)];
      h.codes[size_t(n * K + j)] = uint8_t(q[size_t(n * K + k)]);
    }
  return h;
}

int8_t int8_code(int value, const ModuleTensors& m, const StoredTensor& t, int64_t n, int64_t k) {
  if (value < -128 || value > 127)
    m.fail_at(t, fmt::format("row {}, input feature {}: q - zero = {} does not fit int8 (dcuserve's int8 weights are "
                             "symmetric; this asymmetric 8-bit weight cannot be represented)",
                             n, k, value));
  return int8_t(value);
}

}  // namespace dcu
