#pragma once
// Which reasoning and tool-call parsers the server uses: the flags where given, else the model
// family's own (vLLM needs them spelled out; a Qwen3.5 model without them leaks `<think>` into the
// answer and refuses the "auto" tool choice every agent client sends).

#include <optional>
#include <string>
#include <vector>

namespace dcu::server {

struct ParserFlags {
  std::optional<std::string> reasoning_parser;  // unset: the model's; "none": no parsing
  std::optional<std::string> tool_call_parser;  // unset: the model's; "none": no parsing
  bool enable_auto_tool_choice = false;
};

struct ParserChoice {
  std::string reasoning_parser;  // "" = none
  std::string tool_call_parser;  // "" = none
  bool enable_auto_tool_choice = false;
  std::vector<std::string> notes;  // what came from the model, for the start-up log
};

// `model_type` as config.json names it. Throws dcu::Error on contradictory flags.
ParserChoice choose_parsers(const std::string& model_type, const ParserFlags& flags);

}  // namespace dcu::server
