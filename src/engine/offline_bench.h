#pragma once
// Offline model speed: prefill and decode tokens/s of the model runner alone (no scheduler, no
// HTTP), beside the memory-bandwidth bound of each decode figure.

#include <string>
#include <vector>

#include "backend/backend.h"
#include "comm/communicator.h"
#include "model/config.h"
#include "model/weights.h"

namespace dcu {

struct BenchOptions {
  std::vector<int> prompt_lens = {512};
  std::vector<int> batches = {1, 8, 32, 64};
  std::vector<int> contexts = {128};  // tokens already cached before each decode step
  int decode_steps = 8;
  int repeats = 3;                    // best of
  bool enforce_eager = false;         // no CUDA/HIP graphs for decode steps
  int speculative_tokens = 0;         // k > 0: also time speculative rounds (the weights carry an MTP block)
  DType kv_dtype = DType::F32;        // the KV cache's (engine/device.h kv_cache_dtype)
};

// Speculative decoding at one batch and context, with k drafts per sequence. Random weights draw the
// drafts but do not decide how many are accepted, so rounds are timed at each forced acceptance length.
struct SpeculativeResult {
  int batch = 0, context = 0, k = 0;
  double one_row_s = 0;        // a decode step of one token per sequence
  double verify_s = 0;         // a verify step: 1 + k rows per sequence, logits for each
  double draft_s = 0;          // the first draft step: one row per sequence, from the target's hidden rows
  double chained_draft_s = 0;  // each further draft step
  // [a] for a forced acceptance of a = 0..k drafts: batch * (a + 1) tokens per round of a verify step, a
  // first draft step over a + 1 rows per sequence and k - 1 chained ones, timed as it runs.
  std::vector<double> tokens_per_s = {};
};

struct DecodeResult {
  int batch, context;
  double tokens_per_s;
  double bytes_per_step;     // weights + GDN state + KV read per step
  double bound_tokens_per_s; // batch / (bytes_per_step / copy bandwidth)
  // Tensor parallelism (0 without): rank 0's collectives per step and the seconds spent in them,
  // each timed on its own; and what they add to a step: an op-by-op step's time minus that of the
  // same step with the collectives left out.
  int collectives_per_step = 0;
  double collective_s_per_step = 0;
  double collective_cost_s_per_step = 0;
};

struct PrefillResult {
  int prompt_len;
  double tokens_per_s;
  double flops_per_token;            // the weight matmuls'
  double attention_flops_per_token;  // causal softmax attention's (q.k and p.v), averaged over the prompt
};

struct BenchReport {
  double copy_bandwidth;  // bytes/s, read + write, measured on the backend
  std::vector<PrefillResult> prefill;
  std::vector<DecodeResult> decode;
  std::vector<SpeculativeResult> speculative;
};

BenchReport run_offline_bench(Backend& backend, const ModelConfig& config, ModelWeights weights,
                              const BenchOptions& options);

// One tensor-parallel rank of the benchmarked model: its backend, its share of the weights and its
// communicator (null for a single rank).
struct BenchRank {
  Backend* backend = nullptr;
  ModelWeights weights;
  Communicator* comm = nullptr;
};
// The same figures with every rank stepping on its own thread; bytes and bounds are per rank.
BenchReport run_offline_bench(std::vector<BenchRank> ranks, const ModelConfig& config, const BenchOptions& options);

// Bytes of all weight matrices a decode step reads (embedding rows excluded unless tied to lm_head).
double weight_bytes_per_step(const ModelConfig& config, const ModelWeights& weights);

}  // namespace dcu
