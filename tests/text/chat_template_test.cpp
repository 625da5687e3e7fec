// Chat rendering: Hugging Face apply_chat_template goldens, and a corpus of real chat templates
// over many message lists compared with python3-jinja2 configured as transformers does.
#include "text/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "jinja_reference.h"

namespace dcu::test {
namespace {

using json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot open " << path;
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A golden case: {"messages", "tools"?, "add_generation_prompt", other keys = template kwargs}.
ChatRenderInput input_from_case(const json& c) {
  ChatRenderInput in;
  for (const auto& [key, value] : c.items()) {
    if (key == "messages") in.messages = value;
    else if (key == "tools") in.tools = value;
    else if (key == "add_generation_prompt") in.add_generation_prompt = value.get<bool>();
    else in.extra_kwargs[key] = value;
  }
  return in;
}

void expect_goldens(const std::string& template_source, const std::string& golden_path) {
  ChatTemplate tmpl(template_source);
  json golden = json::parse(read_file(golden_path));
  ASSERT_GT(golden["chat"].size(), 0u);
  for (const auto& entry : golden["chat"]) {
    SCOPED_TRACE(entry["case"].dump());
    EXPECT_EQ(tmpl.render(input_from_case(entry["case"])), entry["rendered"].get<std::string>());
  }
}

TEST(ChatTemplate, Qwen35MatchesTransformersGoldens) {
  expect_goldens(read_file("tests/data/tokenizer/qwen35_chat_template.jinja"), "tests/data/tokenizer/qwen35-chat-template-golden.json");
  json config = json::parse(read_file("tests/data/tiny-qwen35/tokenizer_config.json"));
  expect_goldens(config["chat_template"].get<std::string>(), "tests/data/tokenizer/qwen35-chat-template-golden.json");
}

TEST(ChatTemplate, Qwen3MatchesTransformersGoldens) {
  expect_goldens(read_file("tests/data/jinja/templates/qwen3.jinja"), "tests/data/tokenizer/qwen3-tokenizer-golden.json");
}

// Special tokens each template is rendered with, from the tokenizer_config.json it came from.
const std::map<std::string, std::pair<std::string, std::string>> kSpecialTokens = {
    {"qwen35", {"", "<|im_end|>"}},
    {"qwen3", {"", "<|im_end|>"}},
    {"llama3", {"<|begin_of_text|>", "<|end_of_text|>"}},
    {"gemma3", {"<bos>", "<end_of_turn>"}},
    {"deepseek_v3", {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"}},
};

TEST(ChatTemplate, CorpusMatchesJinja2) {
  json chats = json::parse(read_file("tests/data/jinja/chats.json"))["chats"];
  std::vector<std::pair<std::string, std::string>> templates;
  for (const auto& entry : std::filesystem::directory_iterator("tests/data/jinja/templates"))
    templates.emplace_back(entry.path().stem().string(), read_file(entry.path().string()));
  std::sort(templates.begin(), templates.end());
  ASSERT_EQ(templates.size(), kSpecialTokens.size());

  std::vector<JinjaCase> cases;
  std::vector<ChatRenderInput> inputs;
  std::vector<const ChatTemplate*> renderers;
  std::vector<std::unique_ptr<ChatTemplate>> parsed;
  for (const auto& [name, source] : templates) {
    parsed.push_back(std::make_unique<ChatTemplate>(source));
    const auto& [bos, eos] = kSpecialTokens.at(name);
    for (const auto& chat : chats) {
      for (bool generation_prompt : {false, true}) {
        for (int thinking : {-1, 0, 1}) {
          ChatRenderInput in;
          in.messages = chat["messages"];
          in.tools = chat.contains("tools") ? chat["tools"] : json();
          in.add_generation_prompt = generation_prompt;
          if (thinking >= 0) in.extra_kwargs["enable_thinking"] = thinking == 1;
          in.bos_token = bos;
          in.eos_token = eos;
          // The context transformers' apply_chat_template hands to jinja2.
          json context = {{"messages", in.messages}, {"tools", in.tools}, {"documents", nullptr},
                          {"add_generation_prompt", generation_prompt}, {"bos_token", bos}, {"eos_token", eos}};
          for (const auto& [k, v] : in.extra_kwargs.items()) context[k] = v;
          cases.push_back(JinjaCase{name + "/" + chat["name"].get<std::string>() + " agp=" + std::to_string(generation_prompt) +
                                        " thinking=" + std::to_string(thinking),
                                    source, context});
          inputs.push_back(in);
          renderers.push_back(parsed.back().get());
        }
      }
    }
  }
  std::vector<JinjaResult> expected;
  ASSERT_NO_THROW(expected = reference_render(cases));
  int raised = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    if (expected[i].ok) {
      std::string got;
      EXPECT_NO_THROW(got = renderers[i]->render(inputs[i]));
      EXPECT_EQ(got, expected[i].output);
    } else {
      ++raised;
      EXPECT_THROW(renderers[i]->render(inputs[i]), dcu::Error) << "jinja2 raised " << expected[i].error;
    }
  }
  // The corpus must exercise both paths: renders and templates refusing bad conversations.
  EXPECT_GT(raised, 0);
  EXPECT_LT(raised, int(cases.size()) / 2);
}

TEST(ChatTemplate, BrokenTemplateFailsAtConstruction) {
  try {
    ChatTemplate tmpl("{% for m in messages %}\n{{ m.content }}\n");
    FAIL() << "a template without endfor parsed";
  } catch (const dcu::Error& e) {
    EXPECT_NE(std::string(e.what()).find("line"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dcu::test
