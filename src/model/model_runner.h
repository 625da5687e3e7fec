#pragma once
// Runs one model step over a batch of sequences, each with any number of new tokens (prompt chunks
// and single decode tokens mixed), on one backend. The caller (the engine, or a test) owns the cache
// bookkeeping: it passes each sequence's KV block table and GDN state slot.

#include <functional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "backend/backend.h"
#include "cache/cache_storage.h"
#include "comm/communicator.h"
#include "model/config.h"
#include "model/sharding.h"
#include "model/weights.h"

namespace dcu {

struct SequenceStep {
  std::span<const int32_t> tokens;        // new tokens, >= 1
  int context_before = 0;                 // tokens of this sequence already in the caches
  std::span<const int32_t> block_table;   // KV pages covering context_before + tokens.size() tokens
  int state_slot = 0;                     // GDN state slot the step starts from
  bool all_logits = false;                // logits for every new token, else for the last only
  // Empty: the state after the last token goes back into state_slot. Else one slot per new token (-1:
  // none) that receives the state after that token (speculative verify steps: BatchHost).
  std::span<const int32_t> state_write_slots = {};
};

// Where a draft row's hidden state comes from (ModelRunner::draft).
enum class DraftInput {
  TargetHidden,  // the last step()'s rows after the final norm
  DraftHidden,   // the last draft()'s rows after mtp.norm (chained drafts)
};

// Called with named intermediate tensors ("layer3.out", "final_norm", ...) in backend memory, for
// dumping and comparing against a reference. Debugging only.
using TensorObserver = std::function<void(const std::string& name, const Tensor& t)>;

class ModelRunner {
 public:
  // max_logit_rows bounds the logits of one step (0: max_tokens_per_step); a vocabulary-wide row is
  // large, so engines keep it near the number of sequences.
  //
  // Tensor parallelism: with a communicator of size N, this runner is rank comm->rank(): `weights`
  // are that rank's share (load_weights with its ShardPlan), `cache` is sized with local_config(), and
  // every rank's runner must step the same sequences at the same time (each on its own thread). Two
  // all-reduces per layer, one for the embedding, one all-gather of the logits. `config` is the
  // whole model's.
  ModelRunner(Backend& backend, const ModelConfig& config, ModelWeights weights, CacheStorage& cache,
              int max_tokens_per_step, int max_logit_rows = 0, Communicator* comm = nullptr);
  ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  // Backend memory the runner's scratch tensors take (memory planning before construction).
  // `tensor_parallel_size` > 1: one rank's scratch (the same on every rank).
  static size_t scratch_bytes(Backend& backend, const ModelConfig& config, int max_tokens_per_step,
                              int max_logit_rows, int tensor_parallel_size = 1, bool drafting = false);

  // Logits [R, V] in backend memory, R = sum over sequences of (all_logits ? tokens : 1), in order.
  // Under tensor parallelism only rank 0 returns them; other ranks return [0, V]. The tensor is the
  // runner's own: valid until the next step, and callers may modify it (sampling).
  Tensor step(std::span<const SequenceStep> seqs);
  // step(), then the logits downloaded into the runner's host buffer (tests, debugging).
  std::vector<float>& step_to_host(std::span<const SequenceStep> seqs);

  // Speculative drafts, with weights that carry an MTP block. Row i of a sequence takes seqs' token i
  // (the token after position context_before + i), position context_before + i, and the hidden state in
  // row source_rows[i] (over all the sequences' rows) of `from`; it writes the block's KV cache at that
  // position. Returns the logits [S, V] of each sequence's last row (rank 0 under tensor parallelism,
  // as step()), valid until the next step or draft. State slots and all_logits are not read.
  Tensor draft(std::span<const SequenceStep> seqs, std::span<const int32_t> source_rows, DraftInput from);
  bool drafts() const { return weights_.mtp.has_value(); }

  void set_observer(TensorObserver observer) { observer_ = std::move(observer); }
  // Decode steps of up to kGraphMaxSeqs sequences run as CUDA/HIP graphs (recorded the second time a
  // shape is seen, replayed after) on backends that have them; under tensor parallelism only when the
  // communicator's collectives can be recorded too (NCCL/RCCL in one process). Off: every step
  // launches its ops one by one.
  static constexpr int kGraphMaxSeqs = 32;
  void set_use_graphs(bool use) { use_graphs_ = use; }
  // Whether decode steps run as graphs: allowed, and the backend and communicator can record them.
  bool records_graphs() const;
  const ModelConfig& config() const { return config_; }
  int max_tokens_per_step() const { return max_tokens_; }
  int max_logit_rows() const { return max_logit_rows_; }
  Backend& backend() { return backend_; }
  const ShardPlan& shard() const { return shard_; }

 private:
  struct Activations;
  bool graph_step(std::span<const SequenceStep> seqs) const;
  Tensor step_logits(int R) const;
  void build_batch(std::span<const SequenceStep> seqs, bool graph);
  Tensor forward(int T, int R);  // the layers and the logits of the built batch
  Tensor draft_forward(int T, int R, DraftInput from);
  Tensor logits_of_selected(int R);
  void attention_layer(const LayerWeights& L, PagedKv& kv, int T);
  void gdn_layer(const LayerWeights& L, GdnState& state, int T);
  void mlp(const LayerWeights& L, int T);
  void project_input(const Tensor& norm_w, int T, std::span<const Linear> ws, std::span<const Tensor> ys);
  void project_output(const Tensor& x, const Linear& w, int T);
  void observe(const std::string& name, const Tensor& t) const;
  void all_reduce(Tensor t) {
    if (comm_) comm_->all_reduce_sum(t);
  }
  void embed_sharded(int T);
  Tensor gather_logits(int R);

  Backend& backend_;
  ModelConfig config_;
  Communicator* comm_;   // null without tensor parallelism
  ShardPlan shard_;
  ModelConfig local_;    // this rank's heads and intermediate size (config_ without parallelism)
  ModelWeights weights_;
  CacheStorage& cache_;
  int max_tokens_;
  int max_logit_rows_;
  std::unique_ptr<Activations> act_;
  BatchHost batch_host_;
  BatchLayout batch_;
  std::vector<int32_t> logit_rows_;
  std::vector<float> logits_host_;
  TensorObserver observer_;
  bool use_graphs_ = true;
  std::unordered_set<uint64_t> graph_shapes_seen_;
  bool fold_norms_ = false;  // this step's norms run inside the matmuls (forward())
  bool act_order_ = false;   // some matrix gathers its inputs (has_act_order): norms never fold
};

}  // namespace dcu
