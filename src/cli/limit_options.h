#pragma once
// The serve flags that bound what a client may send and how long it may take (docs/API.md, "Limits"):
// body and header sizes, header fields, open connections, max_tokens, JSON depth, timeouts.

#include <CLI/CLI.hpp>

#include "server/server_config.h"

namespace dcu {

// Adds the flags to `cmd`, each writing its field of `limits` (whose values are the defaults shown).
void add_limit_options(CLI::App* cmd, server::ServerConfig& limits);

}  // namespace dcu
