#include "model/quantized_loading.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "model/checkpoint_formats.h"
#include "model/quantize.h"
#include "model/sharding.h"

namespace dcu {
namespace {

// The column step a slice must keep to: the group, or 32 for one scale per row (the slice's own group
// is then its width, which the layouts want a multiple of 32).
int64_t column_unit(const QuantizedMatrix& m) {
  const int64_t group = m.quant.group_size == -1 ? m.K : m.quant.group_size;
  return group == m.K ? 32 : group;
}

bool keeps_groups(const QuantizedMatrix& m, int64_t begin, int64_t count) {
  const int64_t unit = column_unit(m);
  return begin % unit == 0 && count % unit == 0;
}

// Rows s.rows (all when empty) and columns [col_begin, col_begin + col_count) of `h`.
HostLinear cut(const HostLinear& h, const Slice& s) {
  const int64_t codes_per_byte = h.format == WeightFormat::Int4 ? 2 : 1;
  const bool per_row = h.group == h.cols;
  const int64_t cb = s.col_count < 0 ? 0 : s.col_begin, cc = s.col_count < 0 ? h.cols : s.col_count;
  DCU_CHECK(cb % 32 == 0 && cc % 32 == 0 && (per_row || (cb % h.group == 0 && cc % h.group == 0)));
  HostLinear out;
  out.format = h.format;
  out.cols = cc;
  out.group = per_row ? cc : h.group;
  out.k_order = h.k_order;  // rows only (load_quantized_matrix refuses a column cut of act-order)
  const int64_t groups = h.groups_per_row(), g0 = per_row ? 0 : cb / h.group, gc = per_row ? 1 : cc / h.group;
  const int64_t row_bytes = h.cols / codes_per_byte, b0 = cb / codes_per_byte, bc = cc / codes_per_byte;
  std::vector<std::pair<int64_t, int64_t>> ranges = s.rows;
  if (ranges.empty()) ranges = {{0, h.rows}};
  for (auto [begin, count] : ranges) {
    DCU_CHECK(begin >= 0 && begin + count <= h.rows);
    out.rows += count;
    for (int64_t n = begin; n < begin + count; ++n) {
      const auto* codes = h.codes.data() + n * row_bytes + b0;
      out.codes.insert(out.codes.end(), codes, codes + bc);
      const size_t g = size_t(n * groups + g0);
      out.scales.insert(out.scales.end(), h.scales.begin() + long(g), h.scales.begin() + long(g + size_t(gc)));
      if (!h.zeros.empty()) out.zeros.insert(out.zeros.end(), h.zeros.begin() + long(g), h.zeros.begin() + long(g + size_t(gc)));
    }
  }
  return out;
}

// An act-order matrix whose input features ranks split (an o_proj or out_proj, whose inputs come from
// the heads a rank holds): its groups gather input features of every rank, so the rank's columns, in
// stored order, are quantized again to int8 in groups of kQuantGroup (make_host_linear). A 4-bit
// checkpoint's values are on their group's 4-bit grid; int8 of the largest value of 128 columns is
// 8-16x finer, so this adds at most about a tenth of a 4-bit step (an 8-bit checkpoint's: up to half
// an int8 step, as much as its own rounding; docs/QUANTIZATION.md, "Act-order").
HostLinear requantized_slice(const HostLinear& whole, const Slice& s, const std::string& what) {
  const Linear view = linear_view(whole);
  std::vector<int32_t> column_of(size_t(whole.cols));  // input feature -> canonical column
  for (size_t c = 0; c < whole.k_order.size(); ++c) column_of[size_t(whole.k_order[c])] = int32_t(c);
  std::vector<std::pair<int64_t, int64_t>> ranges = s.rows;
  if (ranges.empty()) ranges = {{0, whole.rows}};
  int64_t rows = 0;
  for (auto [begin, count] : ranges) rows += count;
  std::vector<float> values(size_t(rows * s.col_count));  // [rows, s.col_count]
  float* out = values.data();
  for (auto [begin, count] : ranges)
    for (int64_t n = begin; n < begin + count; ++n)
      for (int64_t j = s.col_begin; j < s.col_begin + s.col_count; ++j) *out++ = view.at(n, column_of[size_t(j)]);
  HostLinear host = make_host_linear(WeightFormat::Int8, rows, s.col_count, what);
  quantize_rows(values.data(), DType::F32, 0, rows, host);
  return host;
}

}  // namespace

std::map<std::string, size_t> module_bytes(const Checkpoint& ckpt) {
  std::map<std::string, size_t> out;
  for (const auto& name : ckpt.names()) {
    const size_t dot = name.rfind('.');
    if (dot != std::string::npos) out[name.substr(0, dot)] += ckpt.find(name)->bytes;
  }
  return out;
}

void check_group_alignment(const std::vector<QuantizedMatrix>& matrices, const ModelConfig& config, int tp_size) {
  for (const QuantizedMatrix& m : matrices) {
    if (m.slice.col_count < 0 || keeps_groups(m, m.slice.col_begin, m.slice.col_count)) continue;
    // Ranks hold equal column ranges (sharding.h divides heads and intermediate rows evenly).
    std::vector<int> sizes;
    for (int n : valid_tensor_parallel_sizes(config, 64))
      if (std::all_of(matrices.begin(), matrices.end(), [&](const QuantizedMatrix& x) {
            return x.slice.col_count < 0 || n == 1 || (x.K % n == 0 && keeps_groups(x, 0, x.K / n));
          }))
        sizes.push_back(n);
    const int64_t unit = column_unit(m);
    const std::string cuts = unit == m.K || m.quant.group_size == -1
                                 ? std::string("is not a multiple of 32 columns (dcuserve's quantized layouts)")
                                 : fmt::format("cuts its quantization groups of {} (a group's scale would apply to "
                                               "inputs of two ranks)", unit);
    fail("{}: at --tensor-parallel-size {} each rank reads {} of its {} input columns (this rank [{}, {})), which {}; "
         "module {} is {}; tensor-parallel sizes that keep every quantized group whole: {}",
         m.tensor, tp_size, m.slice.col_count, m.K, m.slice.col_begin, m.slice.col_begin + m.slice.col_count, cuts,
         m.module, m.quant.describe(), fmt::join(sizes, ", "));
  }
}

HostLinear load_quantized_matrix(const Checkpoint& ckpt, const QuantizedMatrix& m, bool* requantized) {
  HostLinear whole = decode_quantized_linear(ckpt, m.module, m.quant, m.N, m.K);
  if (m.inputs_in_group_order) whole.k_order.clear();
  const bool requantize = !whole.k_order.empty() && m.slice.col_count >= 0;
  if (requantized) *requantized = requantize;
  if (requantize) return requantized_slice(whole, m.slice, m.tensor);
  if (m.slice.whole()) return whole;
  return cut(whole, m.slice);
}

}  // namespace dcu
