#include "server/parser_defaults.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dcu::server {
namespace {

struct FamilyParsers {
  const char* reasoning;
  const char* tool_call;
};

// The parsers each family's chat template was written for (Qwen3.5 renders tools as Qwen3-Coder XML).
std::optional<FamilyParsers> family_parsers(const std::string& model_type) {
  if (model_type.rfind("qwen3_5", 0) == 0 || model_type == "qwen3_next") return FamilyParsers{"qwen3", "qwen3_coder"};
  return std::nullopt;
}

}  // namespace

ParserChoice choose_parsers(const std::string& model_type, const ParserFlags& flags) {
  const auto family = family_parsers(model_type);
  ParserChoice c;
  if (flags.reasoning_parser) {
    c.reasoning_parser = *flags.reasoning_parser == "none" ? "" : *flags.reasoning_parser;
  } else if (family) {
    c.reasoning_parser = family->reasoning;
    c.notes.push_back(fmt::format("--reasoning-parser {} (from the model; --reasoning-parser none turns it off)",
                                  family->reasoning));
  }
  if (flags.tool_call_parser) {
    // Given explicitly: vLLM's meaning, "auto" only with --enable-auto-tool-choice.
    c.tool_call_parser = *flags.tool_call_parser == "none" ? "" : *flags.tool_call_parser;
    c.enable_auto_tool_choice = flags.enable_auto_tool_choice;
  } else if (family) {
    c.tool_call_parser = family->tool_call;
    c.enable_auto_tool_choice = true;
    c.notes.push_back(fmt::format(
        "--tool-call-parser {} --enable-auto-tool-choice (from the model; --tool-call-parser none turns it off)",
        family->tool_call));
  }
  if (c.enable_auto_tool_choice && c.tool_call_parser.empty())
    fail("--enable-auto-tool-choice needs a --tool-call-parser (hermes or qwen3_coder)");
  return c;
}

}  // namespace dcu::server
