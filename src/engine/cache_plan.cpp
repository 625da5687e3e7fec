#include "engine/cache_plan.h"

#include <algorithm>

#include "core/error.h"

namespace dcu {

std::string format_bytes(double bytes) {
  if (bytes >= double(1ull << 30)) return fmt::format("{:.2f} GiB", bytes / double(1ull << 30));
  if (bytes >= double(1ull << 20)) return fmt::format("{:.1f} MiB", bytes / double(1ull << 20));
  return fmt::format("{:.0f} KiB", bytes / 1024.0);
}

CacheShape plan_cache(const ModelConfig& config, const CachePlanRequest& r) {
  const int per_seq = std::max(1, r.state_slots_per_sequence);
  CacheShape one_block{1, r.block_size, 0, r.kv_dtype, r.draft_layers};
  CacheShape one_slot{0, r.block_size, 1, r.kv_dtype, r.draft_layers};
  const size_t block_bytes = CacheStorage::bytes_needed(config, one_block);
  const size_t slot_bytes = CacheStorage::bytes_needed(config, one_slot) * size_t(per_seq);  // one sequence's
  const int blocks_per_seq = (r.max_model_len + r.block_size - 1) / r.block_size;
  const size_t one_sequence = slot_bytes + size_t(blocks_per_seq) * block_bytes;
  if (r.budget_bytes < one_sequence)
    fail("the cache budget of {} cannot hold one sequence of {} tokens (it needs {}: {} of GDN state and {} of KV "
         "cache); lower --max-model-len or give the cache more memory (--gpu-memory-utilization, "
         "--kv-cache-memory-bytes)",
         format_bytes(double(r.budget_bytes)), r.max_model_len, format_bytes(double(one_sequence)),
         format_bytes(double(slot_bytes)), format_bytes(double(blocks_per_seq) * double(block_bytes)));
  CacheShape shape;
  shape.block_size = r.block_size;
  shape.kv_dtype = r.kv_dtype;
  shape.draft_layers = r.draft_layers;
  const size_t seqs_by_budget = slot_bytes ? (r.budget_bytes / 2) / slot_bytes : size_t(r.max_num_seqs);
  const size_t seqs = std::clamp<size_t>(seqs_by_budget, 1, size_t(std::max(1, r.max_num_seqs)));
  shape.num_state_slots = int(seqs) * per_seq;
  const size_t left = r.budget_bytes - seqs * slot_bytes;
  shape.num_blocks = block_bytes ? int(std::min<size_t>(left / block_bytes, size_t(1) << 30)) : 1;
  // Pages beyond max_num_seqs full-length sequences could never be used.
  shape.num_blocks = std::min<int64_t>(shape.num_blocks, int64_t(blocks_per_seq) * std::max(1, r.max_num_seqs));
  shape.num_blocks = std::max(shape.num_blocks, blocks_per_seq);
  return shape;
}

}  // namespace dcu
