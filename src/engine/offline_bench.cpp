#include "engine/offline_bench.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "cache/cache_storage.h"
#include "comm/rank_threads.h"
#include "core/log.h"
#include "model/model_runner.h"
#include "model/sharding.h"

namespace dcu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double measure_copy_bandwidth(Backend& backend) {
  const size_t bytes = backend.kind() == DeviceKind::Cpu ? size_t(256) << 20 : size_t(1) << 30;
  void* a = backend.allocate(bytes);
  void* b = backend.allocate(bytes);
  backend.fill_zero(a, bytes);
  backend.fill_zero(b, bytes);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    backend.synchronize();
    auto start = Clock::now();
    backend.copy(b, a, bytes);
    backend.synchronize();
    best = std::min(best, seconds_since(start));
  }
  backend.release(a);
  backend.release(b);
  return 2.0 * double(bytes) / best;  // each byte is read once and written once
}

double tensor_bytes(const Tensor& t) { return t.empty() ? 0.0 : double(t.bytes()); }

// A rank's communicator as the bench drives it. `timing`: each collective is timed with the backend
// synchronised before and after, so the time is the collective's own (including the wait for the
// other ranks); timing perturbs the step, so speed is measured with it off and collectives in a pass
// of their own. `skip`, set on every rank at once: the collectives are left out (the results are
// wrong, the rest of the work is the same), to measure what they add to a step.
class BenchCommunicator final : public Communicator {
 public:
  BenchCommunicator(Communicator& inner, Backend& backend) : inner_(inner), backend_(backend) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return inner_.name(); }
  void all_reduce_sum(Tensor x) override { run([&] { inner_.all_reduce_sum(x); }); }
  void all_gather(const Tensor& local, Tensor out) override { run([&] { inner_.all_gather(local, out); }); }
  void abort() override { inner_.abort(); }
  bool records_in_graphs() const override { return inner_.records_in_graphs(); }

  bool timing = false, skip = false;
  int calls = 0;
  double seconds = 0;

 private:
  template <typename F> void run(F&& f) {
    if (skip) return;
    if (!timing) return f();
    backend_.synchronize();
    auto start = Clock::now();
    f();
    backend_.synchronize();
    seconds += seconds_since(start);
    ++calls;
  }
  Communicator& inner_;
  Backend& backend_;
};

}  // namespace

double weight_bytes_per_step(const ModelConfig& config, const ModelWeights& w) {
  auto matrix = [](const Linear& m) { return m.empty() ? 0.0 : double(m.bytes()); };
  double total = tensor_bytes(w.final_norm) + matrix(w.lm_head);
  for (const auto& L : w.layers) {
    for (const Tensor* t : {&L.input_norm, &L.post_norm, &L.attn.q_norm, &L.attn.k_norm, &L.gdn.conv1d,
                            &L.gdn.dt_bias, &L.gdn.A_log, &L.gdn.norm})
      total += tensor_bytes(*t);
    for (const Linear* m : {&L.mlp.gate_proj, &L.mlp.up_proj, &L.mlp.down_proj, &L.attn.q_proj, &L.attn.k_proj,
                            &L.attn.v_proj, &L.attn.o_proj, &L.gdn.in_proj_qkv, &L.gdn.in_proj_z, &L.gdn.in_proj_a,
                            &L.gdn.in_proj_b, &L.gdn.out_proj})
      total += matrix(*m);
  }
  return total;
}

BenchReport run_offline_bench(Backend& backend, const ModelConfig& config, ModelWeights weights,
                              const BenchOptions& o) {
  std::vector<BenchRank> ranks(1);
  ranks[0].backend = &backend;
  ranks[0].weights = std::move(weights);
  return run_offline_bench(std::move(ranks), config, o);
}

BenchReport run_offline_bench(std::vector<BenchRank> ranks, const ModelConfig& config, const BenchOptions& o) {
  BenchReport report;
  Backend& backend = *ranks[0].backend;
  const int P = int(ranks.size());
  report.copy_bandwidth = measure_copy_bandwidth(backend);
  const double weight_bytes = weight_bytes_per_step(config, ranks[0].weights);
  const ModelConfig local = local_config(config, shard_plan(config, 0, P));
  const int max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  const int max_prompt = *std::max_element(o.prompt_lens.begin(), o.prompt_lens.end());
  const int max_context = *std::max_element(o.contexts.begin(), o.contexts.end());
  const int block_size = 16;
  const int blocks_per_seq = (std::max(max_prompt, max_context + o.decode_steps) + block_size - 1) / block_size;

  const int k = o.speculative_tokens;
  CacheShape shape;
  shape.block_size = block_size;
  shape.num_state_slots = max_batch * (1 + k);  // sequence s reads slot s; its verify rows keep theirs after
  shape.num_blocks = blocks_per_seq * max_batch;
  shape.kv_dtype = o.kv_dtype;
  shape.draft_layers = k > 0 ? 1 : 0;
  std::vector<std::unique_ptr<BenchCommunicator>> comms;
  if (P > 1)
    for (BenchRank& rank : ranks) comms.push_back(std::make_unique<BenchCommunicator>(*rank.comm, *rank.backend));
  std::vector<std::unique_ptr<CacheStorage>> caches;
  std::vector<std::unique_ptr<ModelRunner>> runners;
  for (int r = 0; r < P; ++r) {
    BenchRank& rank = ranks[size_t(r)];
    caches.push_back(std::make_unique<CacheStorage>(*rank.backend, local_config(config, shard_plan(config, r, P)), shape));
    runners.push_back(std::make_unique<ModelRunner>(*rank.backend, config, std::move(rank.weights), *caches.back(),
                                                    std::max(max_prompt, max_batch * (1 + k)), max_batch * (1 + k),
                                                    P > 1 ? comms[size_t(r)].get() : nullptr));
    runners.back()->set_use_graphs(!o.enforce_eager);
  }
  std::unique_ptr<RankThreads> threads;
  if (P > 1) threads = std::make_unique<RankThreads>(P);
  // A step is done when its logits are: wait for the device, as sampling the logits would.
  auto step_rank = [&](int r, std::span<const SequenceStep> steps) {
    runners[size_t(r)]->step(steps);
    ranks[size_t(r)].backend->synchronize();
  };
  auto on_every_rank = [&](const std::function<void(int rank)>& work) {
    if (P == 1) {
      work(0);
      return;
    }
    threads->run(work, [&] {
      for (auto& rank : ranks) rank.comm->abort();
    });
  };
  auto run_step = [&](std::span<const SequenceStep> steps) { on_every_rank([&](int r) { step_rank(r, steps); }); };
  auto run_draft = [&](std::span<const SequenceStep> steps, std::span<const int32_t> rows, DraftInput from) {
    on_every_rank([&](int r) {
      runners[size_t(r)]->draft(steps, rows, from);
      ranks[size_t(r)].backend->synchronize();  // the drafted ids are read (argmax) before the next draft
    });
  };
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(max_batch));
  for (int s = 0; s < max_batch; ++s)
    for (int b = 0; b < blocks_per_seq; ++b) tables[size_t(s)].push_back(s * blocks_per_seq + b);

  // Prefill: one sequence from an empty cache.
  const double matrix_flops_per_token = 2.0 * weight_bytes / double(dtype_size(DType::BF16));
  for (int len : o.prompt_lens) {
    std::vector<int32_t> tokens(static_cast<size_t>(len));
    for (int i = 0; i < len; ++i) tokens[size_t(i)] = int32_t((i * 7919) % config.vocab_size);
    double best = 1e30;
    for (int r = 0; r < o.repeats; ++r) {
      SequenceStep st{tokens, 0, tables[0], 0, false};
      auto start = Clock::now();
      run_step(std::span<const SequenceStep>(&st, 1));
      best = std::min(best, seconds_since(start));
    }
    // Row t attends to t + 1 positions: 4 d FLOPs each (q.k, then p.v) per q head and attention layer.
    const double attention_flops_per_token = 4.0 * config.head_dim * config.num_heads *
                                             config.num_full_attention_layers() * (double(len) + 1) / 2;
    report.prefill.push_back({len, double(len) / best, matrix_flops_per_token, attention_flops_per_token});
    log::info("prefill {} tokens: {:.1f} tok/s", len, double(len) / best);
  }

  // Speculative rounds of `batch` sequences at `context` cached tokens (the same positions every round:
  // cache contents do not change the work done).
  auto speculative_rounds = [&](int batch, int context) {
    std::vector<int32_t> rows_tokens(size_t(batch) * (1 + k), 1), write_slots;
    for (int s = 0; s < batch; ++s) {
      for (int i = 0; i < k; ++i) write_slots.push_back(max_batch + s * k + i);
      write_slots.push_back(s);
    }
    auto target_step = [&](int rows) {
      std::vector<SequenceStep> steps;
      for (int s = 0; s < batch; ++s) {
        const std::span<const int32_t> keep(&write_slots[size_t(s) * (1 + k)], size_t(rows));
        steps.push_back({std::span<const int32_t>(&rows_tokens[size_t(s) * (1 + k)], size_t(rows)), context,
                         tables[size_t(s)], s, rows > 1, rows > 1 ? keep : std::span<const int32_t>{}});
      }
      run_step(steps);
    };
    // The first draft reads each sequence's first `rows` rows of a verify step.
    auto first_draft = [&](int rows) {
      std::vector<SequenceStep> steps;
      std::vector<int32_t> sources;
      for (int s = 0; s < batch; ++s) {
        steps.push_back({std::span<const int32_t>(&rows_tokens[size_t(s) * (1 + k)], size_t(rows)), context,
                         tables[size_t(s)]});
        for (int i = 0; i < rows; ++i) sources.push_back(s * (1 + k) + i);
      }
      run_draft(steps, sources, DraftInput::TargetHidden);
    };
    auto chained_draft = [&](int d) {
      std::vector<SequenceStep> steps;
      std::vector<int32_t> sources;
      for (int s = 0; s < batch; ++s) {
        steps.push_back({std::span<const int32_t>(&rows_tokens[size_t(s) * (1 + k)], 1), context + d, tables[size_t(s)]});
        sources.push_back(s);
      }
      run_draft(steps, sources, DraftInput::DraftHidden);
    };
    auto best_time = [&](const std::function<void()>& round) {
      double best = 1e30;
      for (int r = 0; r < o.repeats + 1; ++r) {  // the first run records the step graphs
        auto start = Clock::now();
        for (int step = 0; step < o.decode_steps; ++step) round();
        if (r > 0) best = std::min(best, seconds_since(start) / o.decode_steps);
      }
      return best;
    };
    SpeculativeResult sr{batch, context, k};
    sr.one_row_s = best_time([&] { target_step(1); });
    sr.verify_s = best_time([&] { target_step(1 + k); });
    target_step(1 + k);  // the hidden rows the drafts read
    sr.draft_s = best_time([&] { first_draft(1); });
    sr.chained_draft_s = best_time([&] { chained_draft(1); });
    for (int accepted = 0; accepted <= k; ++accepted) {
      const double round = best_time([&] {
        target_step(1 + k);
        first_draft(accepted + 1);
        for (int d = 1; d < k; ++d) chained_draft(d);
      });
      sr.tokens_per_s.push_back(double(batch) * (accepted + 1) / round);
    }
    log::info("speculative k={} batch {} context {}: verify {:.2f} ms ({:.2f}x a one-row step), draft {:.2f} ms",
              k, batch, context, sr.verify_s * 1e3, sr.verify_s / sr.one_row_s, sr.draft_s * 1e3);
    return sr;
  };

  // Decode: every sequence adds one token at `context` cached tokens (cache contents do not change
  // the work done).
  const double state_bytes = double(local.state_bytes_per_sequence(4));
  const double kv_token_bytes = double(local.kv_bytes_per_token(shape.kv_dtype));
  for (int context : o.contexts)
    for (int batch : o.batches) {
      std::vector<int32_t> token(size_t(batch), 1);
      auto decode_steps = [&] {
        for (int step = 0; step < o.decode_steps; ++step) {
          std::vector<SequenceStep> steps;
          for (int s = 0; s < batch; ++s)
            steps.push_back({std::span<const int32_t>(&token[size_t(s)], 1), context + step, tables[size_t(s)], s, false});
          run_step(steps);
        }
      };
      auto best_of_repeats = [&] {
        double best = 1e30;
        for (int r = 0; r < o.repeats; ++r) {
          auto start = Clock::now();
          decode_steps();
          best = std::min(best, seconds_since(start));
        }
        return best;
      };
      const double best = best_of_repeats();
      const double tokens_per_s = double(batch) * o.decode_steps / best;
      // State is read and written each step; KV of the whole context is read.
      const double bytes = weight_bytes + batch * (2.0 * state_bytes + (context + 1) * kv_token_bytes);
      DecodeResult d{batch, context, tokens_per_s, bytes, batch / (bytes / report.copy_bandwidth)};
      if (P > 1) {  // op by op (a graph would bypass the communicator): each collective timed, then
                    // steps with and without the collectives
        for (auto& runner : runners) runner->set_use_graphs(false);
        BenchCommunicator& rank0 = *comms[0];
        rank0.calls = 0, rank0.seconds = 0, rank0.timing = true;
        decode_steps();
        rank0.timing = false;
        d.collectives_per_step = rank0.calls / o.decode_steps;
        d.collective_s_per_step = rank0.seconds / o.decode_steps;
        const double with = best_of_repeats();
        for (auto& c : comms) c->skip = true;
        const double without = best_of_repeats();
        for (auto& c : comms) c->skip = false;
        d.collective_cost_s_per_step = (with - without) / o.decode_steps;
        for (auto& runner : runners) runner->set_use_graphs(!o.enforce_eager);
      }
      report.decode.push_back(d);
      log::info("decode batch {} context {}: {:.1f} tok/s", batch, context, tokens_per_s);
      if (k > 0) report.speculative.push_back(speculative_rounds(batch, context));
    }
  return report;
}

}  // namespace dcu
