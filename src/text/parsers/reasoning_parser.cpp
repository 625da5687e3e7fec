#include "text/parsers/reasoning_parser.h"

#include "core/error.h"
#include "text/parsers/text_scan.h"

namespace dcu::text {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kFunctionOpen = "<function";

// After "<tool_call>": does a genuine "<function=" / "<function " follow (vLLM: `<function[\s=]`
// matched against the lstripped rest)?
TagMatch function_follows(std::string_view after_tool_call) {
  std::string_view rest = lstrip(after_tool_call);
  TagMatch m = match_tag(rest, kFunctionOpen);
  if (m != TagMatch::Yes) return m;
  if (rest.size() == kFunctionOpen.size()) return TagMatch::Maybe;
  char c = rest[kFunctionOpen.size()];
  return c == '=' || is_json_space(c) ? TagMatch::Yes : TagMatch::No;
}

}  // namespace

std::unique_ptr<ReasoningParser> ReasoningParser::create(std::string_view name, bool prompt_opened_think) {
  if (name == "qwen3") return std::make_unique<ReasoningParser>(prompt_opened_think, true);
  if (name == "deepseek_r1") return std::make_unique<ReasoningParser>(prompt_opened_think, false);
  fail("unknown reasoning parser '{}'; known reasoning parsers: qwen3, deepseek_r1", name);
}

ReasoningParser::ReasoningParser(bool prompt_opened_think, bool tool_call_ends_reasoning)
    : state_(prompt_opened_think ? State::StartInReasoning : State::StartInContent),
      tool_call_ends_reasoning_(tool_call_ends_reasoning) {}

ChatDelta ReasoningParser::feed(std::string_view text) {
  pending_ += text;
  ChatDelta out;
  process(out, false);
  return out;
}

ChatDelta ReasoningParser::finish() {
  ChatDelta out;
  process(out, true);
  DCU_CHECK(pending_.empty());
  return out;
}

void ReasoningParser::process(ChatDelta& out, bool at_end) {
  for (;;) {
    bool progressed = false;
    switch (state_) {
      case State::StartInReasoning:
      case State::StartInContent: progressed = process_start(out, at_end); break;
      case State::Reasoning: progressed = process_reasoning(out, at_end); break;
      case State::Content:
        out.content += pending_;
        pending_.clear();
        return;
    }
    if (!progressed) return;
  }
}

// Decides whether the output opens with its own <think>. Returns true when the state changed.
bool ReasoningParser::process_start(ChatDelta& out, bool at_end) {
  std::string_view rest = lstrip(pending_);
  TagMatch m = match_tag(rest, kThinkOpen);
  if (m == TagMatch::Maybe && !at_end) return false;
  if (m == TagMatch::Yes) {
    pending_.erase(0, pending_.size() - rest.size() + kThinkOpen.size());
    state_ = State::Reasoning;
    return true;
  }
  state_ = state_ == State::StartInReasoning ? State::Reasoning : State::Content;
  return true;
}

// Emits reasoning up to the next undecided point. Returns true when the state changed to Content.
bool ReasoningParser::process_reasoning(ChatDelta& out, bool at_end) {
  std::string_view text = pending_;
  size_t close = text.find(kThinkClose);
  // Search for an implicit end (a genuine tool call) before any </think>.
  size_t search_from = 0;
  size_t hold_from = text.size();  // first byte that must wait for more text
  if (tool_call_ends_reasoning_) {
    for (;;) {
      size_t call = text.find(kToolCallOpen, search_from);
      if (call == std::string_view::npos || (close != std::string_view::npos && call > close)) break;
      TagMatch m = function_follows(text.substr(call + kToolCallOpen.size()));
      if (m == TagMatch::Yes) {
        out.reasoning_content += text.substr(0, call);
        pending_.erase(0, call);  // "<tool_call>…" is content, for the tool parser
        state_ = State::Content;
        return true;
      }
      if (m == TagMatch::Maybe && !at_end) {
        hold_from = call;
        break;
      }
      search_from = call + 1;
    }
  }
  if (close != std::string_view::npos && close < hold_from) {
    out.reasoning_content += text.substr(0, close);
    pending_.erase(0, close + kThinkClose.size());
    state_ = State::Content;
    return true;
  }
  if (!at_end && hold_from == text.size()) {
    size_t hold = partial_tag_overlap(text, kThinkClose);
    if (tool_call_ends_reasoning_) hold = std::max(hold, partial_tag_overlap(text, kToolCallOpen));
    hold_from = text.size() - hold;
  }
  if (at_end) hold_from = text.size();
  out.reasoning_content += text.substr(0, hold_from);
  pending_.erase(0, hold_from);
  return false;
}

}  // namespace dcu::text
