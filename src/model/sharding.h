#pragma once
// How tensor parallelism splits the model (as vLLM does): attention and Gated DeltaNet by heads, the
// MLP by intermediate rows, embedding and lm_head by vocabulary rows. Each rank's share is described
// here; the weight loader slices by it and the runner sizes its work by it.

#include <cstdint>

#include "model/config.h"

namespace dcu {

struct ShardPlan {
  int rank = 0;
  int size = 1;
  // Full attention. When size > num_kv_heads each rank holds the one kv head its q heads use.
  int q_head_begin = 0, num_heads = 0;
  int kv_head_begin = 0, num_kv_heads = 0;
  // Gated DeltaNet.
  int key_head_begin = 0, num_key_heads = 0;
  int value_head_begin = 0, num_value_heads = 0;
  // MLP.
  int64_t intermediate_begin = 0, intermediate_size = 0;
  // Vocabulary rows [vocab_begin, vocab_begin + vocab_rows); every rank reserves vocab_stride
  // (= ceil(V / size)) logit columns so the gathered blocks have one size.
  int64_t vocab_begin = 0, vocab_rows = 0, vocab_stride = 0;

  bool sharded() const { return size > 1; }
};

// Throws dcu::Error naming each dimension that `size` does not divide, and the sizes that would work.
void check_tensor_parallel(const ModelConfig& config, int size);

// Rank `rank` of `size` (checked with check_tensor_parallel).
ShardPlan shard_plan(const ModelConfig& config, int rank, int size);

// The configuration one rank computes with: its head counts and intermediate size, and vocab_size =
// vocab_stride. Size the rank's caches and scratch with it.
ModelConfig local_config(const ModelConfig& config, const ShardPlan& plan);

// Tensor-parallel sizes up to `max_size` that divide `config`, ascending.
std::vector<int> valid_tensor_parallel_sizes(const ModelConfig& config, int max_size);

}  // namespace dcu
