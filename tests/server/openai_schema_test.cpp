// Parsing and validation of request bodies: the bad-input battery and the mapping to engine parameters.
#include "server/openai_schema.h"

#include <gtest/gtest.h>

#include "server/errors.h"

namespace dcu::server {
namespace {

using nlohmann::json;

// The 400 that `parse` raises for `body`, or a failure when it accepts it.
template <typename Parse>
ApiError error_of(Parse parse, const std::string& body) {
  try {
    parse(parse_json_body(body), 20);
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

ApiError completion_error(const std::string& body) { return error_of(parse_completion_request, body); }
ApiError chat_error(const std::string& body) { return error_of(parse_chat_request, body); }

TEST(OpenAiSchema, MalformedJsonAndNonObjects) {
  for (const char* body : {"", "{", "{\"prompt\": }", "[1,2]", "\"text\"", "nul", "{\"a\":1}x", "\xff\xfe"}) {
    auto e = completion_error(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.type, "invalid_request_error");
  }
  const std::string deep = R"({"prompt": )" + std::string(300, '[') + std::string(300, ']') + "}";
  EXPECT_NE(completion_error(deep).message.find("deeper than 256"), std::string::npos);  // too deep
  EXPECT_THROW(parse_json_body(R"({"a": [[[[1]]]]})", 4), ApiException);  // the limit is the caller's
  EXPECT_NO_THROW(parse_json_body(R"({"a": [[[1]]]})", 4));
}

TEST(OpenAiSchema, CompletionFieldTypesAndRanges) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "prompt"},
      {R"({"prompt": 5})", "prompt"},
      {R"({"prompt": []})", "prompt"},
      {R"({"prompt": [1, "a"]})", "prompt"},
      {R"({"prompt": [[1, -2]]})", "prompt"},
      {R"({"prompt": ""})", "prompt"},
      {R"({"prompt": "x", "temperature": "hot"})", "temperature"},
      {R"({"prompt": "x", "temperature": 2.5})", "temperature"},
      {R"({"prompt": "x", "temperature": -0.1})", "temperature"},
      {R"({"prompt": "x", "top_p": 0})", "top_p"},
      {R"({"prompt": "x", "top_p": 1.01})", "top_p"},
      {R"({"prompt": "x", "top_k": -2})", "top_k"},
      {R"({"prompt": "x", "top_k": 1.5})", "top_k"},
      {R"({"prompt": "x", "min_p": 2})", "min_p"},
      {R"({"prompt": "x", "presence_penalty": 3})", "presence_penalty"},
      {R"({"prompt": "x", "frequency_penalty": -2.5})", "frequency_penalty"},
      {R"({"prompt": "x", "repetition_penalty": 0})", "repetition_penalty"},
      {R"({"prompt": "x", "max_tokens": -1})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 0})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 1e30})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": "10"})", "max_tokens"},
      {R"({"prompt": "x", "n": 0})", "n"},
      {R"({"prompt": "x", "n": 2, "best_of": 3})", "best_of"},
      {R"({"prompt": "x", "stop": 3})", "stop"},
      {R"({"prompt": "x", "stop": ["a", 1]})", "stop"},
      {R"({"prompt": "x", "stop": [""]})", "stop"},
      {R"({"prompt": "x", "stop_token_ids": [1, "2"]})", "stop_token_ids"},
      {R"({"prompt": "x", "stream": "yes"})", "stream"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options"},
      {R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": 1}})", "stream_options.include_usage"},
      {R"({"prompt": "x", "logprobs": 21})", "logprobs"},
      {R"({"prompt": "x", "logprobs": true})", "logprobs"},
      {R"({"prompt": "x", "seed": "1"})", "seed"},
      {R"({"prompt": "x", "min_tokens": 5, "max_tokens": 2})", "min_tokens"},
      {R"({"prompt": "x", "response_format": {"type": "json_schema"}})", "response_format.json_schema"},
      {R"({"prompt": "x", "response_format": {"type": "grammar"}})", "response_format.type"},
      {R"({"prompt": "x", "guided_regex": "a", "guided_choice": ["b"]})", "guided_choice"},
      {R"({"prompt": "x", "structured_outputs": {"choice": []}})", "structured_outputs.choice"},
      {R"({"prompt": "x", "structured_outputs": {"json": "{not json"}})", "structured_outputs.json"},
      {R"({"prompt": "x", "response_format": {"type": "json_object"}, "guided_json": {}})", "guided_json"},
      {R"({"prompt": "x", "logit_bias": {"1": 5}})", "logit_bias"},
      {R"({"prompt": "x", "suffix": "y"})", "suffix"},
      {R"({"prompt": "x", "model": 3})", "model"},
      {R"({"prompt": "x", "ignore_eos": 1})", "ignore_eos"},
      {R"({"prompt": "x", "skip_special_tokens": "no"})", "skip_special_tokens"},
  };
  for (const auto& c : cases) {
    auto e = completion_error(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param.value_or("<none>"), c.param) << c.body << " -> " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(OpenAiSchema, StructuredOutputFields) {
  using Kind = structured::ConstraintSpec::Kind;
  auto constraint = [](const char* body) { return parse_completion_request(parse_json_body(body), 20).common.constraint; };
  EXPECT_FALSE(constraint(R"({"prompt": "x", "response_format": {"type": "text"}})"));
  auto c = constraint(R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "n",
                          "schema": {"type": "integer"}, "strict": true}}})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::JsonSchema);
  EXPECT_EQ(c->spec.schema, nlohmann::ordered_json::parse(R"({"type": "integer"})"));
  c = constraint(R"({"prompt": "x", "structured_outputs": {"regex": "a+", "whitespace_pattern": " ?"}})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::Regex);
  EXPECT_EQ(c->param, "structured_outputs.regex");
  c = constraint(R"({"prompt": "x", "guided_json": "{\"type\": \"string\"}", "guided_whitespace_pattern": ""})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.schema["type"], "string");
  EXPECT_EQ(c->spec.json.whitespace_pattern, std::optional<std::string>(""));
  c = constraint(R"({"prompt": "x", "structured_outputs": {"json_object": true}})");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->spec.json.strict);
  EXPECT_EQ(constraint(R"({"prompt": "x", "guided_choice": ["a", "b"]})")->spec.choices.size(), 2u);
}

TEST(OpenAiSchema, CompletionPromptForms) {
  auto r = parse_completion_request(parse_json_body(R"({"prompt": ["a", "bc"], "n": 2})"), 20);
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(std::get<std::string>(r.prompts[1]), "bc");
  r = parse_completion_request(parse_json_body(R"({"prompt": [1, 2, 3]})"), 20);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(r.prompts[0]), (std::vector<int32_t>{1, 2, 3}));
  r = parse_completion_request(parse_json_body(R"({"prompt": [[1], [2, 3]], "echo": true, "logprobs": 0, "max_tokens": 0})"), 20);
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.logprobs, 0);
  EXPECT_EQ(r.common.max_tokens, 0);
  // Nulls are absent values, as OpenAI clients send them.
  r = parse_completion_request(parse_json_body(R"({"prompt": "x", "temperature": null, "stop": null, "n": 1, "best_of": 1})"), 20);
  EXPECT_FALSE(r.common.temperature.has_value());
  r = parse_completion_request(parse_json_body(R"({"prompt": "x", "stop": "END", "max_tokens": 5.0})"), 20);
  EXPECT_EQ(r.common.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.common.max_tokens, 5);
}

TEST(OpenAiSchema, ChatValidation) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": [3]})", "messages[0]"},
      {R"({"messages": [{"content": "hi"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "robot", "content": "hi"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 0})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 3})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 30})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "auto"})", "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]})", "tools[0].function"},
      {R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "sometimes"})", "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "hi"}], "continue_final_message": true})", "continue_final_message"},
      {R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": false, "continue_final_message": true})", "continue_final_message"},
      {R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": []})", "chat_template_kwargs"},
      {R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}]})", "messages[0].tool_calls"},
  };
  for (const auto& c : cases) {
    auto e = chat_error(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param.value_or("<none>"), c.param) << c.body << " -> " << e.message;
  }
}

TEST(OpenAiSchema, ChatNormalisesMessages) {
  auto r = parse_chat_request(parse_json_body(R"({
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
      {"role": "tool", "content": "42", "tool_call_id": "c1"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "max_completion_tokens": 7, "logprobs": true, "top_logprobs": 2,
    "chat_template_kwargs": {"enable_thinking": false}})"), 20);
  EXPECT_EQ(r.messages[0]["content"], "a" "b");
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"], nlohmann::ordered_json({{"x", 1}}));
  EXPECT_EQ(r.messages[2]["tool_call_id"], "c1");
  EXPECT_EQ(r.tool_choice.kind, ToolChoice::Kind::Auto);  // tools without tool_choice mean auto, as in vLLM
  EXPECT_EQ(r.common.max_tokens, 7);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
}

TEST(OpenAiSchema, SamplingDefaultsComeFromGenerationConfig) {
  GenerationDefaults d;
  d.temperature = 0.7f;
  d.top_k = 20;
  d.top_p = 0.8f;
  d.eos_token_ids = {1000, 998};
  auto r = parse_completion_request(parse_json_body(R"({"prompt": "x", "top_p": 0.5, "stop_token_ids": [998]})"), 20);
  SamplingParams s = make_sampling_params(r.common, d);
  EXPECT_FLOAT_EQ(s.temperature, 0.7f);
  EXPECT_EQ(s.top_k, 20);
  EXPECT_FLOAT_EQ(s.top_p, 0.5f);                                      // the request wins
  EXPECT_EQ(s.stop_token_ids, (std::vector<int32_t>{998, 1000}));     // eos ids added once
  auto greedy = parse_completion_request(parse_json_body(R"({"prompt": "x", "temperature": 0})"), 20);
  EXPECT_FLOAT_EQ(make_sampling_params(greedy.common, d).temperature, 0.0f);
  EXPECT_FLOAT_EQ(make_sampling_params(greedy.common, {}).top_p, 1.0f);  // vLLM's own default
}

TEST(OpenAiSchema, MaxTokensCap) {
  ServerConfig c;
  c.max_tokens_cap = 64;
  CommonParams p;
  EXPECT_EQ(resolve_max_tokens(p, c, 100, 1024, false), 64);  // unset: the rest of the context, capped
  c.defaults.max_new_tokens = 50;
  EXPECT_EQ(resolve_max_tokens(p, c, 100, 1024, false), 50);
  p.max_tokens = 64;
  EXPECT_EQ(resolve_max_tokens(p, c, 100, 1024, false), 64);
  p.max_tokens = 65;
  try {
    resolve_max_tokens(p, c, 100, 1024, false);
    FAIL();
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().param, "max_tokens");
    EXPECT_EQ(e.error().message, "'max_tokens' is at most 64 on this server, got 65");
  }
}

TEST(OpenAiSchema, MaxTokensAndContextLength) {
  CommonParams p;
  EXPECT_EQ(resolve_max_tokens(p, {}, 100, 1024, false), 924);  // the rest of the context
  ServerConfig c;
  c.defaults.max_new_tokens = 50;
  EXPECT_EQ(resolve_max_tokens(p, c, 100, 1024, false), 50);
  p.max_tokens = 1000;
  try {
    resolve_max_tokens(p, {}, 100, 1024, false);
    FAIL();
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().message,
              "This model's maximum context length is 1024 tokens. However, you requested 1100 tokens (100 in the "
              "messages, 1000 in the completion). Please reduce the length of the messages or completion.");
  }
  p.max_tokens.reset();
  try {
    resolve_max_tokens(p, {}, 1024, 1024, false);
    FAIL();
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().message.rfind("This model's maximum context length is 1024 tokens. However, your request has "
                                      "1024 input tokens.", 0), 0u);
  }
}

TEST(OpenAiSchema, TokenizeAndDetokenize) {
  auto t = parse_tokenize_request(parse_json_body(R"({"prompt": "hi", "return_token_strs": true})"));
  EXPECT_EQ(t.prompt, "hi");
  EXPECT_TRUE(t.return_token_strs);
  t = parse_tokenize_request(parse_json_body(R"({"messages": [{"role": "user", "content": "hi"}]})"));
  ASSERT_TRUE(t.chat.has_value());
  EXPECT_THROW(parse_tokenize_request(parse_json_body(R"({})")), ApiException);
  EXPECT_EQ(parse_detokenize_request(parse_json_body(R"({"tokens": [1, 2]})")).tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_THROW(parse_detokenize_request(parse_json_body(R"({"tokens": [1.5]})")), ApiException);
  EXPECT_THROW(parse_detokenize_request(parse_json_body(R"({"tokens": "12"})")), ApiException);
}

TEST(OpenAiSchema, ErrorBodyHasOpenAiShape) {
  auto body = json::parse(error_body(invalid_request("bad", "temperature")));
  EXPECT_EQ(body["error"]["message"], "bad");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "temperature");
  EXPECT_EQ(body["error"]["code"], 400);
}

}  // namespace
}  // namespace dcu::server
