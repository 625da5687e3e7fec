#pragma once
// Speculative drafts from the model's MTP block (research/qwen35-spec.md section 7.2). After a target
// step, every row that step added to a sequence's caches goes through the block with the token after it
// and its hidden state (filling the block's own KV cache); the last row's logits give the first draft,
// and each further draft feeds the block's output back with the drafted token, one position on. Drafts
// are greedy; the target's verification makes the output exact whatever they are.

#include <span>
#include <vector>

#include "engine/model_instance.h"
#include "engine/sequence.h"
#include "sampling/batch_sampler.h"

namespace dcu {

struct DraftRequest {
  Sequence* seq = nullptr;
  int first_position = 0;  // the first position the target step computed for seq
  int first_row = 0;       // that position's row in the target step's batch
  int num_drafts = 0;      // drafts wanted after seq->tokens.back(); 0 feeds the block's cache only
};

class Drafter {
 public:
  Drafter(ModelInstance& model, BatchSampler& sampler) : model_(model), sampler_(sampler) {}

  // Positions first_position .. seq->computed - 1 of each request whose next token is known (all of
  // them when drafting: seq->computed < seq->tokens.size(); at least one) go through the block;
  // seq->drafts receives num_drafts tokens. The pages of seq->blocks must cover seq->computed +
  // num_drafts - 1 tokens. Throws what the model throws.
  void propose(std::span<const DraftRequest> requests);

 private:
  ModelInstance& model_;
  BatchSampler& sampler_;
  std::vector<SequenceStep> steps_;
  std::vector<int32_t> source_rows_;
};

}  // namespace dcu
