// The CPU backend's tiled paged attention (the reference every GPU attention kernel is tested against)
// against the textbook formula written out here: softmax(q . K^T * scale) . V over positions 0..p,
// with pages in shuffled order, GQA groups of 1-6, several sequences per step, chunked prefill
// (rows continuing a cached prefix), decode rows, and contexts longer than one key block; and the 8-bit
// cache (--kv-cache-dtype int8): written by kv_cache_write, each value within half a step of its row's
// scale, attended as codes times scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>

#include "backend/backend.h"

namespace dcu {
namespace {

struct Case {
  int nh, nkv, d, block_size;
  std::vector<std::pair<int, int>> seqs;  // (tokens cached before the step, rows in the step)
};

void expect_matches_formula(const Case& c, uint64_t seed, bool int8_cache = false) {
  auto cpu = make_cpu_backend();
  std::mt19937 rng{uint32_t(seed)};
  std::normal_distribution<float> normal(0.0f, 1.0f);

  BatchHost host;
  int blocks_needed = 0;
  for (auto [before, rows] : c.seqs) blocks_needed += (before + rows + c.block_size - 1) / c.block_size;
  std::vector<int32_t> free_blocks(static_cast<size_t>(blocks_needed));
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
  for (auto [before, rows] : c.seqs)
    host.max_blocks_per_seq = std::max(host.max_blocks_per_seq, (before + rows + c.block_size - 1) / c.block_size);
  host.seq_row_begin.push_back(0);
  size_t next_block = 0;
  for (auto [before, rows] : c.seqs) {
    const int total = before + rows;
    std::vector<int32_t> table(size_t(host.max_blocks_per_seq), -1);
    for (int b = 0; b * c.block_size < total; ++b) table[size_t(b)] = free_blocks[next_block++];
    host.block_tables.insert(host.block_tables.end(), table.begin(), table.end());
    for (int r = 0; r < rows; ++r) {
      const int pos = before + r;
      host.positions.push_back(pos);
      host.slot_mapping.push_back(table[size_t(pos / c.block_size)] * c.block_size + pos % c.block_size);
    }
    host.seq_row_begin.push_back(host.seq_row_begin.back() + rows);
    host.seq_context_before.push_back(before);
    host.state_slots.push_back(int(host.state_slots.size()));
  }
  BatchLayout layout{&host, host.seq_row_begin.data(), host.seq_context_before.data(), host.positions.data(),
                     host.slot_mapping.data(), host.block_tables.data(), host.state_slots.data()};

  const int T = host.num_tokens();
  const int64_t kv_row = int64_t(c.nkv) * c.d;
  std::vector<float> k(size_t(blocks_needed) * c.block_size * kv_row), v(k.size());
  std::vector<float> q(size_t(T) * c.nh * c.d), out(q.size(), NAN);
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);
  for (float& x : q) x = normal(rng);
  PagedKv cache{Tensor(k.data(), DType::F32, {blocks_needed, c.block_size, c.nkv, c.d}),
                Tensor(v.data(), DType::F32, {blocks_needed, c.block_size, c.nkv, c.d}), c.block_size};
  const int64_t slots = int64_t(blocks_needed) * c.block_size;
  std::vector<int8_t> k8(k.size()), v8(v.size());
  std::vector<float> k_scale(size_t(slots) * c.nkv), v_scale(k_scale.size());
  if (int8_cache) {  // every slot written through kv_cache_write; the formula then sees what it decodes to
    PagedKv q8{Tensor(k8.data(), DType::I8, {blocks_needed, c.block_size, c.nkv, c.d}),
               Tensor(v8.data(), DType::I8, {blocks_needed, c.block_size, c.nkv, c.d}), c.block_size,
               Tensor(k_scale.data(), DType::F32, {blocks_needed, c.block_size, c.nkv}),
               Tensor(v_scale.data(), DType::F32, {blocks_needed, c.block_size, c.nkv})};
    BatchHost fill;
    for (int64_t i = 0; i < slots; ++i) fill.slot_mapping.push_back(int32_t(i));
    BatchLayout fill_layout;
    fill_layout.host = &fill;
    fill_layout.slot_mapping = fill.slot_mapping.data();
    cpu->kv_cache_write(Tensor(k.data(), DType::F32, {slots, c.nkv, c.d}), Tensor(v.data(), DType::F32, {slots, c.nkv, c.d}),
                        fill_layout, q8);
    for (auto [codes, scales, values] : {std::tuple{&k8, &k_scale, &k}, std::tuple{&v8, &v_scale, &v}})
      for (size_t i = 0; i < values->size(); ++i) {
        const float decoded = float((*codes)[i]) * (*scales)[i / size_t(c.d)];
        ASSERT_LE(std::fabs(decoded - (*values)[i]), 0.5f * (*scales)[i / size_t(c.d)] * 1.0001f) << "element " << i;
        (*values)[i] = decoded;
      }
    cache = q8;
  }
  const float scale = 1.0f / std::sqrt(float(c.d));
  cpu->paged_attention(Tensor(q.data(), DType::F32, {T, c.nh, c.d}), cache, layout, scale,
                       Tensor(out.data(), DType::F32, {T, c.nh, c.d}));

  double worst = 0;
  for (int s = 0; s < host.num_seqs(); ++s)
    for (int t = host.seq_row_begin[s]; t < host.seq_row_begin[s + 1]; ++t)
      for (int h = 0; h < c.nh; ++h) {
        const int kvh = h / (c.nh / c.nkv), pos = host.positions[t];
        const float* qh = &q[(size_t(t) * c.nh + h) * c.d];
        std::vector<double> w(size_t(pos) + 1);
        double top = -INFINITY, sum = 0;
        auto at = [&](const std::vector<float>& m, int p) {
          const int64_t slot = int64_t(host.block_tables[size_t(s * host.max_blocks_per_seq + p / c.block_size)]) *
                                   c.block_size + p % c.block_size;
          return &m[size_t(slot * kv_row + kvh * c.d)];
        };
        for (int p = 0; p <= pos; ++p) {
          double dotp = 0;
          for (int e = 0; e < c.d; ++e) dotp += double(qh[e]) * at(k, p)[e];
          top = std::max(top, w[size_t(p)] = dotp * scale);
        }
        for (double& x : w) sum += x = std::exp(x - top);
        for (int e = 0; e < c.d; ++e) {
          double o = 0;
          for (int p = 0; p <= pos; ++p) o += w[size_t(p)] / sum * at(v, p)[e];
          worst = std::max(worst, std::fabs(o - out[(size_t(t) * c.nh + h) * c.d + e]));
        }
      }
  EXPECT_LT(worst, 2e-5) << "nh " << c.nh << " nkv " << c.nkv << " d " << c.d;
}

TEST(CpuAttention, MatchesTheFormula) {
  // Prefill from nothing, a chunk continuing a cached prefix, decode rows, one long context.
  expect_matches_formula({4, 2, 64, 16, {{0, 37}, {70, 21}, {300, 1}, {5, 1}}}, 1);
  expect_matches_formula({6, 1, 32, 8, {{0, 130}, {129, 1}}}, 2);          // group of 6, tiles and blocks unaligned
  expect_matches_formula({2, 2, 128, 16, {{1000, 17}, {0, 1}}}, 3);        // group of 1
  expect_matches_formula({24, 4, 256, 16, {{4090, 3}}}, 4);                // the 27B's head layout
}

TEST(CpuAttention, Int8CacheMatchesTheFormulaOnItsDecodedValues) {
  expect_matches_formula({4, 2, 64, 16, {{0, 37}, {70, 21}, {300, 1}, {5, 1}}}, 5, true);
  expect_matches_formula({24, 4, 256, 16, {{4090, 3}}}, 6, true);
}

}  // namespace
}  // namespace dcu
