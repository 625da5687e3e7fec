#include "server/sse.h"

namespace dcu::server {

std::string to_json_text(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// dump() escapes control characters, so the payload never contains a raw newline that would end the event.
std::string sse_event(const nlohmann::ordered_json& chunk) { return "data: " + to_json_text(chunk) + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace dcu::server
