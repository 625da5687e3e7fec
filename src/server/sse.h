#pragma once
// Server-sent events framing as OpenAI streams it: one `data: <json>\n\n` per chunk, then `data: [DONE]\n\n`.

#include <string>

#include <nlohmann/json.hpp>

namespace dcu::server {

std::string sse_event(const nlohmann::ordered_json& chunk);
std::string sse_done();

// JSON text with invalid UTF-8 replaced (model output can split a character across tokens).
std::string to_json_text(const nlohmann::ordered_json& value);

}  // namespace dcu::server
