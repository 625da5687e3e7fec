#include "text/parsers/qwen3_coder_tool_parser.h"

#include <array>

#include "text/parsers/param_conversion.h"
#include "text/parsers/python_json.h"
#include "text/parsers/text_scan.h"

namespace dcu::text {
namespace {

constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";
constexpr std::string_view kToolCallClose = "</tool_call>";
constexpr size_t npos = std::string_view::npos;

bool valid_function_name_chars(std::string_view name) {
  return name.find_first_of("{}<>\"' \t\n\r") == npos;
}

// What may follow a "</parameter>" that really ends the value.
TagMatch structural_after_parameter(std::string_view after) {
  std::string_view rest = lstrip(after);
  TagMatch best = TagMatch::No;
  for (std::string_view tag : {kParameterOpen, kFunctionClose, kToolCallClose}) {
    TagMatch m = match_tag(rest, tag);
    if (m == TagMatch::Yes) return m;
    if (m == TagMatch::Maybe) best = m;
  }
  return best;
}

// End of an unterminated value at the end of the output: a final "</function>" (followed only by
// whitespace and an optional "</tool_call>") closes it, otherwise it runs to the end.
size_t unterminated_value_end(std::string_view text, size_t value_start) {
  for (size_t at = text.rfind(kFunctionClose); at != npos && at >= value_start;
       at = at == 0 ? npos : text.rfind(kFunctionClose, at - 1)) {
    std::string_view rest = lstrip(text.substr(at + kFunctionClose.size()));
    if (rest.empty() || strip(rest) == kToolCallClose) return at;
  }
  return text.size();
}

}  // namespace

void Qwen3CoderToolParser::reset_call() {
  properties_ = nlohmann::ordered_json();
  phase_ = Phase::ExpectFunction;
  pos_ = 0;
  param_name_.clear();
  value_start_ = value_scan_ = 0;
  params_sent_ = 0;
}

void Qwen3CoderToolParser::emit_parameter(std::string_view raw_value, ChatDelta& out) {
  // vLLM: "Remove prefix and trailing \n", one each.
  if (!raw_value.empty() && raw_value.front() == '\n') raw_value.remove_prefix(1);
  if (!raw_value.empty() && raw_value.back() == '\n') raw_value.remove_suffix(1);
  nlohmann::ordered_json value = convert_param_value(std::string(raw_value), param_name_, properties_);
  std::string fragment = params_sent_ > 0 ? ", " : "";
  fragment += python_json_dumps(param_name_) + ": " + python_json_dumps(value);
  add_arguments(fragment, out);
  ++params_sent_;
}

ToolCallParser::CallStatus Qwen3CoderToolParser::parse_call(std::string_view text, bool at_end, ChatDelta& out,
                                                            size_t& consumed) {
  for (;;) {
    switch (phase_) {
      case Phase::ExpectFunction: {
        std::string_view rest = lstrip(text.substr(pos_));
        TagMatch m = match_tag(rest, kFunctionOpen);
        if (m == TagMatch::No || (m == TagMatch::Maybe && at_end)) return CallStatus::Malformed;
        if (m == TagMatch::Maybe) return CallStatus::NeedMore;
        size_t name_start = text.size() - rest.size() + kFunctionOpen.size();
        size_t gt = text.find('>', name_start);
        std::string_view name = text.substr(name_start, gt == npos ? npos : gt - name_start);
        if (!valid_function_name_chars(name)) return CallStatus::Malformed;
        if (gt == npos) return at_end ? CallStatus::Malformed : CallStatus::NeedMore;
        if (name.empty()) return CallStatus::Malformed;
        open_call(std::string(name), out);
        add_arguments("{", out);
        properties_ = find_tool_properties(tools_, name);
        pos_ = gt + 1;
        phase_ = Phase::Body;
        break;
      }
      case Phase::Body: {
        // Between parameters: skip anything up to the next tag.
        size_t param = text.find(kParameterOpen, pos_);
        size_t fn_close = text.find(kFunctionClose, pos_);
        size_t call_close = text.find(kToolCallClose, pos_);
        size_t first = std::min({param, fn_close, call_close});
        if (first == npos || (first == param && text.find('>', param + kParameterOpen.size()) == npos)) {
          if (!at_end) return CallStatus::NeedMore;
          add_arguments("}", out);  // truncated output: close what was sent
          consumed = text.size();
          return CallStatus::Closed;
        }
        if (first == param) {
          size_t gt = text.find('>', param + kParameterOpen.size());
          param_name_ = std::string(text.substr(param + kParameterOpen.size(), gt - param - kParameterOpen.size()));
          value_start_ = value_scan_ = gt + 1;
          phase_ = Phase::Value;
        } else if (first == fn_close) {
          add_arguments("}", out);
          pos_ = fn_close + kFunctionClose.size();
          phase_ = Phase::AfterFunction;
        } else {
          add_arguments("}", out);  // "</tool_call>" without "</function>"
          consumed = call_close + kToolCallClose.size();
          return CallStatus::Closed;
        }
        break;
      }
      case Phase::Value: {
        size_t close = text.find(kParameterClose, value_scan_);
        if (close == npos) {
          if (!at_end) {
            size_t keep = partial_tag_overlap(text.substr(value_scan_), kParameterClose);
            value_scan_ = text.size() - keep;
            return CallStatus::NeedMore;
          }
          size_t end = unterminated_value_end(text, value_start_);
          emit_parameter(text.substr(value_start_, end - value_start_), out);
          add_arguments("}", out);
          consumed = text.size();
          return CallStatus::Closed;
        }
        TagMatch m = structural_after_parameter(text.substr(close + kParameterClose.size()));
        if (m == TagMatch::Maybe && !at_end) {
          value_scan_ = close;
          return CallStatus::NeedMore;
        }
        if (m == TagMatch::No) {
          value_scan_ = close + 1;  // a literal "</parameter>" inside the value
          break;
        }
        emit_parameter(text.substr(value_start_, close - value_start_), out);
        pos_ = close + kParameterClose.size();
        phase_ = Phase::Body;
        break;
      }
      case Phase::AfterFunction: {
        std::string_view rest = lstrip(text.substr(pos_));
        TagMatch m = match_tag(rest, kToolCallClose);
        if (m == TagMatch::Maybe && !at_end) return CallStatus::NeedMore;
        if (m == TagMatch::Yes) consumed = text.size() - rest.size() + kToolCallClose.size();
        else if (m == TagMatch::Maybe) consumed = text.size();
        else consumed = pos_;  // no "</tool_call>": the call ends with its function
        return CallStatus::Closed;
      }
    }
  }
}

}  // namespace dcu::text
