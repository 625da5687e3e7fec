#include "text/parsers/tool_call_parser.h"

#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "text/parsers/hermes_tool_parser.h"
#include "text/parsers/qwen3_coder_tool_parser.h"
#include "text/parsers/text_scan.h"

namespace dcu::text {
namespace {

constexpr std::string_view kToolCallOpen = "<tool_call>";

}  // namespace

ToolCallIdGenerator seeded_tool_call_ids(uint64_t seed) {
  return [engine = std::mt19937_64(seed)]() mutable {
    static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += kAlphabet[pick(engine)];
    return id;
  };
}

ToolCallIdGenerator random_tool_call_ids() {
  std::random_device device;
  return seeded_tool_call_ids((static_cast<uint64_t>(device()) << 32) ^ device());
}

const std::vector<std::string>& ToolCallParser::known_names() {
  static const std::vector<std::string> names = {"hermes", "qwen3_coder", "qwen3_xml"};
  return names;
}

std::unique_ptr<ToolCallParser> ToolCallParser::create(std::string_view name, const nlohmann::ordered_json& tools,
                                                       ToolCallIdGenerator ids) {
  if (!ids) ids = random_tool_call_ids();
  if (name == "hermes") return std::make_unique<HermesToolParser>(std::move(ids));
  if (name == "qwen3_coder" || name == "qwen3_xml")
    return std::make_unique<Qwen3CoderToolParser>(tools, std::move(ids));
  fail("unknown tool-call parser '{}'; known tool-call parsers: {}", name, fmt::join(known_names(), ", "));
}

ToolCallParser::ToolCallParser(ToolCallIdGenerator ids) : ids_(std::move(ids)) {}

ChatDelta ToolCallParser::feed(std::string_view content_text) {
  (state_ == State::InCall ? call_text_ : pending_) += content_text;
  ChatDelta out;
  process(out, false);
  return out;
}

ChatDelta ToolCallParser::finish() {
  ChatDelta out;
  process(out, true);
  return out;
}

void ToolCallParser::open_call(std::string name, ChatDelta& out) {
  out.tool_calls.push_back({calls_opened_, ids_(), std::move(name), ""});
  ++calls_opened_;
}

void ToolCallParser::add_arguments(std::string_view fragment, ChatDelta& out) {
  DCU_CHECK(calls_opened_ > 0);
  if (fragment.empty()) return;
  int index = calls_opened_ - 1;
  if (!out.tool_calls.empty() && out.tool_calls.back().index == index && !out.tool_calls.back().is_header())
    out.tool_calls.back().arguments += fragment;
  else
    out.tool_calls.push_back({index, "", "", std::string(fragment)});
}

void ToolCallParser::process(ChatDelta& out, bool at_end) {
  for (;;) {
    switch (state_) {
      case State::Content:
      case State::BetweenCalls: {
        size_t open = pending_.find(kToolCallOpen);
        if (open == std::string::npos) {
          size_t keep = at_end ? 0 : partial_tag_overlap(pending_, kToolCallOpen);
          if (state_ == State::Content) out.content += std::string_view(pending_).substr(0, pending_.size() - keep);
          pending_.erase(0, pending_.size() - keep);
          return;
        }
        if (state_ == State::Content) out.content += std::string_view(pending_).substr(0, open);
        call_text_ = pending_.substr(open + kToolCallOpen.size());
        pending_.clear();
        state_ = State::InCall;
        break;
      }
      case State::InCall: {
        size_t consumed = 0;
        CallStatus status = parse_call(call_text_, at_end, out, consumed);
        if (status == CallStatus::NeedMore) {
          DCU_CHECK(!at_end);
          return;
        }
        if (status == CallStatus::Closed) {
          DCU_CHECK(consumed <= call_text_.size());
          pending_ = call_text_.substr(consumed);
          state_ = State::BetweenCalls;
        } else {
          failed_ = true;
          if (calls_opened_ == 0) {
            out.content += kToolCallOpen;
            out.content += call_text_;
            state_ = State::PlainContent;
          } else {
            state_ = State::Dropping;
          }
        }
        call_text_.clear();
        reset_call();
        break;
      }
      case State::PlainContent:
        out.content += pending_;
        pending_.clear();
        return;
      case State::Dropping:
        pending_.clear();
        return;
    }
  }
}

}  // namespace dcu::text
