#include "server/generation_job.h"

#include <ctime>
#include <random>

#include <fmt/format.h>

#include "server/sse.h"

namespace dcu::server {

std::string random_id(const std::string& prefix) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return prefix + fmt::format("{:016x}{:016x}", rng(), rng());
}

GenerationJob::GenerationJob(Engine& engine, const ModelText& text, Metrics& metrics, bool streaming,
                             bool include_usage)
    : created_(static_cast<int64_t>(std::time(nullptr))),
      engine_(engine),
      text_(text),
      metrics_(metrics),
      streaming_(streaming),
      include_usage_(include_usage),
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
  return std::nullopt;
}

void GenerationJob::cancel() {
  for (auto& c : choices_)
    if (c.submitted && !c.finished) engine_.cancel(c.engine_id);
}

std::string GenerationJob::on_event(int index, GenerationEvent&& event) {
  if (index < 0 || size_t(index) >= choices_.size()) return {};
  Choice& c = choices_[index];
  if (c.finished) return {};  // late events after a stop string cancelled the request
  const auto now = std::chrono::steady_clock::now();
  if (!event.tokens.empty()) {
    const double since_last = std::chrono::duration<double>(now - c.last_token_time).count();
    if (c.generated == 0) metrics_.time_to_first_token(since_last);
    else metrics_.time_per_output_token(since_last / event.tokens.size());
    c.last_token_time = now;
  }
  std::string text;
  size_t used = 0;
  bool stop_string = false;
  for (const auto& token : event.tokens) {
    text += c.stream->push(token.id);
    ++used;
    ++c.generated;
    if (c.stream->stopped()) {
      stop_string = true;
      break;
    }
  }
  if (stop_string) {
    engine_.cancel(c.engine_id);
    c.finished = true;
    c.finish_reason = "stop";
  } else if (event.finished) {
    text += c.stream->flush();
    c.finished = true;
    switch (*event.finished) {
      case FinishReason::Stop: c.finish_reason = "stop"; break;
      case FinishReason::Length: c.finish_reason = "length"; break;
      case FinishReason::Abort: c.finish_reason = "abort"; break;
      case FinishReason::Error: c.finish_reason = "error"; c.error = event.error; break;
    }
  }
  if (c.finished) {
    --unfinished_;
    const auto reason = stop_string ? FinishReason::Stop : *event.finished;
    metrics_.request_finished(reason, prompt_tokens_[c.prompt_index], c.generated,
                              std::chrono::duration<double>(now - arrival_).count());
  }
  return on_output(c, std::move(text), std::span<const SampledToken>(event.tokens.data(), used), event);
}

nlohmann::ordered_json GenerationJob::usage() const {
  int prompt = 0, completion = 0;
  for (int p : prompt_tokens_) prompt += p;
  for (const auto& c : choices_) completion += c.generated;
  return {{"prompt_tokens", prompt}, {"total_tokens", prompt + completion}, {"completion_tokens", completion}};
}

std::string GenerationJob::stream_tail() {
  std::string out;
  if (include_usage_) out += sse_event(usage_chunk());
  return out + sse_done();
}

HttpResponse GenerationJob::response() {
  for (const auto& c : choices_)
    if (c.finish_reason == "error") return error_response(internal_error("generation failed: " + c.error));
  return json_response(full_response());
}

}  // namespace dcu::server
