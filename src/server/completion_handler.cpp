#include "server/completion_handler.h"

#include "server/logprobs_format.h"
#include "server/sse.h"

namespace dcu::server {
namespace {

using ojson = nlohmann::ordered_json;

class CompletionJob : public GenerationJob {
 public:
  CompletionJob(const ServerContext& ctx, const CompletionRequest& request)
      : GenerationJob(ctx, request.common),
        model_(ctx.model_name()),
        echo_(request.echo),
        logprobs_(request.logprobs),
        prompt_logprobs_(request.common.prompt_logprobs.has_value()) {
    id_ = random_id("cmpl-");
    const auto& p = request.common;
    std::shared_ptr<const structured::TokenGrammar> grammar;
    if (p.constraint)
      grammar = ctx.structured->compile(ctx.text, ctx.engine.vocab_size(), p.constraint->spec, p.constraint->param);
    for (size_t i = 0; i < request.prompts.size(); ++i) {
      Prompt prompt;
      if (const auto* s = std::get_if<std::string>(&request.prompts[i])) {
        prompt.text = *s;
        prompt.ids = ctx.text.encode(*s);
        if (prompt.ids.empty()) reject(std::string("prompt"), "the prompt encodes to no tokens");
      } else {
        prompt.ids = std::get<std::vector<int32_t>>(request.prompts[i]);
        for (int32_t id : prompt.ids)
          if (id >= ctx.engine.vocab_size())
            reject(std::string("prompt"), "token id {} is out of vocabulary (size {})", id, ctx.engine.vocab_size());
      }
      truncate_prompt(prompt.ids, p, ctx.engine.max_model_len());
      if (echo_ && (p.truncate_prompt_tokens || prompt.text.empty()))
        prompt.text = ctx.text.decode(prompt.ids, p.skip_special_tokens);
      // Echo with logprobs needs the prompt's; the reply's prompt_logprobs field too.
      const int echo_top = echo_ && logprobs_ ? *logprobs_ : -1;
      SamplingParams sampling = make_sampling_params(p, ctx.config.defaults);
      sampling.max_tokens = resolve_max_tokens(p, ctx.config, int(prompt.ids.size()),
                                               ctx.engine.max_model_len(), echo_top >= 0 || p.prompt_logprobs);
      sampling.logprobs = logprobs_.value_or(-1);
      sampling.prompt_logprobs = std::max(echo_top, p.prompt_logprobs.value_or(-1));
      set_prompt_tokens(int(i), int(prompt.ids.size()));
      for (int j = 0; j < p.n; ++j) {
        GenerationRequest r{prompt.ids, sampling};
        if (r.sampling.seed && j > 0) r.sampling.seed = *r.sampling.seed + j;  // n samples must differ
        if (grammar) {
          std::vector<int32_t> end_tokens = sampling.stop_token_ids;
          end_tokens.insert(end_tokens.end(), ctx.config.defaults.eos_token_ids.begin(),
                            ctx.config.defaults.eos_token_ids.end());
          r.sampling.constraint = StructuredOutputs::constraint(grammar, std::move(end_tokens), false);
        }
        add_choice(int(i), std::move(r), ctx.text.open_stream(p.skip_special_tokens, p.stop));
        outputs_.emplace_back(TokenNames{ctx.text, p.return_tokens_as_token_ids});
      }
      prompts_.push_back(std::move(prompt));
    }
  }

 protected:
  std::string on_output(Choice& c, std::string text, std::span<const SampledToken> tokens,
                        const GenerationEvent& event) override {
    Output& out = outputs_[c.index];
    if (prompt_logprobs_ && !event.prompt_logprobs.empty())
      out.prompt_logprobs = prompt_logprobs_json(out.logprobs.names(), event.prompt_logprobs);
    std::string piece;
    if (!out.echoed) {
      out.echoed = true;
      if (echo_) {
        const Prompt& prompt = prompts_[c.prompt_index];
        piece = prompt.text;
        if (logprobs_) {
          for (size_t k = 0; k < prompt.ids.size(); ++k)
            out.logprobs.add_prompt_token(prompt.ids[k], k < event.prompt_logprobs.size() ? event.prompt_logprobs[k]
                                                                                         : std::nullopt);
        }
      }
    }
    piece += text;
    if (logprobs_)
      for (const auto& t : tokens) out.logprobs.add(t);
    if (!streaming()) {
      out.text += piece;
      return {};
    }
    if (c.finish_reason == "error") return sse_event(ojson::parse(error_body(internal_error(c.error))));
    if (piece.empty() && !c.finished && (out.logprobs.empty() || !logprobs_)) return {};
    ojson choice = {{"index", c.index}, {"text", piece}, {"logprobs", nullptr},
                    {"finish_reason", c.finished ? ojson(c.finish_reason) : ojson(nullptr)},
                    {"stop_reason", c.stop_reason}};
    if (logprobs_) {
      choice["logprobs"] = out.logprobs.json();
      out.logprobs.clear();
    }
    ojson data = chunk(ojson::array({choice}));
    add_chunk_usage(data, c);
    return sse_event(data);
  }

  ojson full_response() override {
    ojson list = ojson::array();
    for (auto& c : choices()) {
      const Output& out = outputs_[c.index];
      list.push_back({{"index", c.index}, {"text", out.text},
                      {"logprobs", logprobs_ ? out.logprobs.json() : ojson(nullptr)},
                      {"finish_reason", c.finish_reason}, {"stop_reason", c.stop_reason},
                      {"prompt_logprobs", out.prompt_logprobs}});
    }
    ojson r = chunk(std::move(list));
    r["usage"] = usage();
    return r;
  }

  ojson usage_chunk() override {
    ojson r = chunk(ojson::array());
    r["usage"] = usage();
    return r;
  }

 private:
  struct Prompt {
    std::string text;  // for echo
    std::vector<int32_t> ids;
  };
  struct Output {
    explicit Output(TokenNames names) : logprobs(names) {}
    std::string text;
    CompletionLogprobs logprobs;
    ojson prompt_logprobs;  // null unless asked for
    bool echoed = false;
  };

  ojson chunk(ojson choices) const {
    return {{"id", id_}, {"object", "text_completion"}, {"created", created_}, {"model", model_},
            {"system_fingerprint", nullptr}, {"choices", std::move(choices)}};
  }

  std::string model_;
  bool echo_;
  std::optional<int> logprobs_;
  bool prompt_logprobs_;
  std::vector<Prompt> prompts_;
  std::vector<Output> outputs_;
};

}  // namespace

std::shared_ptr<GenerationJob> make_completion_job(const ServerContext& ctx, const CompletionRequest& request) {
  return std::make_shared<CompletionJob>(ctx, request);
}

}  // namespace dcu::server
