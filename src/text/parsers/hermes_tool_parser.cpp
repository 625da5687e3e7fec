#include "text/parsers/hermes_tool_parser.h"

#include <optional>

#include "text/parsers/python_json.h"
#include "text/parsers/text_scan.h"

namespace dcu::text {
namespace {

constexpr std::string_view kToolCallClose = "</tool_call>";

// Position just after `"key"\s*:\s*` for the first occurrence that has it, or npos.
size_t find_key_value(std::string_view body, std::string_view quoted_key) {
  for (size_t at = body.find(quoted_key); at != std::string_view::npos; at = body.find(quoted_key, at + 1)) {
    size_t i = at + quoted_key.size();
    while (i < body.size() && is_json_space(body[i])) ++i;
    if (i >= body.size() || body[i] != ':') continue;
    ++i;
    while (i < body.size() && is_json_space(body[i])) ++i;
    return i;
  }
  return std::string_view::npos;
}

// vLLM's `"name"\s*:\s*"([^"]+)"`: the name once its closing quote has arrived.
std::optional<std::string> find_name(std::string_view body) {
  for (size_t at = body.find("\"name\""); at != std::string_view::npos; at = body.find("\"name\"", at + 1)) {
    size_t i = find_key_value(body.substr(at), "\"name\"");
    if (i == std::string_view::npos) continue;
    i += at;
    if (i >= body.size() || body[i] != '"') continue;
    size_t end = body.find('"', i + 1);
    if (end == std::string_view::npos || end == i + 1) continue;
    return std::string(body.substr(i + 1, end - i - 1));
  }
  return std::nullopt;
}

// The text of the "arguments" object/array so far: up to its matching close bracket when that has
// arrived (`complete`), otherwise everything after it without trailing whitespace. nullopt when the
// value has not started or is not an object/array.
std::optional<std::string_view> find_arguments(std::string_view body, bool& complete) {
  complete = false;
  size_t start = find_key_value(body, "\"arguments\"");
  if (start == std::string_view::npos || start >= body.size()) return std::nullopt;
  std::string_view raw = body.substr(start);
  char open = raw[0];
  if (open != '{' && open != '[') return std::nullopt;
  char close = open == '{' ? '}' : ']';
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == open) {
      ++depth;
    } else if (c == close && --depth == 0) {
      complete = true;
      return raw.substr(0, i + 1);
    }
  }
  return rstrip(raw);
}

}  // namespace

void HermesToolParser::reset_call() {
  header_sent_ = false;
  name_.clear();
  streamed_args_.clear();
}

ToolCallParser::CallStatus HermesToolParser::parse_call(std::string_view call_text, bool at_end, ChatDelta& out,
                                                        size_t& consumed) {
  size_t close = call_text.find(kToolCallClose);
  std::string_view body = call_text.substr(0, close);
  // A partial "</tool_call>" at the end is not part of the JSON, also when the output ends there.
  if (close == std::string_view::npos) body.remove_suffix(partial_tag_overlap(body, kToolCallClose));

  if (!header_sent_) {
    if (auto name = find_name(body)) {
      name_ = *name;
      open_call(name_, out);
      header_sent_ = true;
    }
  }
  bool args_complete = false;
  std::optional<std::string_view> args;
  if (header_sent_) args = find_arguments(body, args_complete);
  if (args && args->size() > streamed_args_.size() && args->substr(0, streamed_args_.size()) == streamed_args_) {
    add_arguments(args->substr(streamed_args_.size()), out);
    streamed_args_ = *args;
  }
  if (close == std::string_view::npos && !at_end) return CallStatus::NeedMore;

  nlohmann::ordered_json call = nlohmann::ordered_json::parse(strip(body), nullptr, /*allow_exceptions=*/false);
  if (call.is_discarded() || !call.is_object() || !call.contains("name") || !call["name"].is_string() ||
      !call.contains("arguments"))
    return CallStatus::Malformed;
  std::string name = call["name"].get<std::string>();
  if (!header_sent_) {
    name_ = name;
    open_call(name_, out);
    header_sent_ = true;
  } else if (name != name_) {
    return CallStatus::Malformed;
  }
  std::string final_args = args && args_complete ? std::string(*args) : python_json_dumps(call["arguments"]);
  if (final_args.substr(0, streamed_args_.size()) != streamed_args_) return CallStatus::Malformed;
  add_arguments(std::string_view(final_args).substr(streamed_args_.size()), out);
  streamed_args_ = final_args;
  consumed = close == std::string_view::npos ? call_text.size() : close + kToolCallClose.size();
  return CallStatus::Closed;
}

}  // namespace dcu::text
