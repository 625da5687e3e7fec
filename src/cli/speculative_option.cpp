#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "engine/speculative_config.h"

namespace dcu {

void add_speculative_config_option(CLI::App* cmd, int& num_speculative_tokens) {
  cmd->add_option_function<std::string>(
      "--speculative-config",
      [&num_speculative_tokens](const std::string& text) {
        try {
          num_speculative_tokens = parse_speculative_config(text).num_speculative_tokens;
        } catch (const Error& e) {
          throw CLI::ValidationError("--speculative-config", e.what());
        }
      },
      "Speculative decoding with the model's MTP block, as vLLM takes it: '{\"method\": \"mtp\", "
      "\"num_speculative_tokens\": 2}' (1..8 drafts verified per step; methods mtp, qwen3_5_mtp, qwen3_next_mtp)");
}

}  // namespace dcu
