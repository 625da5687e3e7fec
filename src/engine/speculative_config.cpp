#include "engine/speculative_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dcu {

SpeculativeConfig parse_speculative_config(const std::string& json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    fail("--speculative-config is not valid JSON ({}); expected e.g. '{{\"method\": \"mtp\", "
         "\"num_speculative_tokens\": 2}}'",
         e.what());
  }
  if (!j.is_object()) fail("--speculative-config must be a JSON object, got {}", j.dump());
  for (const auto& [key, value] : j.items())
    if (key != "method" && key != "num_speculative_tokens")
      fail("--speculative-config: unknown key \"{}\" (supported: method, num_speculative_tokens)", key);
  if (!j.contains("method") || !j["method"].is_string())
    fail("--speculative-config needs \"method\": \"mtp\" (the model's multi-token-prediction block)");
  const std::string method = j["method"].get<std::string>();
  if (method != "mtp" && method != "qwen3_5_mtp" && method != "qwen3_next_mtp")
    fail("--speculative-config: method \"{}\" is not supported (supported: mtp, qwen3_5_mtp, qwen3_next_mtp)", method);
  const auto& k = j.contains("num_speculative_tokens") ? j["num_speculative_tokens"] : nlohmann::json();
  if (!k.is_number_integer())
    fail("--speculative-config needs \"num_speculative_tokens\": an integer from 1 to {}", kMaxSpeculativeTokens);
  const int64_t n = k.get<int64_t>();
  if (n < 1 || n > kMaxSpeculativeTokens)
    fail("--speculative-config: num_speculative_tokens must be from 1 to {}, got {}", kMaxSpeculativeTokens, n);
  return SpeculativeConfig{int(n)};
}

}  // namespace dcu
