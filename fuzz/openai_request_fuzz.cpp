// libFuzzer target: arbitrary request bodies through the OpenAI endpoints with the demo model's real
// text side (tokenizer, chat template, reasoning and tool-call parsers): JSON parsing and its depth
// limit, validation of every field, structured-output constraints, the chat template, then a scripted
// generation through the detokenizer and the parsers. No body may give a 500 or a malformed answer.
//
// Input: byte 0 picks the endpoint; the rest is the body.
#include <cstdint>
#include <string>

#include "scripted_engine.h"
#include "server/text_adapter.h"

namespace {

using namespace dcu;

const server::ModelText& model_text() {
  static const auto text = server::load_model_text("models/dcuserve-demo", {"", "qwen3", "qwen3_coder"});
  return *text;
}

server::ServerConfig config() {
  server::ServerConfig c;
  c.served_model_names = {"models/dcuserve-demo"};
  c.max_tokens_cap = 64;
  c.reasoning_parser = "qwen3";
  c.tool_call_parser = "qwen3_coder";
  c.enable_auto_tool_choice = true;
  c.defaults = load_generation_defaults("models/dcuserve-demo");
  return c;
}

// What the fake engine generates: thinking, then a tool call, in the demo model's tokens.
std::vector<int32_t> script() {
  return model_text().encode(
      "<think>\nweather\n</think>\n\nLet me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n"
      "</parameter>\n</function>\n</tool_call><|im_end|>");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const server::ServerConfig cfg = config();
  static const std::vector<int32_t> tokens = script();
  static const char* kPaths[] = {"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize"};
  fuzz::ScriptedEngine engine(tokens, model_text().vocab_size());
  server::Metrics metrics(cfg.served_model_names.front());
  const server::ServerContext ctx{engine, model_text(), metrics, cfg};
  const server::Router router(ctx);
  server::HttpRequest request;
  request.method = "POST";
  request.path = kPaths[data[0] % 4];
  request.body.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  fuzz::check_answer(fuzz::run_to_end(router.handle(request), engine));
  return 0;
}
