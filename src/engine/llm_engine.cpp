#include "engine/llm_engine.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"

namespace dcu {

LlmEngine::LlmEngine(ModelInstance model, LlmEngineOptions options)
    : model_(std::move(model)), runner_(model_.ranks.at(0).runner.get()),
      batch_sampler_(runner_->backend(), options.mask_budget,
                     [this] {
                       {
                         std::lock_guard lock(mutex_);
                         mask_finished_ = true;
                       }
                       wake_.notify_one();
                     }),
      options_(std::move(options)),
      blocks_(model_.ranks[0].cache->shape().num_blocks), slots_(model_.ranks[0].cache->shape().num_state_slots),
      scheduler_(options_.limits, blocks_, slots_) {
  if (options_.num_speculative_tokens > 0) {
    DCU_CHECK(runner_->drafts());
    drafter_ = std::make_unique<Drafter>(model_, batch_sampler_);
    spec_stats_.spec_accepted_per_position.assign(size_t(options_.num_speculative_tokens), 0);
  }
  thread_ = std::thread([this] { loop(); });
}

LlmEngine::~LlmEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::optional<SubmitError> LlmEngine::check_prompt(const GenerationRequest& request) const {
  const int prompt_len = int(request.prompt.size());
  if (prompt_len == 0) return SubmitError{"the prompt is empty"};
  for (int32_t id : request.prompt)
    if (id < 0 || id >= vocab_size())
      return SubmitError{fmt::format("token id {} is outside the vocabulary (0..{})", id, vocab_size() - 1)};
  if (prompt_len >= options_.max_model_len)
    return SubmitError{fmt::format("the prompt has {} tokens; the context length is {}", prompt_len,
                                   options_.max_model_len)};
  return std::nullopt;
}

std::variant<std::vector<RequestId>, SubmitError> LlmEngine::submit_all(std::vector<GenerationRequest> requests,
                                                                        std::vector<EventCallback> on_events) {
  for (const auto& request : requests)
    if (auto error = check_prompt(request)) return *error;
  const int queue_limit = options_.max_waiting_requests + options_.limits.max_num_seqs;
  const int count = int(requests.size());
  if (count > queue_limit)
    return SubmitError{fmt::format("the request has {} sequences (prompts x n); at most {} can be queued", count,
                                   queue_limit)};
  std::lock_guard lock(mutex_);
  if (stopping_) return SubmitError{"the server is shutting down", 0};
  if (pending_ + count > queue_limit) return SubmitError{"too many requests are waiting; try again later", 1};
  std::vector<RequestId> ids;
  for (int i = 0; i < count; ++i) {
    const RequestId id = next_id_++;
    ++pending_;
    arrivals_.push_back(
        std::make_unique<Sequence>(id, std::move(requests[i]), std::move(on_events[i]), options_.seed + id));
    ids.push_back(id);
  }
  wake_.notify_one();
  return ids;
}

void LlmEngine::cancel(RequestId id) {
  std::lock_guard lock(mutex_);
  cancellations_.push_back(id);
  wake_.notify_one();
}

EngineStats LlmEngine::stats() const {
  EngineStats s;
  s.running = running_count_;
  s.waiting = waiting_count_;
  s.preemptions = preemptions_;
  std::lock_guard lock(mutex_);  // pools are read under the same lock the engine thread updates them
  s.spec_drafts = spec_stats_.spec_drafts;
  s.spec_draft_tokens = spec_stats_.spec_draft_tokens;
  s.spec_accepted_tokens = spec_stats_.spec_accepted_tokens;
  s.spec_accepted_per_position = spec_stats_.spec_accepted_per_position;
  s.kv_cache_usage = 1.0 - double(blocks_.free_count()) / std::max(1, blocks_.capacity());
  s.state_slot_usage = 1.0 - double(slots_.free_count()) / std::max(1, slots_.capacity());
  return s;
}

void LlmEngine::loop() {
  bool stalled = false;  // the last step found nothing to run while some sequence waits for its mask
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || !arrivals_.empty() || !cancellations_.empty() || mask_finished_ ||
               (!sequences_.empty() && !stalled);
      });
      if (stopping_) break;
      mask_finished_ = false;
    }
    drain_inbox();
    const bool ran = !sequences_.empty() && run_step();
    stalled = !ran && std::any_of(sequences_.begin(), sequences_.end(), [](const auto& s) { return bool(s.second->late_choice); });
    if (stats_log_.due()) stats_log_.log(stats());  // stats() takes the inbox lock: not every step
  }
  drain_inbox();
  std::vector<Sequence*> left;
  for (auto& [_, seq] : sequences_) left.push_back(seq.get());
  for (Sequence* seq : left) finish(seq, FinishReason::Abort);
}

void LlmEngine::drain_inbox() {
  std::vector<std::unique_ptr<Sequence>> arrivals;
  std::vector<RequestId> cancellations;
  {
    std::lock_guard lock(mutex_);
    arrivals.swap(arrivals_);
    cancellations.swap(cancellations_);
  }
  for (auto& seq : arrivals) {
    scheduler_.add(seq.get());
    sequences_.emplace(seq->id, std::move(seq));
  }
  for (RequestId id : cancellations) {
    auto it = sequences_.find(id);
    if (it != sequences_.end()) finish(it->second.get(), FinishReason::Abort);
  }
}

std::optional<FinishReason> LlmEngine::stop_reason(const Sequence& seq, int32_t token) const {
  const SamplingParams& p = seq.params;
  if (seq.generated() >= p.min_tokens) {
    if (std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) != p.stop_token_ids.end())
      return FinishReason::Stop;
    if (!p.ignore_eos &&
        std::find(options_.eos_token_ids.begin(), options_.eos_token_ids.end(), token) != options_.eos_token_ids.end())
      return FinishReason::Stop;
  }
  if (seq.generated() >= p.max_tokens) return FinishReason::Length;
  if (int(seq.tokens.size()) >= options_.max_model_len) return FinishReason::Length;
  return std::nullopt;
}

// One sequence that samples this step: its candidate rows are first_row (after its last token) and,
// when it verifies drafts, one row after each draft.
struct LlmEngine::Verification {
  Sequence* seq = nullptr;
  int first_row = 0;
  int drafts = 0;    // drafts verified
  int accepted = 0;  // drafts equal to the target's choice, in order
  bool sampling = true;
  std::optional<FinishReason> finished = {};
  GenerationEvent event = {};
};

bool LlmEngine::run_step() {
  finish_late_choices();
  std::vector<ScheduledWork> work;
  {
    std::lock_guard lock(mutex_);
    work = scheduler_.schedule();
  }
  publish_counts();
  if (work.empty()) return false;

  std::vector<SequenceStep> steps;
  std::vector<int> first_rows, first_positions;  // each sequence's first row of the step and its position
  int batch_rows = 0, prompt_rows = 0;
  for (const auto& w : work) {
    Sequence& s = *w.seq;
    prompt_rows += std::clamp(s.prompt_len - s.computed, 0, w.num_tokens);
    first_rows.push_back(batch_rows);
    first_positions.push_back(s.computed);
    batch_rows += w.num_tokens;
    const int own = w.num_tokens - w.num_drafts;
    SequenceStep step{std::span<const int32_t>(s.tokens).subspan(size_t(s.computed), size_t(own)), s.computed,
                      s.blocks, s.state_slot, w.all_logits};
    if (w.num_drafts > 0) {  // the last token, then the drafts; each row keeps its state, the last in state_slot
      s.step_tokens.assign(1, s.tokens.back());
      s.step_tokens.insert(s.step_tokens.end(), s.drafts.begin(), s.drafts.begin() + w.num_drafts);
      s.step_write_slots.assign(s.spare_slots.begin(), s.spare_slots.begin() + w.num_drafts);
      s.step_write_slots.push_back(s.state_slot);
      step.tokens = s.step_tokens;
      step.state_write_slots = s.step_write_slots;
    }
    steps.push_back(step);
  }
  std::vector<Verification> verifications;
  try {
    const Tensor logits = step_model(steps);
    int row = 0;
    for (const auto& w : work) {
      Sequence& s = *w.seq;
      const int rows = w.all_logits ? w.num_tokens : 1;
      if (s.wants_prompt_logprobs()) collect_prompt_logprobs(s, logits, row, rows);
      s.computed += w.num_tokens - w.num_drafts;  // each accepted draft adds its row (sample_tokens)
      if (s.computed == int(s.tokens.size()))     // else a prompt chunk: nothing to sample yet
        verifications.push_back({&s, row + rows - 1 - w.num_drafts, w.num_drafts});
      row += rows;
    }
    sample_tokens(logits, verifications);
    if (drafter_) draft_next(work, verifications, first_rows, first_positions);
  } catch (const Error& e) {  // a failed allocation (scratch that grows with the batch) or kernel
    fail_step(work, e.what());
    return true;
  } catch (const std::bad_alloc&) {  // host memory for the step's own bookkeeping
    fail_step(work, "out of host memory");
    return true;
  }

  int generated = 0;
  for (const Verification& v : verifications) generated += int(v.event.tokens.size());
  stats_log_.count_step(prompt_rows, generated);
  for (Verification& v : verifications) {
    if (v.seq->late_choice) {  // drafts it accepted before its late mask go now, the late token later
      if (!v.event.tokens.empty()) emit(*v.seq, std::move(v.event), std::nullopt);
      continue;
    }
    if (v.seq->params.max_tokens == 0) v.finished = FinishReason::Length;  // prompt logprobs only
    emit(*v.seq, std::move(v.event), v.finished);
  }
  return true;
}

void LlmEngine::emit(Sequence& s, GenerationEvent event, std::optional<FinishReason> finished) {
  if (s.wants_prompt_logprobs()) {
    event.prompt_logprobs = std::move(s.prompt_logprobs);
    s.prompt_logprobs_sent = true;
  }
  if (finished) finish(&s, *finished, std::move(event));
  else s.on_event(std::move(event));
}

void LlmEngine::finish_late_choices() {
  std::vector<Sequence*> ready;
  for (auto& [_, seq] : sequences_)
    if (seq->late_choice && batch_sampler_.ready(*seq->late_choice)) ready.push_back(seq.get());
  for (Sequence* s : ready) {
    SampledToken token = batch_sampler_.finish(*s->late_choice, s->sampler);
    s->late_choice.reset();
    s->sampler.accept(token.id);
    s->tokens.push_back(token.id);
    GenerationEvent event;
    event.tokens.push_back(std::move(token));
    stats_log_.count_step(0, 1);
    emit(*s, std::move(event), stop_reason(*s, s->tokens.back()));
  }
}

// Round r samples row first_row + r of every sequence still choosing, exactly as a step without drafts
// would (penalties, bans and the request's random numbers see every token before it). A draft equal to
// the choice was computed right, so the next row holds the target's next logits; the first choice that
// differs from its draft, or follows the last draft, ends the sequence's turn. For greedy requests this
// is "accept while the argmax equals the draft"; for sampled ones it is the rejection-sampling rule with
// a one-point draft distribution (accept d with probability p(d), else draw from p without d), so the
// output distribution is the target's and a seeded request draws the same tokens as without drafts.
void LlmEngine::sample_tokens(const Tensor& logits, std::span<Verification> verifications) {
  for (Verification& v : verifications) v.sampling = v.seq->params.max_tokens > 0;
  std::vector<SamplingJob> jobs;
  std::vector<Verification*> owners;
  std::vector<std::vector<int32_t>> banned(verifications.size());
  for (int round = 0;; ++round) {
    jobs.clear();
    owners.clear();
    for (size_t i = 0; i < verifications.size(); ++i) {
      Verification& v = verifications[i];
      if (!v.sampling) continue;
      banned[i].clear();
      jobs.push_back({&v.seq->sampler, v.first_row + round, banned_tokens(*v.seq, banned[i])});
      owners.push_back(&v);
    }
    if (jobs.empty()) break;
    // A sequence whose mask overruns the budget stops at this round and waits alone for its token
    // (finish_late_choices); the drafts it accepted in earlier rounds stand.
    std::vector<LateChoice> late;
    std::vector<SampledToken> tokens = batch_sampler_.sample(logits, jobs, &late);
    for (LateChoice& choice : late) {
      owners[choice.job]->sampling = false;
      owners[choice.job]->seq->late_choice = std::move(choice);
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
      Verification& v = *owners[j];
      Sequence& s = *v.seq;
      if (s.late_choice) continue;
      const int32_t id = tokens[j].id;
      s.sampler.accept(id);
      s.tokens.push_back(id);
      v.event.tokens.push_back(std::move(tokens[j]));
      v.finished = stop_reason(s, id);
      v.sampling = !v.finished && round < v.drafts && id == s.drafts[size_t(round)];
      if (v.sampling) {  // the draft's row and caches stand
        ++v.accepted;
        ++s.computed;
      }
    }
  }
  for (Verification& v : verifications) {
    if (v.drafts == 0) continue;
    // Row `accepted` kept the state to continue from: in spare slot `accepted`, or (all accepted) in state_slot.
    if (v.accepted < v.drafts) std::swap(v.seq->state_slot, v.seq->spare_slots[size_t(v.accepted)]);
    v.seq->drafts.clear();
    count_verification(v);
  }
}

void LlmEngine::count_verification(const Verification& v) {
  std::lock_guard lock(mutex_);
  ++spec_stats_.spec_drafts;
  spec_stats_.spec_draft_tokens += uint64_t(v.drafts);
  spec_stats_.spec_accepted_tokens += uint64_t(v.accepted);
  for (int i = 0; i < v.accepted; ++i) ++spec_stats_.spec_accepted_per_position[size_t(i)];
}

// Every sequence of the step that goes on feeds its new rows to the MTP block; those that sampled draft
// up to k tokens, as many as max_tokens, the context length and free KV pages (no preemption) allow.
// A sequence whose token waits for a late mask feeds the rows before its last (the block's row at that
// last position is never written: its drafts later may be accepted less often, its output is the same).
void LlmEngine::draft_next(std::span<const ScheduledWork> work, std::span<const Verification> verifications,
                           std::span<const int> first_rows, std::span<const int> first_positions) {
  std::vector<DraftRequest> requests;
  size_t next = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    Sequence& s = *work[i].seq;
    const Verification* v = next < verifications.size() && verifications[next].seq == &s ? &verifications[next++] : nullptr;
    if (v && (v->finished || s.params.max_tokens == 0)) continue;  // ends this step
    if (s.late_choice && s.computed - first_positions[i] == 1) continue;  // no row whose next token is known
    int drafts = 0;
    if (v && !s.late_choice) {
      drafts = std::min({options_.num_speculative_tokens, s.params.max_tokens - s.generated() - 1,
                         options_.max_model_len - int(s.tokens.size())});
      std::lock_guard lock(mutex_);
      if (drafts > 0 && !scheduler_.reserve(&s, int(s.tokens.size()) + drafts)) drafts = 0;
    }
    requests.push_back({&s, first_positions[i], first_rows[i], std::max(0, drafts)});
  }
  drafter_->propose(requests);
}

// Eos (unless ignored) and stop ids may not be sampled before min_tokens.
std::span<const int32_t> LlmEngine::banned_tokens(const Sequence& s, std::vector<int32_t>& storage) const {
  if (s.generated() >= s.params.min_tokens) return {};
  if (!s.params.ignore_eos) storage = options_.eos_token_ids;
  storage.insert(storage.end(), s.params.stop_token_ids.begin(), s.params.stop_token_ids.end());
  return storage;
}

// Row r of a prompt chunk's logits predicts the token after position computed + r.
void LlmEngine::collect_prompt_logprobs(Sequence& s, const Tensor& logits, int first_row, int rows) {
  const int64_t V = logits.cols();
  prompt_rows_.resize(size_t(rows * V));
  runner_->backend().download(prompt_rows_.data(), logits.as<float>() + first_row * V, prompt_rows_.size() * 4);
  s.prompt_logprobs.resize(size_t(s.prompt_len));
  for (int r = 0; r < rows; ++r) {
    const size_t next = size_t(s.computed) + size_t(r) + 1;
    if (next < size_t(s.prompt_len))
      s.prompt_logprobs[next] = Sampler::logprobs_of(std::span<const float>(&prompt_rows_[size_t(r * V)], size_t(V)),
                                                     s.tokens[next], s.params.prompt_logprobs);
  }
}

// Only the sequences of a failed step end, with the error; the others, and later requests, go on.
void LlmEngine::fail_step(std::span<const ScheduledWork> work, const std::string& error) {
  log::error("model step failed: {}", error);
  for (const auto& w : work) finish(w.seq, FinishReason::Error, {}, error);
}

void LlmEngine::publish_counts() {
  running_count_ = scheduler_.num_running();
  waiting_count_ = scheduler_.num_waiting();
  preemptions_ = scheduler_.preemptions();
}

Tensor LlmEngine::step_model(std::span<const SequenceStep> steps) {
  if (!model_.followers) return model_.step(steps);
  Tensor logits;
  model_.followers->run_step(steps, [&] { logits = model_.step(steps); });
  return logits;
}

void LlmEngine::finish(Sequence* seq, FinishReason reason, GenerationEvent event, std::string error) {
  if (seq->late_choice) batch_sampler_.wait(*seq->late_choice);  // its worker still uses the sampler
  // Return the caches before the last event, so whoever it wakes sees them free.
  {
    std::lock_guard lock(mutex_);
    scheduler_.remove(seq);
    --pending_;
  }
  publish_counts();
  event.finished = reason;
  event.error = std::move(error);
  event.prompt_tokens = seq->prompt_len;
  seq->on_event(std::move(event));
  sequences_.erase(seq->id);
}

}  // namespace dcu
