#pragma once
// Decides what each model step computes. There are no prefill or decode phases: every running
// sequence's computed count catches up with its token count under a per-step token budget (chunked
// prefill falls out of that). Running sequences go first, in arrival order; waiting ones are admitted
// while the budget, the sequence limit, GDN state slots and enough KV pages allow. When KV pages run
// out, the most recently admitted sequence is preempted: its caches are freed and it is recomputed
// later from its tokens. A decoding sequence with drafts verifies as many of them as the budget and
// the logit rows allow, in the same step.

#include <deque>
#include <vector>

#include "cache/block_allocator.h"
#include "engine/sequence.h"

namespace dcu {

struct SchedulerLimits {
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  int block_size = 16;
  int max_logit_rows = 256;  // all-rows logits (prompt logprobs, verified drafts) per step
  int state_slots_per_seq = 1;  // 1 + k with k speculative tokens
};

struct ScheduledWork {
  Sequence* seq;
  int num_tokens;     // tokens computed this step, from seq->computed, drafts included
  bool all_logits;    // logits for every row (prompt logprobs, verified drafts), else the last row only
  int num_drafts = 0; // of seq->drafts, verified after its last token
};

class Scheduler {
 public:
  Scheduler(SchedulerLimits limits, IdPool& blocks, IdPool& slots);

  void add(Sequence* seq);     // joins the waiting queue
  void remove(Sequence* seq);  // finished or aborted: leaves the queues, returns its pages and slot
  std::vector<ScheduledWork> schedule();
  // KV pages for `tokens` tokens of a running sequence (drafts about to be written), without
  // preempting anyone; false when the pool has too few.
  bool reserve(Sequence* seq, int tokens) { return grow_blocks(seq, tokens); }

  int num_running() const { return int(running_.size()); }
  int num_waiting() const { return int(waiting_.size()); }
  uint64_t preemptions() const { return preemptions_; }

 private:
  int blocks_for(int tokens) const { return (tokens + limits_.block_size - 1) / limits_.block_size; }
  bool grow_blocks(Sequence* seq, int tokens);
  void preempt(Sequence* seq);
  void release(Sequence* seq);

  SchedulerLimits limits_;
  IdPool& blocks_;
  IdPool& slots_;
  std::vector<Sequence*> running_;  // admission order
  std::deque<Sequence*> waiting_;
  uint64_t preemptions_ = 0;
};

}  // namespace dcu
