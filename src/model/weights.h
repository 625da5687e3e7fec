#pragma once
// The Qwen3.5 text model's weights as tensors in one backend's memory. Names follow the checkpoint
// (research/qwen35-spec.md §2); shapes use H hidden, I intermediate, V vocab.

#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"
#include "model/sharding.h"

namespace dcu {

struct AttentionWeights {
  Tensor q_proj;  // [nh * 2d, H]  per head: d query rows, then d gate rows
  Tensor k_proj;  // [nkv * d, H]
  Tensor v_proj;  // [nkv * d, H]
  Tensor o_proj;  // [H, nh * d]
  Tensor q_norm;  // [d]  zero-centered
  Tensor k_norm;  // [d]  zero-centered
};

struct GdnWeights {
  Tensor in_proj_qkv;  // [C, H]  rows q | k | v
  Tensor in_proj_z;    // [Hv * dv, H]
  Tensor in_proj_a;    // [Hv, H]
  Tensor in_proj_b;    // [Hv, H]
  Tensor conv1d;       // [C, Kc]  (stored [C, 1, Kc])
  Tensor dt_bias;      // [Hv]
  Tensor A_log;        // [Hv]
  Tensor norm;         // [dv]  plain weight
  Tensor out_proj;     // [H, Hv * dv]
};

struct MlpWeights {
  Tensor gate_proj;  // [I, H]
  Tensor up_proj;    // [I, H]
  Tensor down_proj;  // [H, I]
};

struct LayerWeights {
  LayerType type = LayerType::LinearAttention;
  Tensor input_norm;  // [H] zero-centered
  Tensor post_norm;   // [H] zero-centered
  AttentionWeights attn;  // full-attention layers
  GdnWeights gdn;         // linear-attention layers
  MlpWeights mlp;
};

// Owns the memory behind the tensors (a mapped checkpoint, or backend buffers).
class WeightStorage {
 public:
  virtual ~WeightStorage() = default;
};

struct ModelWeights {
  Tensor embed_tokens;  // [V, H]
  Tensor final_norm;    // [H] zero-centered
  Tensor lm_head;       // [V, H] (the embedding when tied)
  std::vector<LayerWeights> layers;
  std::shared_ptr<WeightStorage> storage;
};

// Reports loading progress (bytes done, bytes total); called from the loading thread.
using LoadProgress = std::function<void(size_t done, size_t total)>;

// Loads a Hugging Face model folder onto `backend`. The CPU backend reads the mapped files in place
// (every page is read once while loading, so that `progress` and load times mean what they say);
// other backends get copies. Throws dcu::Error for missing tensors, wrong shapes or dtypes.
ModelWeights load_weights(const std::string& model_dir, const ModelConfig& config, Backend& backend,
                          const LoadProgress& progress = {});
// One tensor-parallel rank's share (`shard`): only its slices are read from the mapped files. On the
// CPU backend a contiguous row slice stays a view of the file; column and multi-segment slices
// (row-parallel projections, the q|k|v sections of in_proj_qkv and conv1d) are copied.
// `matrix_dtype` F16 converts BF16 weight matrices to F16 while loading (gfx906 has a fast f16 dot
// and no bf16 arithmetic); a matrix with a value beyond f16's range becomes F32 instead, with a warning.
ModelWeights load_weights(const std::string& model_dir, const ModelConfig& config, Backend& backend,
                          const ShardPlan& shard, const LoadProgress& progress = {},
                          std::optional<DType> matrix_dtype = std::nullopt);

// Random weights with the shapes of `config` (benchmarks and tests that need no files).
ModelWeights random_weights(const ModelConfig& config, Backend& backend, DType dtype, uint64_t seed);
// One rank's share of the same random weights: every element has the value it has at one rank.
ModelWeights random_weights(const ModelConfig& config, Backend& backend, DType dtype, uint64_t seed,
                            const ShardPlan& shard, const LoadProgress& progress = {});

}  // namespace dcu
