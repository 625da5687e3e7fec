#include "engine/scheduler.h"

#include <algorithm>

#include "core/error.h"

namespace dcu {

Scheduler::Scheduler(SchedulerLimits limits, IdPool& blocks, IdPool& slots)
    : limits_(limits), blocks_(blocks), slots_(slots) {}

void Scheduler::add(Sequence* seq) { waiting_.push_back(seq); }

void Scheduler::release(Sequence* seq) {
  blocks_.give_back(seq->blocks);
  seq->blocks.clear();
  if (seq->state_slot >= 0) slots_.give_back(seq->state_slot);
  seq->state_slot = -1;
  slots_.give_back(seq->spare_slots);
  seq->spare_slots.clear();
  seq->drafts.clear();  // their draft-cache rows go with the pages
}

void Scheduler::remove(Sequence* seq) {
  release(seq);
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), seq), waiting_.end());
}

void Scheduler::preempt(Sequence* seq) {
  release(seq);
  seq->computed = 0;  // recompute prompt and generated tokens when readmitted
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  waiting_.push_front(seq);
  ++preemptions_;
}

bool Scheduler::grow_blocks(Sequence* seq, int tokens) {
  const int missing = blocks_for(tokens) - int(seq->blocks.size());
  if (missing <= 0) return true;
  auto ids = blocks_.take(missing);
  if (!ids) return false;
  seq->blocks.insert(seq->blocks.end(), ids->begin(), ids->end());
  return true;
}

std::vector<ScheduledWork> Scheduler::schedule() {
  std::vector<ScheduledWork> work;
  int budget = limits_.max_num_batched_tokens;
  int logit_rows = 0;
  bool preempted = false;

  // How many tokens of `seq` fit in this step; prompt-logprob chunks also spend logit rows.
  auto chunk_of = [&](Sequence* seq) {
    int n = std::min(seq->uncomputed(), budget);
    if (seq->wants_prompt_logprobs()) n = std::min(n, limits_.max_logit_rows - logit_rows - 1);
    return n;
  };
  // The drafts a decoding sequence verifies now: each takes a token of the budget and a logit row.
  auto drafts_of = [&](Sequence* seq) {
    if (seq->uncomputed() != 1) return 0;
    return std::max(0, std::min({int(seq->drafts.size()), budget - 1, limits_.max_logit_rows - logit_rows - 1}));
  };

  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* seq = running_[i];
    if (seq->late_choice) {  // its next token is not chosen yet
      ++i;
      continue;
    }
    const int drafts = drafts_of(seq);
    const int n = chunk_of(seq) + drafts;
    if (n <= 0) break;
    bool fits = grow_blocks(seq, seq->computed + n);
    while (!fits && running_.back() != seq) {
      preempt(running_.back());
      preempted = true;
      fits = grow_blocks(seq, seq->computed + n);
    }
    if (!fits) {  // nothing left to take pages from: wait for a later step
      preempt(seq);
      preempted = true;
      break;
    }
    const bool all = seq->wants_prompt_logprobs() || drafts > 0;
    work.push_back({seq, n, all, drafts});
    budget -= n;
    logit_rows += all ? n : 1;
    ++i;
  }

  // New work is admitted only when nobody had to give way this step (no thrashing). A preempted
  // sequence whose next token is not chosen yet waits where it is.
  for (size_t w = 0; !preempted && w < waiting_.size() && budget > 0 && int(running_.size()) < limits_.max_num_seqs &&
                     logit_rows < limits_.max_logit_rows;) {
    Sequence* seq = waiting_[w];
    if (seq->late_choice) {
      ++w;
      continue;
    }
    const int n = chunk_of(seq);
    if (n <= 0) break;
    auto slots = slots_.take(limits_.state_slots_per_seq);
    if (!slots) break;
    seq->state_slot = slots->front();
    seq->spare_slots.assign(slots->begin() + 1, slots->end());
    if (!grow_blocks(seq, seq->computed + n)) {
      release(seq);
      break;
    }
    waiting_.erase(waiting_.begin() + std::ptrdiff_t(w));
    running_.push_back(seq);
    const bool all = seq->wants_prompt_logprobs();
    work.push_back({seq, n, all});
    budget -= n;
    logit_rows += all ? n : 1;
  }
  return work;
}

}  // namespace dcu
