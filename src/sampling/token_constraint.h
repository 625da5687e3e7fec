#pragma once
// A per-sequence constraint on which tokens may be sampled next (structured output). The request
// side creates one per sequence; the sampler masks the logits with it before choosing and calls
// accept() with every token it chose. Only the engine thread calls it once the sequence is queued.

#include <cstdint>
#include <span>

namespace dcu {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // False while the next token is free (a reasoning model still thinking): no mask is needed.
  virtual bool active() const = 0;
  // Sets bit id%32 of allowed[id/32] for each token that may come next, clears the others.
  // `allowed` has ceil(V/32) words for the logits row of V tokens.
  virtual void fill_mask(std::span<uint32_t> allowed) = 0;
  // Records the token chosen next (also while not active).
  virtual void accept(int32_t token) = 0;
  // Takes back the last `tokens` accepted tokens (rejected speculative drafts).
  virtual void rollback(int tokens) = 0;
};

}  // namespace dcu
