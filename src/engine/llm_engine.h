#pragma once
// The engine: one thread that owns the scheduler, the caches and the model runner. Requests arrive
// through a locked inbox; results leave through each request's callback. See docs/ENGINE.md.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "cache/block_allocator.h"
#include "engine/drafter.h"
#include "engine/engine_api.h"
#include "engine/model_instance.h"
#include "engine/scheduler.h"
#include "engine/stats_log.h"
#include "engine/sequence.h"
#include "sampling/batch_sampler.h"

namespace dcu {

struct LlmEngineOptions {
  SchedulerLimits limits;
  int max_model_len = 0;
  int max_waiting_requests = 1024;
  uint64_t seed = 0;
  std::vector<int32_t> eos_token_ids;
  int num_speculative_tokens = 0;  // MTP drafts per sequence and step (the runners must draft); 0: off
  // How long after a step's logits are ready the batch waits for a structured-output mask; a sequence
  // whose mask takes longer sits out until it is done (not with speculative decoding: there the
  // batch waits for every mask).
  std::chrono::microseconds mask_budget = std::chrono::milliseconds(5);
};

class LlmEngine final : public Engine {
 public:
  LlmEngine(ModelInstance model, LlmEngineOptions options);
  ~LlmEngine() override;  // stops the thread; unfinished requests end with FinishReason::Abort

  std::variant<std::vector<RequestId>, SubmitError> submit_all(std::vector<GenerationRequest> requests,
                                                               std::vector<EventCallback> on_events) override;
  void cancel(RequestId id) override;
  EngineStats stats() const override;
  int max_model_len() const override { return options_.max_model_len; }
  int vocab_size() const override { return int(runner_->config().vocab_size); }

 private:
  void loop();
  void drain_inbox();
  bool run_step();  // false when the scheduler gave no work
  // Chooses the tokens of the sequences whose late masks are done.
  void finish_late_choices();
  // The event of a sequence's new tokens (with its prompt logprobs, the first time), or its end.
  void emit(Sequence& s, GenerationEvent event, std::optional<FinishReason> finished);
  // The tokens of each sequence that samples this step: one, or (verifying drafts) the accepted ones
  // and the target's next; advances computed past the accepted rows and keeps their state slot.
  struct Verification;
  void sample_tokens(const Tensor& logits, std::span<Verification> verifications);
  // The drafts each sequence of the step verifies next time (speculative decoding).
  void draft_next(std::span<const ScheduledWork> work, std::span<const Verification> verifications,
                  std::span<const int> first_rows, std::span<const int> first_positions);
  void count_verification(const Verification& v);
  // One model step on every rank (of every node); rank 0's logits [R, V] in its backend's memory.
  Tensor step_model(std::span<const SequenceStep> steps);
  std::span<const int32_t> banned_tokens(const Sequence& s, std::vector<int32_t>& storage) const;
  void collect_prompt_logprobs(Sequence& s, const Tensor& logits, int first_row, int rows);
  // Ends a sequence: last event, caches returned, memory freed.
  void finish(Sequence* seq, FinishReason reason, GenerationEvent event = {}, std::string error = {});
  void fail_step(std::span<const ScheduledWork> work, const std::string& error);
  void publish_counts();  // the gauges stats() reads
  std::optional<SubmitError> check_prompt(const GenerationRequest& request) const;
  std::optional<FinishReason> stop_reason(const Sequence& seq, int32_t token) const;

  ModelInstance model_;
  ModelRunner* runner_;
  BatchSampler batch_sampler_;  // on rank 0's backend
  std::vector<float> prompt_rows_;  // host copy of a prompt chunk's logits (prompt logprobs)
  LlmEngineOptions options_;
  IdPool blocks_;
  IdPool slots_;
  Scheduler scheduler_;
  std::unique_ptr<Drafter> drafter_;  // with speculative decoding
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> sequences_;  // engine thread only

  // Inbox, shared with request threads.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Sequence>> arrivals_;
  std::vector<RequestId> cancellations_;
  bool stopping_ = false;
  bool mask_finished_ = false;  // a late mask is done: the engine thread has a token to choose
  RequestId next_id_ = 1;
  int pending_ = 0;  // submitted and not yet finished, for the waiting limit

  std::atomic<int> running_count_{0}, waiting_count_{0};
  std::atomic<uint64_t> preemptions_{0};
  EngineStats spec_stats_;  // the spec_* counters, under mutex_
  StatsLog stats_log_;      // engine thread only
  std::thread thread_;
};

}  // namespace dcu
