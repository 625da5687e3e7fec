#include "cache/cache_storage.h"

namespace dcu {
namespace {

struct LayerBytes {
  size_t kv_per_side, kv_scales_per_side, conv, recurrent;
};

LayerBytes layer_bytes(const ModelConfig& c, const CacheShape& s) {
  LayerBytes b;
  b.kv_per_side = size_t(s.num_blocks) * s.block_size * c.num_kv_heads * c.head_dim * dtype_size(s.kv_dtype);
  b.kv_scales_per_side = s.kv_dtype == DType::I8 ? size_t(s.num_blocks) * s.block_size * c.num_kv_heads * sizeof(float) : 0;
  b.conv = size_t(s.num_state_slots) * c.linear_conv_dim() * (c.linear_conv_kernel - 1) * sizeof(float);
  b.recurrent = size_t(s.num_state_slots) * c.linear_num_value_heads * c.linear_key_head_dim *
                c.linear_value_head_dim * sizeof(float);
  return b;
}

}  // namespace

size_t CacheStorage::bytes_needed(const ModelConfig& config, const CacheShape& shape) {
  LayerBytes b = layer_bytes(config, shape);
  return size_t(config.num_full_attention_layers() + shape.draft_layers) * 2 * (b.kv_per_side + b.kv_scales_per_side) +
         size_t(config.num_linear_attention_layers()) * (b.conv + b.recurrent);
}

CacheStorage::CacheStorage(Backend& backend, const ModelConfig& c, const CacheShape& shape)
    : backend_(backend), shape_(shape), kv_(size_t(c.num_layers + shape.draft_layers)), state_(size_t(c.num_layers)) {
  LayerBytes b = layer_bytes(c, shape);
  // Not zeroed: a KV slot is written before it is read, and a state slot is reset when its sequence
  // starts (context_before == 0). Fresh host memory thus stays untouched until used.
  auto alloc = [&](size_t bytes) {
    void* p = backend_.allocate(bytes);
    buffers_.push_back(p);
    return p;
  };
  try {  // the destructor does not run for a constructor that throws: release what was taken
    for (int i = 0; i < c.num_layers + shape.draft_layers; ++i) {
      if (i >= c.num_layers || c.layer_types[size_t(i)] == LayerType::FullAttention) {
        PagedKv& kv = kv_[size_t(i)];
        kv.block_size = shape.block_size;
        kv.k = Tensor(alloc(b.kv_per_side), shape.kv_dtype, {shape.num_blocks, shape.block_size, c.num_kv_heads, c.head_dim});
        kv.v = Tensor(alloc(b.kv_per_side), shape.kv_dtype, {shape.num_blocks, shape.block_size, c.num_kv_heads, c.head_dim});
        if (b.kv_scales_per_side > 0) {
          kv.k_scale = Tensor(alloc(b.kv_scales_per_side), DType::F32, {shape.num_blocks, shape.block_size, c.num_kv_heads});
          kv.v_scale = Tensor(alloc(b.kv_scales_per_side), DType::F32, {shape.num_blocks, shape.block_size, c.num_kv_heads});
        }
      } else {
        GdnState& st = state_[size_t(i)];
        st.conv = Tensor(alloc(b.conv), DType::F32, {shape.num_state_slots, c.linear_conv_dim(), c.linear_conv_kernel - 1});
        st.recurrent = Tensor(alloc(b.recurrent), DType::F32,
                              {shape.num_state_slots, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim});
      }
    }
  } catch (...) {
    for (void* p : buffers_) backend_.release(p);
    throw;
  }
}

CacheStorage::~CacheStorage() {
  for (void* p : buffers_) backend_.release(p);
}

}  // namespace dcu
