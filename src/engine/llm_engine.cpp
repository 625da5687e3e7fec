#include "engine/llm_engine.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"

namespace dcu {

LlmEngine::LlmEngine(ModelInstance model, LlmEngineOptions options)
    : model_(std::move(model)), runner_(model_.ranks.at(0).runner.get()), batch_sampler_(runner_->backend()),
      options_(std::move(options)),
      blocks_(model_.ranks[0].cache->shape().num_blocks), slots_(model_.ranks[0].cache->shape().num_state_slots),
      scheduler_(options_.limits, blocks_, slots_) {
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
  s.kv_cache_usage = 1.0 - double(blocks_.free_count()) / std::max(1, blocks_.capacity());
  s.state_slot_usage = 1.0 - double(slots_.free_count()) / std::max(1, slots_.capacity());
  return s;
}

void LlmEngine::loop() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !arrivals_.empty() || !cancellations_.empty() || !sequences_.empty(); });
      if (stopping_) break;
    }
    drain_inbox();
    if (!sequences_.empty()) run_step();
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

void LlmEngine::run_step() {
  std::vector<ScheduledWork> work;
  {
    std::lock_guard lock(mutex_);
    work = scheduler_.schedule();
  }
  publish_counts();
  if (work.empty()) return;

  std::vector<SequenceStep> steps;
  for (const auto& w : work) {
    Sequence& s = *w.seq;
    steps.push_back(SequenceStep{std::span<const int32_t>(s.tokens).subspan(size_t(s.computed), size_t(w.num_tokens)),
                                 s.computed, s.blocks, s.state_slot, w.all_logits});
  }
  // Sequences whose computed count reaches their token count sample a token from their last row.
  std::vector<Sequence*> finishing;
  std::vector<SampledToken> tokens;
  try {
    const Tensor logits = step_model(steps);
    std::vector<SamplingJob> jobs;
    std::vector<std::vector<int32_t>> banned(work.size());
    int row = 0;
    for (size_t i = 0; i < work.size(); ++i) {
      Sequence& s = *work[i].seq;
      const int rows = work[i].all_logits ? work[i].num_tokens : 1;
      if (work[i].all_logits) collect_prompt_logprobs(s, logits, row, rows);
      s.computed += work[i].num_tokens;
      if (s.computed == int(s.tokens.size())) {  // else a prompt chunk: nothing to sample yet
        finishing.push_back(&s);
        if (s.params.max_tokens > 0) jobs.push_back({&s.sampler, row + rows - 1, banned_tokens(s, banned[i])});
      }
      row += rows;
    }
    tokens = batch_sampler_.sample(logits, jobs);
  } catch (const Error& e) {
    log::error("model step failed: {}", e.what());
    for (const auto& w : work) finish(w.seq, FinishReason::Error, {}, e.what());
    return;
  }

  size_t next_token = 0;
  for (Sequence* seq : finishing) {
    Sequence& s = *seq;
    GenerationEvent event;
    if (s.wants_prompt_logprobs()) {
      event.prompt_logprobs = std::move(s.prompt_logprobs);
      s.prompt_logprobs_sent = true;
    }
    if (s.params.max_tokens == 0) {  // prompt logprobs only
      finish(&s, FinishReason::Length, std::move(event));
      continue;
    }
    SampledToken& token = tokens[next_token++];
    s.sampler.accept(token.id);
    s.tokens.push_back(token.id);
    event.tokens.push_back(std::move(token));
    if (auto reason = stop_reason(s, s.tokens.back())) finish(&s, *reason, std::move(event));
    else s.on_event(std::move(event));
  }
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
