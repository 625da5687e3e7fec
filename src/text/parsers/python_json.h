#pragma once
// JSON text as Python's json.dumps(value, ensure_ascii=False) writes it (", " and ": " separators),
// which is how vLLM serialises tool-call arguments.

#include <string>

#include <nlohmann/json.hpp>

namespace dcu::text {

std::string python_json_dumps(const nlohmann::ordered_json& value);

}  // namespace dcu::text
