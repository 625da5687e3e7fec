#include "server/chat_handler.h"

#include "core/error.h"
#include "server/logprobs_format.h"
#include "server/sse.h"

namespace dcu::server {

using ojson = nlohmann::ordered_json;

std::string render_chat_prompt(const ServerContext& ctx, const ChatRequest& request) {
  ChatPrompt prompt;
  prompt.messages = request.messages;
  prompt.tools = request.tools;
  prompt.add_generation_prompt = request.add_generation_prompt;
  prompt.extra_kwargs = request.chat_template_kwargs;
  std::string rendered;
  try {
    rendered = ctx.text.render_chat(prompt);
  } catch (const Error& e) {
    reject(std::string("messages"), "the chat template failed: {}", e.what());
  }
  if (request.continue_final_message) {
    // Like transformers: cut everything the template adds after the final message's content.
    const std::string final_content = request.messages.back().value("content", "");
    size_t at = final_content.empty() ? std::string::npos : rendered.rfind(final_content);
    if (at == std::string::npos) reject(std::string("continue_final_message"), "the final message is not in the rendered prompt");
    rendered.resize(at + final_content.size());
  }
  return rendered;
}

namespace {

bool ends_inside_think(const std::string& prompt) {
  const size_t open = prompt.rfind("<think>");
  if (open == std::string::npos) return false;
  const size_t close = prompt.rfind("</think>");
  return close == std::string::npos || close < open;
}

// The grammar a forced tool choice or a structured-output field asks for; null when none does.
std::shared_ptr<const structured::TokenGrammar> constraint_grammar(const ServerContext& ctx, const ChatRequest& request) {
  using Kind = ToolChoice::Kind;
  const auto& constraint = request.common.constraint;
  const Kind kind = request.tool_choice.kind;
  if (kind != Kind::Required && kind != Kind::Named) {
    if (!constraint) return nullptr;
    return ctx.structured->compile(ctx.text, ctx.engine.vocab_size(), constraint->spec, constraint->param);
  }
  if (constraint)
    reject(constraint->param, "'{}' cannot be combined with tool_choice 'required' or a named function", constraint->param);
  structured::ConstraintSpec spec;
  spec.kind = structured::ConstraintSpec::Kind::ToolCalls;
  const std::string& parser = ctx.config.tool_call_parser;
  if (parser == "qwen3_coder") spec.tool_options.format = structured::ToolCallFormat::Qwen3CoderXml;
  else if (parser == "hermes") spec.tool_options.format = structured::ToolCallFormat::HermesJson;
  else reject(std::string("tool_choice"), "tool_choice 'required' and named functions need a --tool-call-parser");
  if (!request.tools.is_array() || request.tools.empty())
    reject(std::string("tools"), "tool_choice 'required' and named functions need a non-empty 'tools'");
  spec.tools = nlohmann::ordered_json::array();
  for (const auto& tool : request.tools)
    if (kind == Kind::Required || tool["function"]["name"] == request.tool_choice.function_name) spec.tools.push_back(tool);
  if (spec.tools.empty())
    reject(std::string("tool_choice"), "tool_choice names the function '{}', which is not in 'tools'",
           request.tool_choice.function_name);
  spec.tool_options.parallel = kind == Kind::Required && request.parallel_tool_calls;
  return ctx.structured->compile(ctx.text, ctx.engine.vocab_size(), spec, "tool_choice");
}

class ChatJob : public GenerationJob {
 public:
  ChatJob(const ServerContext& ctx, const ChatRequest& request)
      : GenerationJob(ctx, request.common),
        model_(ctx.model_name()),
        names_{ctx.text, request.common.return_tokens_as_token_ids},
        top_logprobs_(request.logprobs ? request.top_logprobs : -1),
        parallel_tool_calls_(request.parallel_tool_calls) {
    id_ = random_id("chatcmpl-");
    const auto& cfg = ctx.config;
    using Kind = ToolChoice::Kind;
    const Kind tool_kind = request.tool_choice.kind;
    if (tool_kind == Kind::Auto && !(cfg.enable_auto_tool_choice && !cfg.tool_call_parser.empty()))
      reject(std::string("tool_choice"),
             "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set");

    const std::string prompt = render_chat_prompt(ctx, request);
    std::vector<int32_t> ids = ctx.text.encode(prompt);
    if (ids.empty()) reject(std::string("messages"), "the rendered prompt is empty");
    truncate_prompt(ids, request.common, ctx.engine.max_model_len());
    ChatParserOptions parser;
    parser.parse_reasoning = !cfg.reasoning_parser.empty();
    parser.prompt_opened_think = ends_inside_think(prompt);
    parser.parse_tool_calls = tool_kind == Kind::Auto || tool_kind == Kind::Required || tool_kind == Kind::Named;
    if (parser.parse_tool_calls) parser.tools = request.tools;

    const auto& p = request.common;
    SamplingParams sampling = make_sampling_params(p, cfg.defaults);
    // Structured output: the answer (after any thinking) is constrained, each choice on its own.
    std::shared_ptr<const structured::TokenGrammar> grammar = constraint_grammar(ctx, request);
    std::vector<int32_t> end_tokens = sampling.stop_token_ids;
    end_tokens.insert(end_tokens.end(), cfg.defaults.eos_token_ids.begin(), cfg.defaults.eos_token_ids.end());
    const bool after_think = parser.parse_reasoning && parser.prompt_opened_think;
    sampling.max_tokens = resolve_max_tokens(p, cfg, int(ids.size()), ctx.engine.max_model_len(), false);
    sampling.logprobs = top_logprobs_;
    sampling.prompt_logprobs = p.prompt_logprobs.value_or(-1);
    set_prompt_tokens(0, int(ids.size()));
    for (int j = 0; j < p.n; ++j) {
      GenerationRequest r{ids, sampling};
      if (r.sampling.seed && j > 0) r.sampling.seed = *r.sampling.seed + j;
      if (j > 0) r.sampling.prompt_logprobs = -1;  // the choices share the prompt: the first one computes them
      if (grammar) r.sampling.constraint = StructuredOutputs::constraint(grammar, end_tokens, after_think);
      add_choice(0, std::move(r), ctx.text.open_stream(p.skip_special_tokens, p.stop));
      Output out;
      out.parser = ctx.text.open_chat_parser(parser);
      outputs_.push_back(std::move(out));
    }
  }

 protected:
  std::string on_output(Choice& c, std::string text, std::span<const SampledToken> tokens,
                        const GenerationEvent& event) override {
    Output& out = outputs_[c.index];
    if (c.index == 0 && !event.prompt_logprobs.empty()) prompt_logprobs_ = prompt_logprobs_json(names_, event.prompt_logprobs);
    ChatDelta delta = out.parser->feed(text);
    if (c.finished) merge(delta, out.parser->finish());
    if (!parallel_tool_calls_)  // vLLM returns the first call only
      std::erase_if(delta.tool_calls, [](const ToolCallDelta& call) { return call.index > 0; });
    ojson lp = ojson::array();
    if (top_logprobs_ >= 0)
      for (const auto& t : tokens) lp.push_back(chat_logprob_entry(names_, t, top_logprobs_));
    for (auto& call : delta.tool_calls) {
      if (call.index >= int(out.tool_ids.size())) out.tool_ids.resize(call.index + 1);
      if (out.tool_ids[call.index].empty()) {
        out.tool_ids[call.index] = call.id.empty() ? random_id("chatcmpl-tool-") : call.id;
        call.id = out.tool_ids[call.index];
      }
    }
    if (!delta.tool_calls.empty()) out.called_tools = true;
    const std::string reason = finish_reason(c, out);
    if (!streaming()) {
      out.content += delta.content;
      out.reasoning += delta.reasoning_content;
      for (const auto& call : delta.tool_calls) {
        if (call.index >= int(out.calls.size())) out.calls.resize(call.index + 1);
        auto& whole = out.calls[call.index];
        if (!call.id.empty()) whole.id = call.id;
        whole.name += call.name;
        whole.arguments += call.arguments;
      }
      for (auto& e : lp) out.logprobs.push_back(std::move(e));
      return {};
    }
    if (c.finish_reason == "error") return sse_event(ojson::parse(error_body(internal_error(c.error))));
    std::string sse;
    if (!out.sent_role) {
      out.sent_role = true;
      sse += sse_event(chunk(c, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr));
    }
    if (delta.empty() && !c.finished && lp.empty()) return sse;
    ojson d = ojson::object();
    if (!delta.reasoning_content.empty()) d["reasoning_content"] = delta.reasoning_content;
    if (!delta.content.empty() || (delta.reasoning_content.empty() && delta.tool_calls.empty() && !c.finished))
      d["content"] = delta.content;
    if (!delta.tool_calls.empty()) {
      ojson calls = ojson::array();
      for (const auto& call : delta.tool_calls) {
        ojson fn = ojson::object();
        if (!call.name.empty()) fn["name"] = call.name;
        fn["arguments"] = call.arguments;
        ojson item = {{"index", call.index}};
        if (!call.id.empty()) {
          item["id"] = call.id;
          item["type"] = "function";
        }
        item["function"] = std::move(fn);
        calls.push_back(std::move(item));
      }
      d["tool_calls"] = std::move(calls);
    }
    ojson logprobs = top_logprobs_ >= 0 ? ojson{{"content", std::move(lp)}} : ojson(nullptr);
    return sse + sse_event(chunk(c, std::move(d), std::move(logprobs), c.finished ? ojson(reason) : ojson(nullptr)));
  }

  ojson full_response() override {
    ojson list = ojson::array();
    for (auto& c : choices()) {
      Output& out = outputs_[c.index];
      ojson message = {{"role", "assistant"}, {"content", out.content}, {"refusal", nullptr}};
      if (!out.reasoning.empty()) message["reasoning_content"] = out.reasoning;
      ojson calls = ojson::array();
      for (const auto& call : out.calls)
        calls.push_back({{"id", call.id}, {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      message["tool_calls"] = std::move(calls);
      if (out.content.empty() && out.called_tools) message["content"] = nullptr;
      list.push_back({{"index", c.index}, {"message", std::move(message)},
                      {"logprobs", top_logprobs_ >= 0 ? ojson{{"content", out.logprobs}} : ojson(nullptr)},
                      {"finish_reason", finish_reason(c, out)}, {"stop_reason", c.stop_reason}});
    }
    ojson r = {{"id", id_}, {"object", "chat.completion"}, {"created", created_}, {"model", model_},
               {"system_fingerprint", nullptr}, {"choices", std::move(list)}};
    r["usage"] = usage();
    r["prompt_logprobs"] = prompt_logprobs_;
    return r;
  }

  ojson usage_chunk() override {
    return {{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", model_},
            {"system_fingerprint", nullptr}, {"choices", ojson::array()}, {"usage", usage()}};
  }

 private:
  struct WholeCall {
    std::string id, name, arguments;
  };
  struct Output {
    std::unique_ptr<ChatOutputParser> parser;
    std::string content, reasoning;
    std::vector<WholeCall> calls;
    std::vector<std::string> tool_ids;
    ojson logprobs = ojson::array();
    bool called_tools = false;
    bool sent_role = false;
  };

  static void merge(ChatDelta& into, ChatDelta&& more) {
    into.content += more.content;
    into.reasoning_content += more.reasoning_content;
    for (auto& call : more.tool_calls) into.tool_calls.push_back(std::move(call));
  }

  static std::string finish_reason(const Choice& c, const Output& out) {
    return c.finish_reason == "stop" && out.called_tools ? "tool_calls" : c.finish_reason;
  }

  ojson chunk(const Choice& c, ojson delta, ojson logprobs, ojson finish) const {
    ojson stop_reason = finish.is_null() ? ojson(nullptr) : c.stop_reason;
    ojson choice = {{"index", c.index}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)},
                    {"finish_reason", std::move(finish)}, {"stop_reason", std::move(stop_reason)}};
    ojson r = {{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", model_},
               {"system_fingerprint", nullptr}, {"choices", ojson::array({std::move(choice)})}};
    add_chunk_usage(r, c);
    return r;
  }

  std::string model_;
  TokenNames names_;
  int top_logprobs_;
  bool parallel_tool_calls_;
  ojson prompt_logprobs_;  // of the prompt (every choice shares it); null unless asked for
  std::vector<Output> outputs_;
};

}  // namespace

std::shared_ptr<GenerationJob> make_chat_job(const ServerContext& ctx, const ChatRequest& request) {
  return std::make_shared<ChatJob>(ctx, request);
}

}  // namespace dcu::server
