// dcuserve generate: one continuation of one prompt, printed as it is produced (or as JSON).

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_path.h"
#include "core/log.h"
#include "core/error.h"
#include "engine/engine_factory.h"
#include "text/chat_template.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/tokenizer_config.h"

namespace dcu {
namespace {

struct GenerateArgs {
  std::string model, prompt, prompt_ids, device = "auto", dtype = "auto", matmul_precision = "high";
  std::string kv_cache_dtype = "auto", activation_quantization = "auto";
  std::string quantization = "none";
  int num_speculative_tokens = 0;
  int max_tokens = 64;
  float temperature = 0.0f, top_p = 1.0f;
  int top_k = -1;
  std::optional<uint64_t> seed;
  bool json = false, ignore_eos = false, chat = false, enforce_eager = false;
  std::string enable_thinking;  // "", "true" or "false": the chat template's enable_thinking
  int max_model_len = 0;
  int tensor_parallel_size = 1;
};

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      long v = std::stol(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(int32_t(v));
    } catch (const std::exception&) {
      fail("--prompt-ids: \"{}\" is not a token id", item);
    }
  }
  if (ids.empty()) fail("--prompt-ids: no ids given");
  return ids;
}

// The prompt as one user message through the model's chat template, with the generation prompt.
std::string render_chat_prompt(const std::string& model_dir, const GenerateArgs& a) {
  const text::TokenizerConfig config = text::TokenizerConfig::load(model_dir);
  if (!config.chat_template) fail("{} has no chat template (tokenizer_config.json / chat_template.jinja)", model_dir);
  ChatRenderInput input;
  input.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", a.prompt}}});
  if (!a.enable_thinking.empty()) input.extra_kwargs["enable_thinking"] = a.enable_thinking == "true";
  input.bos_token = config.bos_token.value_or("");
  input.eos_token = config.eos_token.value_or("");
  return ChatTemplate(*config.chat_template).render(input);
}

void run_generate(const GenerateArgs& a) {
  EngineOptions opts;
  opts.model_dir = resolve_model_dir(a.model);
  opts.device = a.device;
  opts.dtype = a.dtype;
  opts.matmul_precision = a.matmul_precision;
  opts.activation_quantization = a.activation_quantization;
  opts.kv_cache_dtype = a.kv_cache_dtype;
  opts.quantization = a.quantization;
  opts.num_speculative_tokens = a.num_speculative_tokens;
  opts.max_num_seqs = 1;
  opts.max_model_len = a.max_model_len;
  opts.tensor_parallel_size = a.tensor_parallel_size;
  opts.enforce_eager = a.enforce_eager;
  std::optional<text::Tokenizer> tokenizer;
  if (std::filesystem::exists(std::filesystem::path(opts.model_dir) / "tokenizer.json"))
    tokenizer = text::Tokenizer::load(opts.model_dir);
  std::vector<int32_t> prompt;
  if (!a.prompt_ids.empty()) {
    prompt = parse_ids(a.prompt_ids);
  } else {
    if (!tokenizer) fail("{} has no tokenizer.json; use --prompt-ids", opts.model_dir);
    prompt = tokenizer->encode(a.chat ? render_chat_prompt(opts.model_dir, a) : a.prompt);
  }
  if (opts.max_model_len == 0) opts.max_model_len = int(prompt.size()) + a.max_tokens + 1;
  auto engine = create_engine(opts);

  GenerationRequest req;
  req.prompt = prompt;
  req.sampling.max_tokens = a.max_tokens;
  req.sampling.temperature = a.temperature;
  req.sampling.top_p = a.top_p;
  req.sampling.top_k = a.top_k;
  req.sampling.seed = a.seed;
  req.sampling.ignore_eos = a.ignore_eos;

  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::string error;
  std::vector<int32_t> ids;
  std::optional<text::StreamingDetokenizer> detok;
  if (tokenizer) detok.emplace(*tokenizer, false, std::vector<std::string>{});
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> first_token;
  auto submitted = engine->submit(std::move(req), [&](GenerationEvent&& ev) {
    std::lock_guard lock(mutex);
    if (!first_token && !ev.tokens.empty()) first_token = std::chrono::steady_clock::now();
    for (const auto& t : ev.tokens) {
      ids.push_back(t.id);
      if (detok && !a.json) std::fputs(detok->push(t.id).c_str(), stdout), std::fflush(stdout);
    }
    if (ev.finished) {
      if (*ev.finished == FinishReason::Error) error = ev.error;
      done = true;
      done_cv.notify_all();
    }
  });
  if (auto* e = std::get_if<SubmitError>(&submitted)) fail("{}", e->message);
  std::unique_lock lock(mutex);
  done_cv.wait(lock, [&] { return done; });
  if (!error.empty()) fail("generation failed: {}", error);
  if (first_token && ids.size() > 1) {
    const auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
    const double decode = seconds(std::chrono::steady_clock::now() - *first_token);
    const EngineStats st = engine->stats();
    const std::string acceptance =
        st.spec_drafts ? fmt::format(" ({:.2f} tokens per verify step)", 1.0 + double(st.spec_accepted_tokens) / double(st.spec_drafts)) : "";
    log::info("{} tokens: first after {:.3f} s, then {:.1f} tokens/s{}", ids.size(), seconds(*first_token - start),
              double(ids.size() - 1) / decode, acceptance);
  }
  if (a.json) {
    nlohmann::json out = {{"ids", ids}};
    if (tokenizer) out["text"] = tokenizer->decode(ids, false);
    std::puts(out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    if (detok) std::fputs(detok->flush().c_str(), stdout);
    else
      for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? "," : "", ids[i]);
    std::puts("");
  }
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Continue one prompt (greedy by default)");
  cmd->add_option("--model", args->model, "Model folder (default: the bundled demo model)");
  auto* text = cmd->add_option("--prompt", args->prompt, "Prompt text");
  auto* ids = cmd->add_option("--prompt-ids", args->prompt_ids, "Prompt as comma-separated token ids");
  text->excludes(ids);
  cmd->add_option("--max-tokens", args->max_tokens, "Tokens to generate")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temperature", args->temperature, "0 for greedy")->check(CLI::Range(0.0f, 100.0f));
  cmd->add_option("--top-p", args->top_p)->check(CLI::Range(0.0f, 1.0f));
  cmd->add_option("--top-k", args->top_k);
  cmd->add_option("--seed", args->seed);
  cmd->add_option("--max-model-len", args->max_model_len, "Context length (default: prompt + max tokens)");
  cmd->add_option("--device", args->device, "auto | cpu | cuda | hip");
  cmd->add_option("--dtype", args->dtype, "auto | bfloat16 | float16 | float32 (float32: exact f32 matmuls on GPUs)")
      ->check(CLI::IsMember({"auto", "bfloat16", "float16", "float32"}));
  cmd->add_option("--quantization,-q", args->quantization, kQuantizationHelp)->check(CLI::IsMember(kQuantizationChoices));
  add_speculative_config_option(cmd, args->num_speculative_tokens);
  cmd->add_option("--kv-cache-dtype", args->kv_cache_dtype, kKvCacheDtypeHelp)
      ->check(CLI::IsMember(kKvCacheDtypeChoices));
  cmd->add_option("--matmul-precision", args->matmul_precision, kMatmulPrecisionHelp)
      ->check(CLI::IsMember({"high", "medium"}));
  cmd->add_option("--activation-quantization", args->activation_quantization, kActivationQuantizationHelp)
      ->check(CLI::IsMember({"auto", "int8", "none"}));
  cmd->add_option("--tensor-parallel-size", args->tensor_parallel_size,
                  "Ranks to split the model over (GPUs, or simulated ranks with --device cpu)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--ignore-eos", args->ignore_eos, "Keep going past end-of-sequence tokens");
  cmd->add_flag("--enforce-eager", args->enforce_eager, "No CUDA/HIP graphs for decode steps (debugging)");
  cmd->add_flag("--json", args->json, "Print {\"ids\": [...], \"text\": \"...\"}");
  cmd->add_flag("--chat", args->chat, "Send --prompt as a user message through the model's chat template");
  cmd->add_option("--enable-thinking", args->enable_thinking, "true | false: the chat template's enable_thinking")
      ->check(CLI::IsMember({"true", "false"}));
  cmd->callback([args] {
    if (args->prompt.empty() && args->prompt_ids.empty()) fail("give --prompt TEXT or --prompt-ids 1,2,3");
    run_generate(*args);
  });
}

}  // namespace dcu
