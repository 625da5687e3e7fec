#include "server/openai_schema.h"

#include <cmath>
#include <limits>

#include "server/errors.h"

namespace dcu::server {
namespace {

using json = nlohmann::ordered_json;  // keys keep the order the client sent (templates render them)

// Typed, range-checked access to the fields of one JSON object. A null field counts as absent.
class Fields {
 public:
  explicit Fields(const json& object, std::string prefix = "") : o_(object), prefix_(std::move(prefix)) {}

  const json* find(const char* key) const {
    auto it = o_.find(key);
    if (it == o_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  std::string name(const char* key) const { return prefix_ + key; }
  const json& object_itself() const { return o_; }

  std::optional<bool> boolean(const char* key) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) reject(name(key), "'{}' must be a boolean", name(key));
    return v->get<bool>();
  }
  std::optional<std::string> string(const char* key) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) reject(name(key), "'{}' must be a string", name(key));
    return v->get<std::string>();
  }
  std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    int64_t x = 0;
    if (v->is_number_integer()) {
      if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        reject(name(key), "'{}' must be an integer between {} and {}", name(key), lo, hi);
      x = v->get<int64_t>();
    } else if (v->is_number_float() && std::isfinite(v->get<double>()) && v->get<double>() == std::floor(v->get<double>()) &&
               std::fabs(v->get<double>()) < 9e15) {
      x = static_cast<int64_t>(v->get<double>());  // 5.0 is accepted as 5, like pydantic
    } else {
      reject(name(key), "'{}' must be an integer", name(key));
    }
    if (x < lo || x > hi) reject(name(key), "'{}' must be an integer between {} and {}, got {}", name(key), lo, hi, x);
    return x;
  }
  // Range [lo, hi]; `lo_open` makes the lower bound exclusive.
  std::optional<float> number(const char* key, double lo, double hi, bool lo_open = false) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) reject(name(key), "'{}' must be a number", name(key));
    double x = v->get<double>();
    if (!std::isfinite(x) || x > hi || x < lo || (lo_open && x == lo))
      reject(name(key), "'{}' must be a number in {}{}, {}], got {}", name(key), lo_open ? "(" : "[", lo, hi, x);
    return static_cast<float>(x);
  }
  const json* object(const char* key) const {
    const json* v = find(key);
    if (v && !v->is_object()) reject(name(key), "'{}' must be an object", name(key));
    return v;
  }
  const json* array(const char* key) const {
    const json* v = find(key);
    if (v && !v->is_array()) reject(name(key), "'{}' must be an array", name(key));
    return v;
  }

 private:
  const json& o_;
  std::string prefix_;
};

std::vector<int32_t> token_id_list(const json& a, const std::string& param) {
  std::vector<int32_t> ids;
  ids.reserve(a.size());
  for (const auto& x : a) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > std::numeric_limits<int32_t>::max())
      reject(param, "'{}' must contain only non-negative integer token ids", param);
    ids.push_back(x.get<int32_t>());
  }
  return ids;
}

CommonParams parse_common(const Fields& f, bool chat, int max_logprobs) {
  CommonParams p;
  p.model = f.string("model");
  if (auto n = f.integer("n", 1, 128)) p.n = static_cast<int>(*n);
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  if (auto v = f.integer("max_tokens", 0, kMaxInt)) p.max_tokens = static_cast<int>(*v);
  if (chat)
    if (auto v = f.integer("max_completion_tokens", 0, kMaxInt)) p.max_tokens = static_cast<int>(*v);
  p.stream = f.boolean("stream").value_or(false);
  if (const json* so = f.object("stream_options")) {
    if (!p.stream) reject(std::string("stream_options"), "'stream_options' is only allowed when 'stream' is true");
    Fields s(*so, "stream_options.");
    p.include_usage = s.boolean("include_usage").value_or(false);
    p.continuous_usage_stats = s.boolean("continuous_usage_stats").value_or(false);
  }
  if (const json* stop = f.find("stop")) {
    if (stop->is_string()) {
      p.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const auto& s : *stop) {
        if (!s.is_string()) reject(std::string("stop"), "'stop' must be a string or a list of strings");
        p.stop.push_back(s.get<std::string>());
      }
    } else {
      reject(std::string("stop"), "'stop' must be a string or a list of strings");
    }
    for (const auto& s : p.stop)
      if (s.empty()) reject(std::string("stop"), "'stop' must not contain empty strings");
  }
  if (const json* ids = f.array("stop_token_ids")) p.stop_token_ids = token_id_list(*ids, "stop_token_ids");
  p.temperature = f.number("temperature", 0.0, 2.0);
  p.top_p = f.number("top_p", 0.0, 1.0, /*lo_open=*/true);
  if (auto k = f.integer("top_k", -1, kMaxInt)) p.top_k = static_cast<int>(*k);
  p.min_p = f.number("min_p", 0.0, 1.0);
  p.presence_penalty = f.number("presence_penalty", -2.0, 2.0).value_or(0.0f);
  p.frequency_penalty = f.number("frequency_penalty", -2.0, 2.0).value_or(0.0f);
  p.repetition_penalty = f.number("repetition_penalty", 0.0, 2.0, /*lo_open=*/true);
  if (const json* seed = f.find("seed")) {
    if (!seed->is_number_integer()) reject(std::string("seed"), "'seed' must be an integer");
    p.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  p.ignore_eos = f.boolean("ignore_eos").value_or(false);
  if (auto v = f.integer("min_tokens", 0, kMaxInt)) p.min_tokens = static_cast<int>(*v);
  if (p.max_tokens && p.min_tokens > *p.max_tokens)
    reject(std::string("min_tokens"), "'min_tokens' must be less than or equal to 'max_tokens'");
  p.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  p.include_stop_str_in_output = f.boolean("include_stop_str_in_output").value_or(false);
  if (auto k = f.integer("truncate_prompt_tokens", -1, kMaxInt)) {
    if (*k == 0) reject(std::string("truncate_prompt_tokens"), "'truncate_prompt_tokens' must be -1 or at least 1");
    p.truncate_prompt_tokens = static_cast<int>(*k);
  }
  p.return_tokens_as_token_ids = f.boolean("return_tokens_as_token_ids").value_or(false);
  if (auto k = f.integer("prompt_logprobs", 0, max_logprobs)) {
    if (p.stream) reject(std::string("prompt_logprobs"), "'prompt_logprobs' are not available when 'stream' is true");
    p.prompt_logprobs = static_cast<int>(*k);
  }

  // Fields we understand but do not implement yet: refuse rather than silently ignore.
  if (auto best_of = f.integer("best_of", 1, 128); best_of && *best_of != p.n)
    reject(std::string("best_of"), "'best_of' is only supported when it equals 'n' ({} != {})", *best_of, p.n);
  if (const json* lb = f.object("logit_bias"); lb && !lb->empty())
    reject(std::string("logit_bias"), "'logit_bias' is not supported yet");
  p.constraint = parse_constraint_fields(f.object_itself());
  return p;
}

// Normalises a message's content to a string: text parts are concatenated, other parts refused.
std::string content_text(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) reject(param, "'{}' must be a string or a list of content parts", param);
  std::string text;
  for (const auto& part : content) {
    if (!part.is_object()) reject(param, "'{}' must contain content part objects", param);
    Fields pf(part, param + "[].");
    auto type = pf.string("type");
    if (type == "text") {
      auto t = pf.string("text");
      if (!t) reject(param + "[].text", "a text content part needs a string 'text'");
      text += *t;
    } else {
      reject(param, "content parts of type '{}' are not supported; only 'text' is", type.value_or(""));
    }
  }
  return text;
}

json parse_messages(const json& messages) {
  if (!messages.is_array() || messages.empty())
    reject(std::string("messages"), "'messages' must be a non-empty list");
  json out = json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string param = "messages[" + std::to_string(i) + "]";
    const json& m = messages[i];
    if (!m.is_object()) reject(param, "'{}' must be an object", param);
    Fields f(m, param + ".");
    auto role = f.string("role");
    if (!role) reject(param + ".role", "'{}.role' is required", param);
    static const char* kRoles[] = {"system", "developer", "user", "assistant", "tool"};
    if (std::find(std::begin(kRoles), std::end(kRoles), *role) == std::end(kRoles))
      reject(param + ".role", "unknown role '{}'", *role);
    json msg = json::object();
    msg["role"] = *role;
    const json* content = f.find("content");
    if (content) msg["content"] = content_text(*content, param + ".content");
    else if (*role != "assistant") reject(param + ".content", "'{}.content' is required for role '{}'", param, *role);
    else msg["content"] = "";
    if (auto r = f.string("reasoning_content")) msg["reasoning_content"] = *r;
    else if (auto r2 = f.string("reasoning")) msg["reasoning_content"] = *r2;
    if (auto name = f.string("name")) msg["name"] = *name;
    if (auto id = f.string("tool_call_id")) msg["tool_call_id"] = *id;
    if (const json* calls = f.array("tool_calls")) {
      json tc = json::array();
      for (const auto& c : *calls) {
        const json* fn = c.is_object() && c.contains("function") ? &c["function"] : nullptr;
        if (!fn || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
          reject(param + ".tool_calls", "each tool call needs a function with a string 'name'");
        json call = c;
        // Chat templates iterate over arguments as a mapping; OpenAI sends a JSON string (vLLM parses it too).
        if (fn->contains("arguments") && (*fn)["arguments"].is_string()) {
          // An empty string is a call without arguments (vLLM reads it as {}).
          const std::string text = (*fn)["arguments"].get<std::string>();
          json args = text.empty() ? json::object() : json::parse(text, nullptr, false);
          if (args.is_discarded()) reject(param + ".tool_calls", "tool call arguments must be a JSON string");
          call["function"]["arguments"] = args;
        }
        tc.push_back(std::move(call));
      }
      msg["tool_calls"] = std::move(tc);
    }
    out.push_back(std::move(msg));
  }
  return out;
}

json parse_tools(const json& tools) {
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string param = "tools[" + std::to_string(i) + "]";
    const json& t = tools[i];
    if (!t.is_object()) reject(param, "'{}' must be an object", param);
    Fields f(t, param + ".");
    if (f.string("type").value_or("function") != "function") reject(param + ".type", "only 'function' tools are supported");
    const json* fn = f.object("function");
    if (!fn) reject(param + ".function", "'{}.function' is required", param);
    Fields ff(*fn, param + ".function.");
    if (!ff.string("name")) reject(param + ".function.name", "'{}.function.name' is required", param);
    ff.string("description");
    ff.object("parameters");
  }
  return tools;
}

ToolChoice parse_tool_choice(const json* v, bool have_tools) {
  ToolChoice choice;
  choice.kind = have_tools ? ToolChoice::Kind::Auto : ToolChoice::Kind::None;
  if (!v) return choice;
  if (v->is_string()) {
    const auto s = v->get<std::string>();
    if (s == "none") choice.kind = ToolChoice::Kind::None;
    else if (s == "auto") choice.kind = ToolChoice::Kind::Auto;
    else if (s == "required") choice.kind = ToolChoice::Kind::Required;
    else reject(std::string("tool_choice"), "'tool_choice' must be 'none', 'auto', 'required' or a named function");
  } else if (v->is_object()) {
    const json* fn = v->contains("function") ? &(*v)["function"] : nullptr;
    if (!fn || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
      reject(std::string("tool_choice"), "a named 'tool_choice' needs {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}");
    choice.kind = ToolChoice::Kind::Named;
    choice.function_name = (*fn)["name"].get<std::string>();
  } else {
    reject(std::string("tool_choice"), "'tool_choice' must be a string or an object");
  }
  if (choice.kind != ToolChoice::Kind::None && !have_tools)
    reject(std::string("tool_choice"), "When using `tool_choice`, `tools` must be set.");
  return choice;
}

}  // namespace

nlohmann::ordered_json parse_json_body(std::string_view body, int max_depth) {
  // nlohmann parses iteratively, but later recursive walks (dump, templates) must not see deep nesting.
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) reject(std::nullopt, "JSON nesting deeper than {} levels", max_depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) reject(std::nullopt, "The request body is not valid JSON.");
  if (!j.is_object()) reject(std::nullopt, "The request body must be a JSON object.");
  return j;
}

CompletionRequest parse_completion_request(const json& body, int max_logprobs) {
  Fields f(body);
  CompletionRequest r;
  r.common = parse_common(f, /*chat=*/false, max_logprobs);
  const json* prompt = f.find("prompt");
  if (!prompt) reject(std::string("prompt"), "'prompt' is required");
  const char* kPromptType = "'prompt' must be a string, a list of strings, a list of token ids or a list of lists of token ids";
  if (prompt->is_string()) {
    r.prompts.emplace_back(prompt->get<std::string>());
  } else if (prompt->is_array() && !prompt->empty()) {
    if ((*prompt)[0].is_number_integer()) {
      r.prompts.emplace_back(token_id_list(*prompt, "prompt"));
    } else {
      for (const auto& p : *prompt) {
        if (p.is_string()) r.prompts.emplace_back(p.get<std::string>());
        else if (p.is_array()) r.prompts.emplace_back(token_id_list(p, "prompt"));
        else reject(std::string("prompt"), "{}", kPromptType);
      }
    }
  } else {
    reject(std::string("prompt"), "{}", kPromptType);
  }
  for (const auto& p : r.prompts)
    if (std::holds_alternative<std::string>(p) ? std::get<std::string>(p).empty() : std::get<std::vector<int32_t>>(p).empty())
      reject(std::string("prompt"), "'prompt' must not be empty");
  if (r.prompts.size() * r.common.n > 1024) reject(std::string("prompt"), "too many prompts x n (at most 1024)");
  r.echo = f.boolean("echo").value_or(false);
  if (auto lp = f.integer("logprobs", 0, max_logprobs)) r.logprobs = static_cast<int>(*lp);
  if (f.find("suffix")) reject(std::string("suffix"), "'suffix' is not currently supported");
  if (r.common.max_tokens == 0 && !(r.echo && r.logprobs))
    reject(std::string("max_tokens"), "'max_tokens' must be at least 1 unless echo and logprobs are set");
  return r;
}

ChatRequest parse_chat_request(const json& body, int max_logprobs) {
  Fields f(body);
  ChatRequest r;
  r.common = parse_common(f, /*chat=*/true, max_logprobs);
  if (r.common.max_tokens == 0) reject(std::string("max_tokens"), "'max_tokens' must be at least 1");
  const json* messages = f.find("messages");
  if (!messages) reject(std::string("messages"), "'messages' is required");
  r.messages = parse_messages(*messages);
  if (const json* tools = f.array("tools"); tools && !tools->empty()) r.tools = parse_tools(*tools);
  r.tool_choice = parse_tool_choice(f.find("tool_choice"), !r.tools.is_null());
  r.parallel_tool_calls = f.boolean("parallel_tool_calls").value_or(true);
  r.logprobs = f.boolean("logprobs").value_or(false);
  if (auto k = f.integer("top_logprobs", 0, max_logprobs)) {
    if (!r.logprobs && *k > 0) reject(std::string("top_logprobs"), "'top_logprobs' requires 'logprobs' to be true");
    r.top_logprobs = static_cast<int>(*k);
  }
  r.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  r.continue_final_message = f.boolean("continue_final_message").value_or(false);
  if (r.add_generation_prompt && r.continue_final_message)
    reject(std::string("continue_final_message"),
           "Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
  if (r.continue_final_message && r.messages.back()["role"] != "assistant")
    reject(std::string("continue_final_message"), "'continue_final_message' needs an assistant message last");
  if (const json* kw = f.object("chat_template_kwargs")) r.chat_template_kwargs = *kw;
  if (f.find("chat_template")) reject(std::string("chat_template"), "a per-request 'chat_template' is not accepted");
  if (auto echo = f.boolean("echo"); echo && *echo) reject(std::string("echo"), "'echo' is not supported for chat");
  return r;
}

TokenizeRequest parse_tokenize_request(const json& body) {
  Fields f(body);
  TokenizeRequest r;
  r.model = f.string("model");
  r.return_token_strs = f.boolean("return_token_strs").value_or(false);
  f.boolean("add_special_tokens");
  if (f.find("messages")) {
    r.chat = parse_chat_request(body, 0);
  } else {
    r.prompt = f.string("prompt");
    if (!r.prompt) reject(std::string("prompt"), "either 'prompt' or 'messages' is required");
  }
  return r;
}

DetokenizeRequest parse_detokenize_request(const json& body) {
  Fields f(body);
  DetokenizeRequest r;
  r.model = f.string("model");
  const json* tokens = f.array("tokens");
  if (!tokens) reject(std::string("tokens"), "'tokens' is required");
  r.tokens = token_id_list(*tokens, "tokens");
  return r;
}

SamplingParams make_sampling_params(const CommonParams& p, const GenerationDefaults& d) {
  SamplingParams s;
  s.temperature = p.temperature.value_or(d.temperature.value_or(1.0f));
  s.top_p = p.top_p.value_or(d.top_p.value_or(1.0f));
  s.top_k = p.top_k.value_or(d.top_k.value_or(-1));
  s.min_p = p.min_p.value_or(d.min_p.value_or(0.0f));
  s.repetition_penalty = p.repetition_penalty.value_or(d.repetition_penalty.value_or(1.0f));
  s.presence_penalty = p.presence_penalty;
  s.frequency_penalty = p.frequency_penalty;
  s.seed = p.seed;
  s.min_tokens = p.min_tokens;
  s.ignore_eos = p.ignore_eos;
  s.stop_token_ids = p.stop_token_ids;
  if (!p.ignore_eos)
    for (int32_t id : d.eos_token_ids)
      if (std::find(s.stop_token_ids.begin(), s.stop_token_ids.end(), id) == s.stop_token_ids.end())
        s.stop_token_ids.push_back(id);
  return s;
}

void truncate_prompt(std::vector<int32_t>& ids, const CommonParams& p, int max_model_len) {
  if (!p.truncate_prompt_tokens) return;
  const int k = *p.truncate_prompt_tokens == -1 ? max_model_len : *p.truncate_prompt_tokens;
  if (k > max_model_len)
    reject(std::string("truncate_prompt_tokens"),
           "'truncate_prompt_tokens' ({}) cannot be greater than the model's maximum context length ({})", k,
           max_model_len);
  if (int(ids.size()) > k) ids.erase(ids.begin(), ids.end() - k);
}

int resolve_max_tokens(const CommonParams& p, const ServerConfig& config, int prompt_tokens, int max_model_len,
                       bool allow_zero) {
  if (prompt_tokens >= max_model_len + (allow_zero ? 1 : 0))
    reject(std::nullopt,
           "This model's maximum context length is {} tokens. However, your request has {} input tokens. Please "
           "reduce the length of the input messages.",
           max_model_len, prompt_tokens);
  const int cap = config.max_tokens_cap;
  if (p.max_tokens) {
    if (cap > 0 && *p.max_tokens > cap)
      reject(std::string("max_tokens"), "'max_tokens' is at most {} on this server, got {}", cap, *p.max_tokens);
    if (int64_t(prompt_tokens) + *p.max_tokens > max_model_len)
      reject(std::string("max_tokens"),
             "This model's maximum context length is {} tokens. However, you requested {} tokens ({} in the "
             "messages, {} in the completion). Please reduce the length of the messages or completion.",
             max_model_len, int64_t(prompt_tokens) + *p.max_tokens, prompt_tokens, *p.max_tokens);
    return *p.max_tokens;
  }
  int room = max_model_len - prompt_tokens;
  if (config.defaults.max_new_tokens) room = std::min(room, *config.defaults.max_new_tokens);
  return cap > 0 ? std::min(room, cap) : room;
}

}  // namespace dcu::server
