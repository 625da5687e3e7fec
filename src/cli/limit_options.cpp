#include "cli/limit_options.h"

namespace dcu {

void add_limit_options(CLI::App* cmd, server::ServerConfig& limits) {
  cmd->add_option("--max-request-body-bytes", limits.max_body_bytes, "Largest request body; larger ones get a 413")
      ->capture_default_str()->check(CLI::Range(size_t(1024), size_t(1) << 32));
  cmd->add_option("--max-header-bytes", limits.max_header_bytes,
                  "Largest request line + header fields; larger get a 431")
      ->capture_default_str()->check(CLI::Range(size_t(1024), size_t(16) << 20));
  cmd->add_option("--max-header-count", limits.max_header_count, "Most header fields a request may have; more get a 431")
      ->capture_default_str()->check(CLI::Range(8, 10000));
  cmd->add_option("--max-concurrent-connections", limits.max_connections,
                  "Connections open at once; the next ones get a 503 and are closed")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-tokens-cap", limits.max_tokens_cap,
                  "Largest max_tokens a request may ask, and the most it gets when it asks none (0: the context length)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-json-depth", limits.max_json_depth, "Deepest JSON nesting a request body may have")
      ->capture_default_str()->check(CLI::Range(8, 1024));
  cmd->add_option("--request-header-timeout", limits.header_timeout_seconds,
                  "Seconds to receive a request's header, and to wait for the next one on an idle connection")
      ->capture_default_str()->check(CLI::Range(1, 86400));
  cmd->add_option("--request-body-timeout", limits.body_timeout_seconds, "Seconds to receive a request's body")
      ->capture_default_str()->check(CLI::Range(1, 86400));
  cmd->add_option("--response-write-timeout", limits.write_timeout_seconds,
                  "Seconds one write to a client may take before the connection is dropped")
      ->capture_default_str()->check(CLI::Range(1, 86400));
}

}  // namespace dcu
