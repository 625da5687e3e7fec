#pragma once
// The Qwen3.5 text model's weights as tensors in one backend's memory. Names follow the checkpoint
// (research/qwen35-spec.md §2); shapes use H hidden, I intermediate, V vocab. The matrices the
// matmuls read are Linear (dense or quantized); tables, norms and the conv taps are plain tensors.

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
  Linear q_proj;  // [nh * 2d, H]  per head: d query rows, then d gate rows
  Linear k_proj;  // [nkv * d, H]
  Linear v_proj;  // [nkv * d, H]
  Linear o_proj;  // [H, nh * d]
  Tensor q_norm;  // [d]  zero-centered
  Tensor k_norm;  // [d]  zero-centered
};

struct GdnWeights {
  Linear in_proj_qkv;  // [C, H]  rows q | k | v
  Linear in_proj_z;    // [Hv * dv, H]
  Linear in_proj_a;    // [Hv, H]
  Linear in_proj_b;    // [Hv, H]
  Tensor conv1d;       // [C, Kc]  (stored [C, 1, Kc])
  Tensor dt_bias;      // [Hv]
  Tensor A_log;        // [Hv]
  Tensor norm;         // [dv]  plain weight
  Linear out_proj;     // [H, Hv * dv]
};

struct MlpWeights {
  Linear gate_proj;  // [I, H]
  Linear up_proj;    // [I, H]
  Linear down_proj;  // [H, I]
};

struct LayerWeights {
  LayerType type = LayerType::LinearAttention;
  Tensor input_norm;  // [H] zero-centered
  Tensor post_norm;   // [H] zero-centered
  AttentionWeights attn;  // full-attention layers
  GdnWeights gdn;         // linear-attention layers
  MlpWeights mlp;
};

// The multi-token-prediction block (mtp.*, research/qwen35-spec.md section 7): drafts the token after
// next from the main model's hidden state. fc [H, 2H] is kept as its two halves, so that its input,
// concat(embedding, hidden), is never built.
struct MtpWeights {
  Tensor pre_fc_norm_embedding;  // [H] zero-centered
  Tensor pre_fc_norm_hidden;     // [H] zero-centered
  Linear fc_embedding;           // [H, H] fc's columns 0..H-1, which read the normed embedding
  Linear fc_hidden;              // [H, H] its columns H..2H-1, which read the normed hidden state
  LayerWeights layer;            // one full-attention decoder block
  Tensor norm;                   // [H] zero-centered
};

// Owns the memory behind the tensors (a mapped checkpoint, or backend buffers).
class WeightStorage {
 public:
  virtual ~WeightStorage() = default;
};

struct ModelWeights {
  Tensor embed_tokens;  // [V, H]
  Tensor final_norm;    // [H] zero-centered
  Linear lm_head;       // [V, H] (the embedding when tied and not quantized)
  std::vector<LayerWeights> layers;
  std::optional<MtpWeights> mtp;  // when asked for (WeightOptions::mtp)
  std::shared_ptr<WeightStorage> storage;
};

// Reports loading progress (bytes done, bytes total); called from the loading thread.
using LoadProgress = std::function<void(size_t done, size_t total)>;

// Whether any matrix reads its inputs in another order (act-order GPTQ, Linear::k_order).
bool has_act_order(const ModelWeights& weights);

// How the loader stores the matrices.
struct WeightOptions {
  // F16 converts BF16 weight matrices to F16 while loading (gfx906 has a fast f16 dot and no bf16
  // arithmetic); a matrix with a value beyond f16's range becomes F32 instead, with a warning.
  std::optional<DType> matrix_dtype;
  // Int8 / Int4: the 16-bit matrices quantized while loading (model/quantize.h), lm_head included
  // (a tied one gets its own quantized copy of the embedding, which stays 16-bit for the lookup). On a
  // quantized checkpoint these are the matrices it leaves in 16 bits; its quantized ones load as shipped.
  WeightFormat quantize = WeightFormat::Dense;
  // Also the MTP block (speculative decoding); the model must have one (mtp_num_hidden_layers). It is
  // stored and sharded like the layers (fc replicated on every rank), read dense from the checkpoint.
  bool mtp = false;
};

// Loads a Hugging Face model folder onto `backend`. The CPU backend reads the mapped files in place
// (every page is read once while loading, so that `progress` and load times mean what they say);
// other backends get copies. A checkpoint whose config.json has a quantization_config has the
// matrices it stores quantized decoded to the canonical layouts (model/quantized_loading.h). Throws
// dcu::Error for missing tensors, wrong shapes or dtypes, and quantization tensors that do not fit the
// quantization_config.
ModelWeights load_weights(const std::string& model_dir, const ModelConfig& config, Backend& backend,
                          const LoadProgress& progress = {});
// One tensor-parallel rank's share (`shard`): only its slices are read from the mapped files. On the
// CPU backend a contiguous row slice stays a view of the file; column and multi-segment slices
// (row-parallel projections, the q|k|v sections of in_proj_qkv and conv1d) are copied.
ModelWeights load_weights(const std::string& model_dir, const ModelConfig& config, Backend& backend,
                          const ShardPlan& shard, const LoadProgress& progress = {},
                          const WeightOptions& options = {});

// Random weights with the shapes of `config` (benchmarks and tests that need no files).
ModelWeights random_weights(const ModelConfig& config, Backend& backend, DType dtype, uint64_t seed);
// One rank's share of the same random weights: every element has the value it has at one rank
// (before quantization, which each rank applies to its slice).
ModelWeights random_weights(const ModelConfig& config, Backend& backend, DType dtype, uint64_t seed,
                            const ShardPlan& shard, const LoadProgress& progress = {},
                            WeightFormat quantize = WeightFormat::Dense, bool mtp = false);

}  // namespace dcu
