#include "server/generation_job.h"

#include <algorithm>
#include <ctime>
#include <random>

#include <fmt/format.h>

#include "server/sse.h"

namespace dcu::server {

std::string random_id(const std::string& prefix) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return prefix + fmt::format("{:016x}{:016x}", rng(), rng());
}

GenerationJob::GenerationJob(const ServerContext& ctx, const CommonParams& params)
    : created_(static_cast<int64_t>(std::time(nullptr))),
      engine_(ctx.engine),
      text_(ctx.text),
      metrics_(ctx.metrics),
      params_(params),
      eos_token_ids_(ctx.config.defaults.eos_token_ids),
      arrival_(std::chrono::steady_clock::now()) {}

void GenerationJob::add_choice(int prompt_index, GenerationRequest request, std::unique_ptr<TextStream> stream) {
  Choice c;
  c.index = static_cast<int>(choices_.size());
  c.prompt_index = prompt_index;
  c.request = std::move(request);
  c.stream = std::move(stream);
  choices_.push_back(std::move(c));
  if (prompt_tokens_.size() <= size_t(prompt_index)) prompt_tokens_.resize(prompt_index + 1, 0);
}

void GenerationJob::set_prompt_tokens(int prompt_index, int count) {
  if (prompt_tokens_.size() <= size_t(prompt_index)) prompt_tokens_.resize(prompt_index + 1, 0);
  prompt_tokens_[prompt_index] = count;
}

std::optional<ApiError> GenerationJob::start(JobEventSink sink) {
  std::vector<GenerationRequest> requests;
  std::vector<EventCallback> on_events;
  for (auto& c : choices_) {
    requests.push_back(c.request);
    on_events.push_back([sink, index = c.index](GenerationEvent&& e) { sink(index, std::move(e)); });
  }
  auto result = engine_.submit_all(std::move(requests), std::move(on_events));
  if (auto* err = std::get_if<SubmitError>(&result)) {
    if (err->retry_after_seconds > 0) return service_unavailable(err->message, err->retry_after_seconds);
    return invalid_request(err->message);
  }
  const auto& ids = std::get<std::vector<RequestId>>(result);
  for (auto& c : choices_) {
    c.engine_id = ids[c.index];
    c.submitted = true;
    c.last_token_time = arrival_;
    ++unfinished_;
  }
  metrics_.requests_submitted(int(choices_.size()));
  return std::nullopt;
}

void GenerationJob::cancel() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& c : choices_) {
    if (!c.submitted || c.finished) continue;
    engine_.cancel(c.engine_id);
    // The transport reads no more of this job's events: the abort, and the tokens already sent, count now.
    c.finish_reason = "abort";
    finish_choice(c, FinishReason::Abort, now);
  }
}

void GenerationJob::finish_choice(Choice& c, FinishReason reason, std::chrono::steady_clock::time_point now) {
  c.finished = true;
  --unfinished_;
  metrics_.request_finished(reason, prompt_tokens_[c.prompt_index], c.generated,
                            std::chrono::duration<double>(now - arrival_).count());
}

std::string GenerationJob::take_text(Choice& c, const GenerationEvent& event, size_t& used) {
  std::string text;
  for (const auto& token : event.tokens) {
    ++used;
    ++c.generated;
    const bool stop_token = event.finished == FinishReason::Stop && used == event.tokens.size();
    if (stop_token) {
      const bool eos = std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token.id) != eos_token_ids_.end();
      if (!eos) c.stop_reason = token.id;
      if (!params_.include_stop_str_in_output) break;
    }
    text += c.stream->push(token.id);
    if (c.stream->stopped()) {
      c.stop_reason = c.stream->stop_string();
      if (params_.include_stop_str_in_output) text += c.stream->stop_string();
      break;
    }
  }
  return text;
}

std::string GenerationJob::on_event(int index, GenerationEvent&& event) {
  if (index < 0 || size_t(index) >= choices_.size()) return {};
  Choice& c = choices_[index];
  if (c.finished) return {};  // late events after a stop string or cancel() ended the choice
  const auto now = std::chrono::steady_clock::now();
  if (!event.tokens.empty()) {
    const double since_last = std::chrono::duration<double>(now - c.last_token_time).count();
    if (c.generated == 0) metrics_.time_to_first_token(since_last);
    else metrics_.time_per_output_token(since_last / event.tokens.size());
    c.last_token_time = now;
  }
  size_t used = 0;
  std::string text = take_text(c, event, used);
  if (c.stream->stopped()) {
    engine_.cancel(c.engine_id);
    c.finish_reason = "stop";
    finish_choice(c, FinishReason::Stop, now);
  } else if (event.finished) {
    text += c.stream->flush();
    switch (*event.finished) {
      case FinishReason::Stop: c.finish_reason = "stop"; break;
      case FinishReason::Length: c.finish_reason = "length"; break;
      case FinishReason::Abort: c.finish_reason = "abort"; break;
      case FinishReason::Error: c.finish_reason = "error"; c.error = event.error; break;
    }
    finish_choice(c, *event.finished, now);
  }
  return on_output(c, std::move(text), std::span<const SampledToken>(event.tokens.data(), used), event);
}

nlohmann::ordered_json GenerationJob::usage() const {
  int prompt = 0, completion = 0;
  for (int p : prompt_tokens_) prompt += p;
  for (const auto& c : choices_) completion += c.generated;
  return {{"prompt_tokens", prompt}, {"total_tokens", prompt + completion}, {"completion_tokens", completion}};
}

void GenerationJob::add_chunk_usage(nlohmann::ordered_json& chunk, const Choice& c) const {
  if (params_.continuous_usage_stats) {
    const int prompt = prompt_tokens_[c.prompt_index];
    chunk["usage"] = {{"prompt_tokens", prompt}, {"total_tokens", prompt + c.generated},
                      {"completion_tokens", c.generated}};
  } else if (params_.include_usage) {
    chunk["usage"] = nullptr;
  }
}

std::string GenerationJob::stream_tail() {
  std::string out;
  if (params_.include_usage) out += sse_event(usage_chunk());
  return out + sse_done();
}

HttpResponse GenerationJob::response() {
  for (const auto& c : choices_)
    if (c.finish_reason == "error") return error_response(internal_error("generation failed: " + c.error));
  return json_response(full_response());
}

}  // namespace dcu::server
