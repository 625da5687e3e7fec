// dcuserve serve: the OpenAI-compatible HTTP server, with vLLM's flag names and meanings.

#include <chrono>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/limit_options.h"
#include "cli/model_path.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/engine_factory.h"
#include "engine/follower_node.h"
#include "model/config.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/parser_defaults.h"
#include "server/text_adapter.h"

namespace dcu {
namespace {

struct ServeArgs {
  std::string model, model_positional;
  std::vector<std::string> served_model_names;
  std::string host = "0.0.0.0";
  int port = 8000;
  std::string api_key;
  EngineOptions engine;
  int64_t kv_cache_memory_bytes = -1;
  std::string generation_config = "auto";
  std::string load_format = "auto";
  std::string chat_template, reasoning_parser, tool_call_parser;
  bool enable_auto_tool_choice = false;
  int max_logprobs = 20;
  server::ServerConfig limits;  // what clients may send (--max-request-body-bytes ...), with its defaults
  std::vector<std::string> ignored;  // accepted vLLM flags that mean nothing here
};

void run_serve(ServeArgs a) {
  const auto start = std::chrono::steady_clock::now();
  const std::string model_arg = a.model.empty() ? a.model_positional : a.model;
  a.engine.model_dir = resolve_model_dir(model_arg);
  for (const auto& flag : a.ignored) log::info("{} has no effect in dcuserve (accepted for vLLM compatibility)", flag);
  if (a.kv_cache_memory_bytes >= 0) a.engine.kv_cache_memory_bytes = a.kv_cache_memory_bytes;
  // vLLM's aliases of --dtype, as the engine names them.
  if (a.engine.dtype == "half") a.engine.dtype = "float16";
  if (a.engine.dtype == "float") a.engine.dtype = "float32";
  // As vLLM's --load-format dummy: config.json and the tokenizer from the folder, random weights.
  a.engine.random_weights = a.load_format == "dummy";
  if (a.engine.node_rank > 0) {
    // Another node of a multi-host group: node 0 serves HTTP and schedules, this node runs its steps.
    log::info("node {} of {}: no HTTP server here; requests go to node 0 ({})", a.engine.node_rank, a.engine.nnodes,
              a.engine.master_addr);
    run_follower_node(a.engine);
    return;
  }
  server::ParserFlags parser_flags;
  if (!a.reasoning_parser.empty()) parser_flags.reasoning_parser = a.reasoning_parser;
  if (!a.tool_call_parser.empty()) parser_flags.tool_call_parser = a.tool_call_parser;
  parser_flags.enable_auto_tool_choice = a.enable_auto_tool_choice;
  const auto parsers = server::choose_parsers(load_model_config(a.engine.model_dir).model_type, parser_flags);
  for (const auto& note : parsers.notes) log::info("{}", note);

  // The text side first: a bad template or parser name should fail before weights load.
  auto text = server::load_model_text(a.engine.model_dir,
                                      {a.chat_template, parsers.reasoning_parser, parsers.tool_call_parser});

  server::ServerConfig cfg = a.limits;
  cfg.host = a.host;
  cfg.port = a.port;
  cfg.api_key = a.api_key;
  cfg.served_model_names = a.served_model_names;
  if (cfg.served_model_names.empty()) cfg.served_model_names = {model_arg.empty() ? a.engine.model_dir : model_arg};
  cfg.model_root = a.engine.model_dir;
  cfg.max_logprobs = a.max_logprobs;
  cfg.reasoning_parser = parsers.reasoning_parser;
  cfg.tool_call_parser = parsers.tool_call_parser;
  cfg.enable_auto_tool_choice = parsers.enable_auto_tool_choice;
  if (a.generation_config == "auto") cfg.defaults = load_generation_defaults(a.engine.model_dir);
  else if (a.generation_config != "vllm") cfg.defaults = load_generation_defaults(a.generation_config);

  auto engine = create_engine(a.engine);
  cfg.max_model_len = engine->max_model_len();
  server::Metrics metrics(cfg.served_model_names.front());
  server::ServerContext ctx{*engine, *text, metrics, cfg};
  auto http = std::make_unique<server::HttpServer>(ctx);
  const int port = http->listen();
  http->catch_signals();  // before the line clients wait for
  log::info("serving {} (max_model_len {}) on http://{}:{}; start-up took {:.2f} s", cfg.served_model_names.front(),
            cfg.max_model_len, cfg.host, port,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  http->run(/*handle_signals=*/true);
  engine.reset();  // in-flight requests were cancelled; the engine thread stops before the server goes
  http.reset();
  log::info("server stopped");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "Start the OpenAI-compatible HTTP server (vLLM's flags)");
  cmd->add_option("model_tag", a->model_positional, "Model folder (same as --model)");
  cmd->add_option("--model", a->model, "Model folder (default: the bundled models/dcuserve-demo)");
  cmd->add_option("--served-model-name", a->served_model_names, "Name(s) the API reports and accepts (default: --model)")
      ->expected(1, -1);
  cmd->add_option("--host", a->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", a->port, "Port to listen on (0: any free port)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", a->api_key, "Require 'Authorization: Bearer <key>' on /v1/*");
  cmd->add_option("--device", a->engine.device, "auto | cpu | cuda | hip")->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "hip"}));
  cmd->add_option("--tensor-parallel-size", a->engine.tensor_parallel_size, "GPUs to shard the model over (simulated ranks with --device cpu)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--dtype", a->engine.dtype, "auto | bfloat16 | float16 | float32")->capture_default_str()
      ->check(CLI::IsMember({"auto", "bfloat16", "float16", "float32", "half", "float"}));
  add_speculative_config_option(cmd, a->engine.num_speculative_tokens);
  cmd->add_option("--structured-outputs-mask-budget-ms", a->engine.mask_budget_ms,
                  "How long a step waits for a structured-output mask once its logits are ready; a sequence "
                  "whose mask takes longer sits out until it is done (not with --speculative-config)")
      ->capture_default_str()->check(CLI::Range(0.1, 60000.0));
  cmd->add_option("--quantization,-q", a->engine.quantization, kQuantizationHelp)
      ->check(CLI::IsMember(kQuantizationChoices))
      ->capture_default_str();
  cmd->add_option("--kv-cache-dtype", a->engine.kv_cache_dtype, kKvCacheDtypeHelp)
      ->capture_default_str()
      ->check(CLI::IsMember(kKvCacheDtypeChoices));
  cmd->add_option("--matmul-precision", a->engine.matmul_precision, kMatmulPrecisionHelp)
      ->capture_default_str()->check(CLI::IsMember({"high", "medium"}));
  cmd->add_option("--activation-quantization", a->engine.activation_quantization, kActivationQuantizationHelp)
      ->capture_default_str()->check(CLI::IsMember({"auto", "int8", "none"}));
  cmd->add_option("--max-model-len", a->engine.max_model_len, "Context length (default: the model's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-num-seqs", a->engine.max_num_seqs, "Sequences running at once")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-num-batched-tokens", a->engine.max_num_batched_tokens, "Token budget per engine step")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--gpu-memory-utilization", a->engine.gpu_memory_utilization, "Fraction of device memory to use")
      ->capture_default_str()->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--kv-cache-memory-bytes", a->kv_cache_memory_bytes, "Exact KV-cache + state budget in bytes")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", a->engine.seed, "Default sampling seed")->capture_default_str();
  cmd->add_option("--nnodes", a->engine.nnodes, "Hosts the tensor-parallel group spans (NCCL/RCCL builds)")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--node-rank", a->engine.node_rank, "This host's index among --nnodes; 0 serves HTTP, the others follow it")
      ->capture_default_str()->check(CLI::Range(0, 63));
  cmd->add_option("--master-addr", a->engine.master_addr, "Node 0's address, which the other nodes connect to")
      ->capture_default_str();
  cmd->add_option("--master-port", a->engine.master_port, "Node 0's port for the other nodes (rendezvous and steps)")
      ->capture_default_str()->check(CLI::Range(1, 65535));
  cmd->add_option("--load-format", a->load_format,
                  "auto | safetensors | dummy (random weights with the folder's config.json, for benchmarks)")
      ->check(CLI::IsMember({"auto", "safetensors", "dummy"}))
      ->capture_default_str();
  cmd->add_option("--generation-config", a->generation_config,
                  "auto (the model's generation_config.json) | vllm (vLLM's defaults) | a folder")->capture_default_str();
  cmd->add_option("--chat-template", a->chat_template, "Chat template file or inline Jinja");
  cmd->add_option("--reasoning-parser", a->reasoning_parser, "qwen3 | deepseek_r1 | none (default: the model's, qwen3 for Qwen3.5)")
      ->check(CLI::IsMember({"qwen3", "deepseek_r1", "none"}));
  cmd->add_option("--tool-call-parser", a->tool_call_parser,
                  "hermes | qwen3_coder | none (default: the model's, qwen3_coder with auto tool choice for Qwen3.5)")
      ->check(CLI::IsMember({"hermes", "qwen3_coder", "qwen3_xml", "none"}));
  cmd->add_flag("--enable-auto-tool-choice", a->enable_auto_tool_choice,
                "Let the model decide to call tools (on by default when the tool parser comes from the model)");
  cmd->add_option("--max-logprobs", a->max_logprobs, "Largest logprobs / top_logprobs accepted")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  add_limit_options(cmd, a->limits);
  // vLLM flags that mean nothing here: accepted and noted in the log.
  cmd->add_flag("--enforce-eager", a->engine.enforce_eager,
                "Launch every op of a decode step one by one (no CUDA/HIP graphs); for debugging");
  for (const char* flag : {"--skip-mm-profiling", "--trust-remote-code", "--disable-log-requests",
                           "--disable-log-stats", "--language-model-only", "--disable-frontend-multiprocessing"})
    cmd->add_flag_callback(flag, [a, flag] { a->ignored.push_back(flag); }, "Accepted for vLLM compatibility; no effect");
  cmd->add_option_function<std::string>(
      "--uvicorn-log-level", [a](const std::string&) { a->ignored.push_back("--uvicorn-log-level"); },
      "Accepted for vLLM compatibility; no effect");
  cmd->callback([a] { run_serve(*a); });
}

}  // namespace dcu
