#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/server_config.h"

namespace dcu::server {

GenerationDefaults load_generation_defaults(const std::string& folder) {
  GenerationDefaults d;
  const auto path = std::filesystem::path(folder) / "generation_config.json";
  std::ifstream in(path);
  if (!in) return d;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    fail("{} is not valid JSON: {}", path.string(), e.what());
  }
  auto number = [&](const char* key) -> std::optional<double> {
    if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
    return std::nullopt;
  };
  // The fields vLLM takes from generation_config.json (do_sample is ignored there too).
  if (auto v = number("temperature")) d.temperature = static_cast<float>(*v);
  if (auto v = number("top_p")) d.top_p = static_cast<float>(*v);
  if (auto v = number("top_k")) d.top_k = static_cast<int>(*v);
  if (auto v = number("min_p")) d.min_p = static_cast<float>(*v);
  if (auto v = number("repetition_penalty")) d.repetition_penalty = static_cast<float>(*v);
  if (auto v = number("max_new_tokens")) d.max_new_tokens = static_cast<int>(*v);
  if (j.contains("eos_token_id")) {
    const auto& e = j["eos_token_id"];
    if (e.is_number_integer()) d.eos_token_ids.push_back(e.get<int32_t>());
    if (e.is_array())
      for (const auto& x : e)
        if (x.is_number_integer()) d.eos_token_ids.push_back(x.get<int32_t>());
  }
  return d;
}

}  // namespace dcu::server
