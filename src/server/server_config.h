#pragma once
// Settings of the HTTP server that come from the command line and the model folder.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"

namespace dcu::server {

// JSON nesting a request body may have. Agents' tool schemas nest 30-40 levels (two JSON levels each:
// "properties" -> the property's schema), inside the request's own few.
constexpr int kDefaultMaxJsonDepth = 256;

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;                       // 0: an ephemeral port (tests)
  std::string api_key;                   // empty: no authentication
  std::vector<std::string> served_model_names;  // the first is reported in responses
  std::string model_root;                // the model folder, shown as "root" in /v1/models
  int max_model_len = 0;
  // Limits on what a client may send (docs/API.md, "Limits"); each has a serve flag.
  size_t max_body_bytes = 32u << 20;     // larger bodies get a 413
  size_t max_header_bytes = 64u << 10;   // request line and header fields; larger: 431
  int max_header_count = 100;            // header fields; more: 431
  int max_connections = 1024;            // open at once; the next ones get a 503 and are closed
  int max_tokens_cap = 0;                // > 0: largest max_tokens a request may ask (and the default's cap)
  int max_json_depth = kDefaultMaxJsonDepth;
  int header_timeout_seconds = 30;       // to receive a request's header (and idle keep-alive)
  int body_timeout_seconds = 120;        // to receive its body
  int write_timeout_seconds = 60;        // for one write to the client
  int io_threads = 2;
  int max_logprobs = 20;                 // largest accepted logprobs / top_logprobs
  std::string reasoning_parser;          // "" | qwen3 | deepseek_r1
  std::string tool_call_parser;          // "" | hermes | qwen3_coder
  bool enable_auto_tool_choice = false;
  GenerationDefaults defaults;  // from generation_config.json (dcu::load_generation_defaults), as vLLM's --generation-config auto
};

}  // namespace dcu::server
