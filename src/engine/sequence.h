#pragma once
// One generation in flight: its tokens, how far the caches have computed them, the cache handles it
// holds, and its sampler. Owned by the engine thread; nothing else touches it.

#include <chrono>
#include <optional>
#include <vector>

#include "engine/engine_api.h"
#include "sampling/batch_sampler.h"
#include "sampling/sampler.h"

namespace dcu {

struct Sequence {
  Sequence(RequestId id, GenerationRequest request, EventCallback on_event, uint64_t default_seed)
      : id(id), tokens(std::move(request.prompt)), prompt_len(int(tokens.size())), params(request.sampling),
        sampler(params, tokens, default_seed), on_event(std::move(on_event)) {}

  RequestId id;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int prompt_len;
  SamplingParams params;
  Sampler sampler;
  EventCallback on_event;

  int computed = 0;                 // tokens whose KV / GDN state are in the caches
  std::vector<int32_t> blocks;      // KV pages, in order
  int state_slot = -1;              // GDN state slot, -1 when none is held
  // Speculative decoding (k tokens): the k other slots a verify step writes its rows' states into, the
  // drafts of the tokens after tokens.back() that the next step verifies, and that step's inputs.
  std::vector<int32_t> spare_slots;
  std::vector<int32_t> drafts;
  std::vector<int32_t> step_tokens, step_write_slots;
  // Prompt logprobs are collected while the prompt is computed and sent with the first token.
  std::vector<std::optional<SampledToken>> prompt_logprobs;
  bool prompt_logprobs_sent = false;

  // Structured output: a next token whose mask overran its budget is chosen from this row once the
  // mask is done; until then the sequence sits out its steps (the scheduler skips it).
  std::optional<LateChoice> late_choice;

  int generated() const { return int(tokens.size()) - prompt_len; }
  int uncomputed() const { return int(tokens.size()) - computed; }
  bool wants_prompt_logprobs() const { return params.prompt_logprobs >= 0 && !prompt_logprobs_sent; }
};

}  // namespace dcu
