#include "model/sharding.h"

#include <string>
#include <vector>

#include "core/error.h"

namespace dcu {
namespace {

// What `size` fails to divide, as "num_attention_heads 4, ..."; empty when it divides everything.
std::string indivisible(const ModelConfig& c, int size) {
  std::string out;
  auto need = [&](bool ok, const char* field, int64_t value) {
    if (!ok) out += (out.empty() ? "" : ", ") + std::string(field) + " " + std::to_string(value);
  };
  if (c.num_full_attention_layers() > 0) {
    need(c.num_heads % size == 0, "num_attention_heads", c.num_heads);
    need(c.num_kv_heads % size == 0 || size % c.num_kv_heads == 0, "num_key_value_heads", c.num_kv_heads);
  }
  if (c.num_linear_attention_layers() > 0) {
    need(c.linear_num_key_heads % size == 0, "linear_num_key_heads", c.linear_num_key_heads);
    need(c.linear_num_value_heads % size == 0, "linear_num_value_heads", c.linear_num_value_heads);
  }
  need(c.intermediate_size % size == 0, "intermediate_size", c.intermediate_size);
  return out;
}

}  // namespace

std::vector<int> valid_tensor_parallel_sizes(const ModelConfig& config, int max_size) {
  std::vector<int> out;
  for (int n = 1; n <= max_size; ++n)
    if (indivisible(config, n).empty()) out.push_back(n);
  return out;
}

void check_tensor_parallel(const ModelConfig& c, int size) {
  if (size < 1) fail("--tensor-parallel-size must be at least 1 (got {})", size);
  const std::string bad = indivisible(c, size);
  if (bad.empty()) return;
  std::string ok;
  for (int n : valid_tensor_parallel_sizes(c, 16)) ok += (ok.empty() ? "" : ", ") + std::to_string(n);
  fail("--tensor-parallel-size {} does not divide this model ({}; KV heads may also be replicated when the size is a "
       "multiple of them); sizes that work: {}",
       size, bad, ok);
}

ShardPlan shard_plan(const ModelConfig& c, int rank, int size) {
  check_tensor_parallel(c, size);
  DCU_CHECK(rank >= 0 && rank < size);
  ShardPlan p;
  p.rank = rank;
  p.size = size;
  p.num_heads = c.num_heads / size;
  p.q_head_begin = rank * p.num_heads;
  if (c.num_kv_heads >= size) {
    p.num_kv_heads = c.num_kv_heads / size;
    p.kv_head_begin = rank * p.num_kv_heads;
  } else {  // replicated: this rank's q heads all read one kv head
    p.num_kv_heads = c.num_kv_heads > 0 ? 1 : 0;
    p.kv_head_begin = rank * c.num_kv_heads / size;
  }
  p.num_key_heads = c.linear_num_key_heads / size;
  p.key_head_begin = rank * p.num_key_heads;
  p.num_value_heads = c.linear_num_value_heads / size;
  p.value_head_begin = rank * p.num_value_heads;
  p.intermediate_size = c.intermediate_size / size;
  p.intermediate_begin = rank * p.intermediate_size;
  p.vocab_stride = (c.vocab_size + size - 1) / size;
  p.vocab_begin = std::min<int64_t>(c.vocab_size, rank * p.vocab_stride);
  p.vocab_rows = std::min<int64_t>(c.vocab_size, p.vocab_begin + p.vocab_stride) - p.vocab_begin;
  return p;
}

ModelConfig local_config(const ModelConfig& config, const ShardPlan& p) {
  ModelConfig c = config;
  c.num_heads = p.num_heads;
  c.num_kv_heads = p.num_kv_heads;
  c.linear_num_key_heads = p.num_key_heads;
  c.linear_num_value_heads = p.num_value_heads;
  c.intermediate_size = p.intermediate_size;
  c.vocab_size = p.vocab_stride;
  return c;
}

}  // namespace dcu
