#pragma once
// What every handler needs: the engine, the model's text side, metrics and settings. Owned by the
// caller of HttpServer; outlives it.

#include <memory>
#include <string>

#include "engine/engine_api.h"
#include "server/metrics.h"
#include "server/model_text.h"
#include "server/server_config.h"
#include "server/structured_output.h"

namespace dcu::server {

struct ServerContext {
  Engine& engine;
  const ModelText& text;
  Metrics& metrics;
  const ServerConfig& config;
  std::shared_ptr<StructuredOutputs> structured = std::make_shared<StructuredOutputs>();

  const std::string& model_name() const { return config.served_model_names.front(); }
};

}  // namespace dcu::server
