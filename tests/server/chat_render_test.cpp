// What reaches the chat template from a request, through the server's own parsing (parse_json_body ->
// parse_chat_request -> render_chat_prompt) and the demo model's real template:
// - objects keep the caller's key order, as transformers' apply_chat_template and vLLM keep it (the
//   order the model was trained on); the goldens hold tools, tool-call arguments and nested schemas
//   whose keys are deliberately not sorted;
// - the `developer` role newer OpenAI clients send renders as `system` for templates without it;
// - a tool call with `arguments: ""` is a call without arguments.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "fake_engine.h"
#include "server/chat_handler.h"
#include "server/openai_schema.h"
#include "server/text_adapter.h"

namespace dcu::server {
namespace {

using ojson = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot open " << path;
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class ChatRender : public ::testing::Test {
 protected:
  std::string render(const std::string& body) {
    return render_chat_prompt(ctx, parse_chat_request(parse_json_body(body), 20));
  }
  testing::FakeEngine engine{{}};
  std::unique_ptr<ModelText> text = load_model_text("models/dcuserve-demo", {});
  Metrics metrics{"demo"};
  ServerConfig config = [] {
    ServerConfig c;
    c.served_model_names = {"demo"};
    return c;
  }();
  ServerContext ctx{engine, *text, metrics, config};
};

TEST_F(ChatRender, MatchesTransformersWithUnsortedKeys) {
  const ojson golden = ojson::parse(read_file("tests/data/chat-order/qwen35-unsorted-keys-golden.json"));
  ASSERT_GE(golden["chat"].size(), 6u);
  for (const auto& entry : golden["chat"]) {
    const std::string body = entry["request"].dump();  // the bytes a client sends, in its order
    SCOPED_TRACE(body);
    EXPECT_EQ(render(body), entry["rendered"].get<std::string>());
  }
}

TEST(ChatRenderBody, ParsedBodiesKeepInsertionOrder) {
  const ojson body = parse_json_body(R"({"z": 1, "messages": [{"role": "user", "content": "x"}], "a": {"y": 1, "b": 2}})");
  std::vector<std::string> keys;
  for (const auto& [key, value] : body.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "messages", "a"}));
  EXPECT_EQ(body["a"].dump(), R"({"y":1,"b":2})");
}

TEST_F(ChatRender, DeveloperRoleRendersAsSystem) {
  const std::string developer = render(R"({"messages": [{"role": "developer", "content": "Be brief."},
                                                       {"role": "user", "content": "Hi"}]})");
  const std::string system = render(R"({"messages": [{"role": "system", "content": "Be brief."},
                                                    {"role": "user", "content": "Hi"}]})");
  EXPECT_EQ(developer, system);
  EXPECT_NE(developer.find("<|im_start|>system\nBe brief."), std::string::npos) << developer;
}

TEST_F(ChatRender, EmptyArgumentsStringIsACallWithoutArguments) {
  const auto call = [](const char* arguments) {
    return fmt::format(R"({{"messages": [{{"role": "user", "content": "Time?"}},
        {{"role": "assistant", "content": "", "tool_calls": [{{"id": "c", "type": "function",
          "function": {{"name": "now", "arguments": {}}}}}]}}]}})", arguments);
  };
  EXPECT_EQ(render(call(R"("")")), render(call(R"("{}")")));
}

// An agent's tool schema nested 40 levels deep (80 JSON levels) reaches the template.
TEST_F(ChatRender, DeeplyNestedToolSchemasAreAccepted) {
  std::string schema = R"({"type": "string"})";
  for (int level = 0; level < 40; ++level)
    schema = R"({"type": "object", "properties": {"child": )" + schema + "}}";
  const std::string body = R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function",
      "function": {"name": "deep", "parameters": )" + schema + "}}]}";
  const std::string rendered = render(body);
  EXPECT_NE(rendered.find(R"("child": {"type": "string"})"), std::string::npos);
}

}  // namespace
}  // namespace dcu::server
