// `dcuserve serve` flag parsing: vLLM's flags reach EngineOptions and the server settings. create_engine
// and run_follower_node are replaced by stubs that record the options and stop the command before any
// model loads.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/limit_options.h"
#include "core/error.h"
#include "engine/engine_factory.h"
#include "engine/follower_node.h"

namespace dcu {

namespace {
std::optional<EngineOptions> g_options;
bool g_follower = false;  // run_follower_node was called, not create_engine
struct StopHere {};
}  // namespace

std::unique_ptr<Engine> create_engine(const EngineOptions& options, const CommunicatorFactory&) {
  g_options = options;
  g_follower = false;
  throw StopHere{};
}

void run_follower_node(const EngineOptions& options, const CommunicatorFactory&) {
  g_options = options;
  g_follower = true;
  throw StopHere{};
}

namespace {

// Parses `line` after "dcuserve serve"; true when it reached create_engine or run_follower_node.
bool parse(const std::vector<std::string>& line) {
  g_options.reset();
  CLI::App app;
  add_serve_command(app);
  std::vector<std::string> args = line;
  args.insert(args.begin(), "serve");
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector in reverse order
  try {
    app.parse(args);
  } catch (const StopHere&) {
    return true;
  }
  return false;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST(ServeFlags, TheSeedLineParses) {
  ASSERT_TRUE(parse(split(
      "--model models/dcuserve-demo --tensor-parallel-size 4 --dtype bfloat16 --max-model-len 1024 "
      "--gpu-memory-utilization 0.96 --enforce-eager --max-num-seqs 1 --port 8000 --host 0.0.0.0 "
      "--skip-mm-profiling --kv-cache-memory-bytes 1073741824")));
  EXPECT_EQ(g_options->tensor_parallel_size, 4);
  EXPECT_EQ(g_options->dtype, "bfloat16");
  EXPECT_EQ(g_options->max_model_len, 1024);
  EXPECT_DOUBLE_EQ(g_options->gpu_memory_utilization, 0.96);
  EXPECT_EQ(g_options->max_num_seqs, 1);
  EXPECT_EQ(g_options->kv_cache_memory_bytes, 1073741824);
  EXPECT_EQ(g_options->model_dir, "models/dcuserve-demo");
  EXPECT_TRUE(g_options->enforce_eager);
}

TEST(ServeFlags, EqualsFormAndDefaults) {
  ASSERT_TRUE(parse({"--model=models/dcuserve-demo", "--max-num-seqs=3", "--seed=7", "--device=cpu",
                     "--max-num-batched-tokens=512", "--served-model-name", "a", "b"}));
  EXPECT_EQ(g_options->max_num_seqs, 3);
  EXPECT_EQ(g_options->seed, 7u);
  EXPECT_EQ(g_options->device, "cpu");
  EXPECT_EQ(g_options->max_num_batched_tokens, 512);
  EXPECT_FALSE(g_options->kv_cache_memory_bytes.has_value());
  EXPECT_FALSE(g_options->enforce_eager);
  ASSERT_TRUE(parse({}));  // the bundled demo model, found from the repository root
  EXPECT_NE(g_options->model_dir.find("dcuserve-demo"), std::string::npos);
}

TEST(ServeFlags, DtypeAliasesMatmulPrecisionAndActivationQuantization) {
  ASSERT_TRUE(parse({"--dtype", "half"}));
  EXPECT_EQ(g_options->dtype, "float16");
  EXPECT_EQ(g_options->matmul_precision, "high");
  ASSERT_TRUE(parse({"--dtype", "float", "--matmul-precision", "medium"}));
  EXPECT_EQ(g_options->dtype, "float32");  // the engine then refuses medium (engine_test)
  EXPECT_EQ(g_options->matmul_precision, "medium");
  EXPECT_THROW(parse({"--matmul-precision", "low"}), CLI::ParseError);
  ASSERT_TRUE(parse({}));
  EXPECT_EQ(g_options->activation_quantization, "auto");
  ASSERT_TRUE(parse({"--activation-quantization", "none"}));
  EXPECT_EQ(g_options->activation_quantization, "none");
  EXPECT_THROW(parse({"--activation-quantization", "int4"}), CLI::ParseError);
}

TEST(ServeFlags, NodeZeroServesAndTheOtherNodesFollow) {
  ASSERT_TRUE(parse(split("--tensor-parallel-size 4 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 "
                          "--master-port 29600")));
  EXPECT_FALSE(g_follower);
  EXPECT_EQ(g_options->nnodes, 2);
  EXPECT_EQ(g_options->node_rank, 0);
  ASSERT_TRUE(parse(split("--tensor-parallel-size 4 --nnodes 2 --node-rank 1 --master-addr 10.0.0.1 "
                          "--master-port 29600")));
  EXPECT_TRUE(g_follower);
  EXPECT_EQ(g_options->tensor_parallel_size, 4);
  EXPECT_EQ(g_options->node_rank, 1);
  EXPECT_EQ(g_options->master_addr, "10.0.0.1");
  EXPECT_EQ(g_options->master_port, 29600);
}

TEST(ServeFlags, SpeculativeConfigAsVllmTakesIt) {
  ASSERT_TRUE(parse({"--speculative-config", R"({"method": "qwen3_next_mtp", "num_speculative_tokens": 2})"}));
  EXPECT_EQ(g_options->num_speculative_tokens, 2);
  ASSERT_TRUE(parse({}));
  EXPECT_EQ(g_options->num_speculative_tokens, 0);
  EXPECT_THROW(parse({"--speculative-config", "{method: mtp}"}), CLI::ParseError);
  EXPECT_THROW(parse({"--speculative-config", R"({"method": "ngram", "num_speculative_tokens": 2})"}), CLI::ParseError);
  EXPECT_THROW(parse({"--speculative-config", R"({"method": "mtp", "num_speculative_tokens": 12})"}), CLI::ParseError);
}

TEST(ServeFlags, MaskBudgetReachesTheEngineWithinItsRange) {
  ASSERT_TRUE(parse({"--structured-outputs-mask-budget-ms", "2.5"}));
  EXPECT_EQ(g_options->mask_budget_ms, 2.5);
  ASSERT_TRUE(parse({}));
  EXPECT_EQ(g_options->mask_budget_ms, 5.0);
  EXPECT_THROW(parse({"--structured-outputs-mask-budget-ms", "0"}), CLI::ParseError);
  EXPECT_THROW(parse({"--structured-outputs-mask-budget-ms", "fast"}), CLI::ParseError);
}

TEST(ServeFlags, UnknownAndBadFlagsAreErrors) {
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--no-such-flag"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--port", "70000"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--dtype", "int3"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--reasoning-parser", "nope"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--gpu-memory-utilization", "1.5"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--max-json-depth", "4"}), CLI::ParseError);
  EXPECT_TRUE(parse({"--model=models/dcuserve-demo", "--max-json-depth", "512"}));
  // Auto tool choice without a parser is refused before the engine starts.
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--tool-call-parser", "none", "--enable-auto-tool-choice"}), Error);
}

TEST(ServeFlags, LimitFlagsReachTheServerConfig) {
  server::ServerConfig limits;
  CLI::App app;
  add_limit_options(&app, limits);
  app.parse("--max-request-body-bytes 1048576 --max-header-bytes 8192 --max-header-count 20 "
            "--max-concurrent-connections 64 --max-tokens-cap 4096 --max-json-depth 128 "
            "--request-header-timeout 5 --request-body-timeout 10 --response-write-timeout 15",
            /*program_name_included=*/false);
  EXPECT_EQ(limits.max_body_bytes, 1048576u);
  EXPECT_EQ(limits.max_header_bytes, 8192u);
  EXPECT_EQ(limits.max_header_count, 20);
  EXPECT_EQ(limits.max_connections, 64);
  EXPECT_EQ(limits.max_tokens_cap, 4096);
  EXPECT_EQ(limits.max_json_depth, 128);
  EXPECT_EQ(limits.header_timeout_seconds, 5);
  EXPECT_EQ(limits.body_timeout_seconds, 10);
  EXPECT_EQ(limits.write_timeout_seconds, 15);
  EXPECT_TRUE(parse({"--model=models/dcuserve-demo", "--max-concurrent-connections", "8"}));
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--max-concurrent-connections", "0"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--max-request-body-bytes", "10"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model=models/dcuserve-demo", "--max-tokens-cap", "-1"}), CLI::ParseError);
}

}  // namespace
}  // namespace dcu
