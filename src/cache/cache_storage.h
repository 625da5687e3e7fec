#pragma once
// The memory of the per-sequence caches: a paged KV cache for each full-attention layer and a pool of
// GDN state slots (conv window + recurrent state) for each linear-attention layer. Which sequence owns
// which block or slot is decided by the allocators in this folder, not here.

#include <vector>

#include "backend/backend.h"
#include "model/config.h"

namespace dcu {

struct CacheShape {
  int num_blocks = 0;      // KV pages per attention layer
  int block_size = 16;     // tokens per page
  int num_state_slots = 0; // GDN states held at once (a speculating sequence holds 1 + k)
  DType kv_dtype = DType::F32;  // F32, F16, BF16, or I8 (codes plus per-token, per-head f32 scales)
  int draft_layers = 0;    // paged KV caches for the MTP block's attention layers, after the model's
};

class CacheStorage {
 public:
  CacheStorage(Backend& backend, const ModelConfig& config, const CacheShape& shape);
  ~CacheStorage();
  CacheStorage(const CacheStorage&) = delete;
  CacheStorage& operator=(const CacheStorage&) = delete;

  const CacheShape& shape() const { return shape_; }
  PagedKv& kv(int layer) { return kv_[size_t(layer)]; }
  // The KV cache of MTP layer i (same pages and block size as the model's).
  PagedKv& draft_kv(int i) { return kv_[kv_.size() - size_t(shape_.draft_layers) + size_t(i)]; }
  GdnState& state(int layer) { return state_[size_t(layer)]; }

  // Bytes for `shape` without allocating (memory planning).
  static size_t bytes_needed(const ModelConfig& config, const CacheShape& shape);

 private:
  Backend& backend_;
  CacheShape shape_;
  std::vector<PagedKv> kv_;         // indexed by model layer (empty for GDN layers), then the MTP layers
  std::vector<GdnState> state_;     // indexed by model layer; empty for attention layers
  std::vector<void*> buffers_;
};

}  // namespace dcu
