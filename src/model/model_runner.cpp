#include "model/model_runner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/log.h"

namespace dcu {

// Scratch tensors for one step of up to T_max tokens, carved from one backend allocation.
struct ModelRunner::Activations {
  Backend& backend;
  void* arena = nullptr;
  Tensor hidden;     // [T, H] residual stream
  Tensor normed;     // [T, H]
  Tensor mixer_out;  // [T, H]
  // attention
  Tensor qg;         // [T, nh, 2d]
  Tensor q, gate;    // [T, nh, d]
  Tensor k, v;       // [T, nkv, d]
  Tensor attn;       // [T, nh, d]
  // gated deltanet
  Tensor mixed, conv_out;  // [T, C]
  Tensor z, core, core_normed;  // [T, Hv * dv]
  Tensor a, b, g, beta;    // [T, Hv]
  // mlp
  Tensor mlp_gate, mlp_up;  // [T, I]
  // batch arrays and logits
  Tensor ids;          // [T] i32
  Tensor logit_rows;   // [T] i32
  Tensor selected;     // [T, H]
  Tensor logits;       // [logit_rows_max, V] (V: this rank's vocab_stride under tensor parallelism)
  // tensor parallelism only
  Tensor embed_rows;   // [T + 1, H] this rank's embedding rows; the last row stays zero
  Tensor embed_map;    // [T] i32 row of embed_rows for each token (T: not in this rank's vocabulary)
  Tensor gathered;     // [ranks * logit_rows_max * V] every rank's logits
  Tensor full_logits;  // [logit_rows_max, vocab_size] rank 0's gathered slices side by side
  // drafting (an MTP block) only
  Tensor final_hidden;  // [T, H] the last target step's hidden rows after the final norm
  Tensor draft_hidden;  // [T, H] the last draft step's rows after mtp.norm
  Tensor source_rows;   // [T] i32 the row of final_hidden or draft_hidden each draft row reads

  explicit Activations(Backend& be) : backend(be) {}  // sizes only, no memory
  Activations(Backend& be, const ModelConfig& c, int64_t full_vocab, int T, int logit_rows_max, int ranks,
              bool drafting)
      : backend(be) {
    arena = backend.allocate(lay_out(c, full_vocab, T, logit_rows_max, ranks, drafting, nullptr));
    lay_out(c, full_vocab, T, logit_rows_max, ranks, drafting, static_cast<char*>(arena));
  }

  // Points every tensor into `base` (when given) and returns the bytes they need together. `c` is the
  // rank's local configuration.
  size_t lay_out(const ModelConfig& c, int64_t full_vocab, int T, int logit_rows_max, int ranks, bool drafting,
                 char* base) {
    const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
    const int64_t nh = c.num_heads, nkv = c.num_kv_heads, d = c.head_dim;
    const int64_t C = c.linear_conv_dim(), HvDv = c.linear_value_dim(), Hv = c.linear_num_value_heads;
    struct Spec { Tensor* t; DType dtype; std::vector<int64_t> shape; };
    std::vector<Spec> specs = {
        {&hidden, DType::F32, {T, H}}, {&normed, DType::F32, {T, H}}, {&mixer_out, DType::F32, {T, H}},
        {&qg, DType::F32, {T, nh, 2 * d}}, {&q, DType::F32, {T, nh, d}}, {&gate, DType::F32, {T, nh, d}},
        {&k, DType::F32, {T, nkv, d}}, {&v, DType::F32, {T, nkv, d}}, {&attn, DType::F32, {T, nh, d}},
        {&mixed, DType::F32, {T, C}}, {&conv_out, DType::F32, {T, C}}, {&z, DType::F32, {T, HvDv}},
        {&core, DType::F32, {T, HvDv}}, {&core_normed, DType::F32, {T, HvDv}}, {&a, DType::F32, {T, Hv}},
        {&b, DType::F32, {T, Hv}}, {&g, DType::F32, {T, Hv}}, {&beta, DType::F32, {T, Hv}},
        {&mlp_gate, DType::F32, {T, I}}, {&mlp_up, DType::F32, {T, I}}, {&ids, DType::I32, {T}},
        {&logit_rows, DType::I32, {T}},
        {&selected, DType::F32, {T, H}}, {&logits, DType::F32, {logit_rows_max, V}},
    };
    if (ranks > 1) {
      specs.push_back({&embed_rows, DType::F32, {T + 1, H}});
      specs.push_back({&embed_map, DType::I32, {T}});
      specs.push_back({&gathered, DType::F32, {ranks * int64_t(logit_rows_max) * V}});
      specs.push_back({&full_logits, DType::F32, {logit_rows_max, full_vocab}});
    }
    if (drafting) {
      specs.push_back({&final_hidden, DType::F32, {T, H}});
      specs.push_back({&draft_hidden, DType::F32, {T, H}});
      specs.push_back({&source_rows, DType::I32, {T}});
    }
    size_t offset = 0;
    for (const auto& s : specs) {
      size_t n = dtype_size(s.dtype);
      for (int64_t x : s.shape) n *= size_t(std::max<int64_t>(x, 1));
      if (base) {
        s.t->data = base + offset;
        s.t->dtype = s.dtype;
        s.t->ndim = int(s.shape.size());
        for (size_t i = 0; i < s.shape.size(); ++i) s.t->shape[i] = s.shape[i];
      }
      offset += (n + 255) / 256 * 256;
    }
    return offset;
  }
  ~Activations() {
    if (arena) backend.release(arena);
    if (batch_ints) backend.release(batch_ints);
  }

  // The BatchHost arrays, back to back in backend memory; grows with the batch (block tables scale
  // with context length, so no fixed bound fits every model).
  int32_t* batch_ints = nullptr;
  size_t batch_ints_capacity = 0;
  int32_t* batch_ints_for(size_t count) {
    if (count > batch_ints_capacity) {
      backend.clear_graphs();  // they read the batch arrays where they were
      if (batch_ints) backend.release(batch_ints);
      batch_ints = nullptr;  // until the allocation succeeds: a failed one leaves no dangling buffer
      const size_t capacity = std::max(count, batch_ints_capacity * 2);
      batch_ints_capacity = 0;
      batch_ints = static_cast<int32_t*>(backend.allocate(capacity * sizeof(int32_t)));
      batch_ints_capacity = capacity;
    }
    return batch_ints;
  }
};

namespace {
// The first `rows` rows of a [T_max, ...] scratch tensor.
Tensor rows_of(const Tensor& t, int64_t rows) { return t.slice_rows(0, rows); }
}  // namespace

ModelRunner::ModelRunner(Backend& backend, const ModelConfig& config, ModelWeights weights, CacheStorage& cache,
                         int max_tokens_per_step, int max_logit_rows, Communicator* comm)
    : backend_(backend), config_(config), comm_(comm && comm->size() > 1 ? comm : nullptr),
      shard_(shard_plan(config, comm_ ? comm_->rank() : 0, comm_ ? comm_->size() : 1)),
      local_(local_config(config, shard_)), weights_(std::move(weights)), cache_(cache),
      max_tokens_(max_tokens_per_step), max_logit_rows_(max_logit_rows > 0 ? max_logit_rows : max_tokens_per_step),
      act_(std::make_unique<Activations>(backend, local_, config.vocab_size, max_tokens_, max_logit_rows_,
                                         shard_.size, weights_.mtp.has_value())),
      act_order_(has_act_order(weights_)) {
  if (comm_) backend_.fill_zero(act_->embed_rows.slice_rows(max_tokens_, 1).data, size_t(config.hidden_size) * 4);
}

ModelRunner::~ModelRunner() = default;

size_t ModelRunner::scratch_bytes(Backend& backend, const ModelConfig& config, int max_tokens_per_step,
                                  int max_logit_rows, int tensor_parallel_size, bool drafting) {
  Activations unallocated(backend);
  const ShardPlan plan = shard_plan(config, 0, tensor_parallel_size);
  return unallocated.lay_out(local_config(config, plan), config.vocab_size, max_tokens_per_step, max_logit_rows,
                             tensor_parallel_size, drafting, nullptr);
}

void ModelRunner::observe(const std::string& name, const Tensor& t) const {
  if (observer_) observer_(name, t);
}

namespace {
// Step graphs: decode steps of at most kGraphMaxSeqs sequences, each with one token or (speculative
// verify steps) the same number of rows, all with logits; block-table widths and position limits are
// rounded up to powers of two so that a graph serves many steps.
constexpr int kGraphMinPositions = 64;
constexpr int kGraphMaxRowsPerSeq = 9;  // 1 + the most speculative tokens

int power_of_two_at_least(int n) { return int(std::bit_ceil(unsigned(std::max(n, 1)))); }
}  // namespace

bool ModelRunner::records_graphs() const {
  return use_graphs_ && backend_.supports_graphs() && (!comm_ || comm_->records_in_graphs());
}

bool ModelRunner::graph_step(std::span<const SequenceStep> seqs) const {
  if (!records_graphs() || observer_ || seqs.empty() || seqs.size() > size_t(kGraphMaxSeqs)) return false;
  const size_t rows = seqs[0].tokens.size();
  if (rows > size_t(kGraphMaxRowsPerSeq)) return false;
  return std::all_of(seqs.begin(), seqs.end(), [&](const SequenceStep& s) {
    return s.tokens.size() == rows && s.all_logits == (rows > 1);
  });
}

void ModelRunner::build_batch(std::span<const SequenceStep> seqs, bool graph) {
  BatchHost& h = batch_host_;
  const int bs = cache_.shape().block_size;
  h = BatchHost{};
  h.seq_row_begin.push_back(0);
  for (const auto& s : seqs) {
    h.max_blocks_per_seq = std::max(h.max_blocks_per_seq, int(s.block_table.size()));
    h.position_limit = std::max(h.position_limit, s.context_before + int(s.tokens.size()));
  }
  if (graph) {
    h.max_blocks_per_seq = power_of_two_at_least(h.max_blocks_per_seq);
    h.position_limit = std::max(kGraphMinPositions, power_of_two_at_least(h.position_limit));
  }
  logit_rows_.clear();
  std::vector<int32_t> ids;
  for (const auto& s : seqs) {
    DCU_CHECK(!s.tokens.empty());
    const int n = int(s.tokens.size());
    const int row0 = h.seq_row_begin.back();
    DCU_CHECK(int64_t(s.block_table.size()) * bs >= s.context_before + n || config_.num_full_attention_layers() == 0);
    for (int i = 0; i < n; ++i) {
      const int pos = s.context_before + i;
      ids.push_back(s.tokens[size_t(i)]);
      h.positions.push_back(pos);
      h.slot_mapping.push_back(s.block_table.empty() ? 0 : s.block_table[size_t(pos / bs)] * bs + pos % bs);
      if (s.all_logits || i == n - 1) logit_rows_.push_back(row0 + i);
    }
    h.seq_row_begin.push_back(row0 + n);
    h.seq_context_before.push_back(s.context_before);
    h.state_slots.push_back(s.state_slot);
    if (s.state_write_slots.empty()) {
      h.state_write_slots.insert(h.state_write_slots.end(), size_t(n - 1), -1);
      h.state_write_slots.push_back(s.state_slot);
    } else {
      DCU_CHECK(int(s.state_write_slots.size()) == n);
      h.state_write_slots.insert(h.state_write_slots.end(), s.state_write_slots.begin(), s.state_write_slots.end());
    }
    for (int i = 0; i < h.max_blocks_per_seq; ++i)
      h.block_tables.push_back(i < int(s.block_table.size()) ? s.block_table[size_t(i)] : -1);
  }
  const int T = int(ids.size());
  if (T > max_tokens_) fail("model step of {} tokens exceeds the configured maximum of {}", T, max_tokens_);
  if (int(logit_rows_.size()) > max_logit_rows_)
    fail("model step asks for {} logit rows; at most {} are supported", logit_rows_.size(), max_logit_rows_);
  for (int32_t id : ids)
    if (id < 0 || id >= config_.vocab_size) fail("token id {} is outside the vocabulary (0..{})", id, config_.vocab_size - 1);

  // Upload the arrays back to back; the layout points into backend memory.
  std::vector<int32_t> packed;
  auto append = [&](const std::vector<int32_t>& v) {
    size_t offset = packed.size();
    packed.insert(packed.end(), v.begin(), v.end());
    return offset;
  };
  size_t o_rows = append(h.seq_row_begin), o_ctx = append(h.seq_context_before), o_pos = append(h.positions),
         o_slot = append(h.slot_mapping), o_blocks = append(h.block_tables), o_states = append(h.state_slots),
         o_writes = append(h.state_write_slots);
  int32_t* base = act_->batch_ints_for(packed.size());
  backend_.upload(base, packed.data(), packed.size() * 4);
  if (comm_) {
    // Vocab-parallel embedding: this rank looks up the ids in its slice; the others read the zero row.
    std::vector<int32_t> map(ids.size());
    for (size_t t = 0; t < ids.size(); ++t) {
      const int64_t local = ids[t] - shard_.vocab_begin;
      const bool mine = local >= 0 && local < shard_.vocab_rows;
      ids[t] = mine ? int32_t(local) : 0;
      map[t] = mine ? int32_t(t) : max_tokens_;
    }
    backend_.upload(act_->embed_map.data, map.data(), map.size() * 4);
  }
  backend_.upload(act_->ids.data, ids.data(), ids.size() * 4);
  backend_.upload(act_->logit_rows.data, logit_rows_.data(), logit_rows_.size() * 4);
  batch_ = BatchLayout{&h,          base + o_rows, base + o_ctx,    base + o_pos, base + o_slot,
                       base + o_blocks, base + o_states, base + o_writes};
}

std::vector<float>& ModelRunner::step_to_host(std::span<const SequenceStep> seqs) {
  const Tensor logits = step(seqs);
  logits_host_.resize(size_t(logits.numel()));
  backend_.download(logits_host_.data(), logits.data, logits.bytes());
  return logits_host_;
}

Tensor ModelRunner::step(std::span<const SequenceStep> seqs) {
  const bool graph = graph_step(seqs);
  build_batch(seqs, graph);
  const int T = batch_.num_tokens(), R = int(logit_rows_.size());
  if (!graph) return forward(T, R);
  // Everything the recorded launches depend on: the token and row counts, the block-table width and
  // the attention's context splits (from the position limit).
  const uint64_t key = uint64_t(T) | uint64_t(std::countr_zero(unsigned(batch_host_.max_blocks_per_seq))) << 16 |
                       uint64_t(std::countr_zero(unsigned(batch_host_.position_limit))) << 24 |
                       uint64_t(batch_host_.seq_rows(0)) << 32;
  if (backend_.launch_graph(key)) return step_logits(R);
  if (graph_shapes_seen_.insert(key).second) return forward(T, R);  // first time: eager, sizing the scratch
  Tensor logits;
  try {
    backend_.capture_graph(key, [&] { logits = forward(T, R); });
  } catch (const Error& e) {  // a driver that cannot record this step: keep serving without graphs
    log::warn("decode steps run without graphs from now on: recording one failed ({})", e.what());
    use_graphs_ = false;
    return forward(T, R);
  }
  backend_.launch_graph(key);
  return logits;
}

Tensor ModelRunner::forward(int T, int R) {
  const ModelConfig& c = local_;
  Activations& a = *act_;
  Tensor hidden = rows_of(a.hidden, T);
  if (comm_) embed_sharded(T);
  else backend_.embed(weights_.embed_tokens, rows_of(a.ids, T), hidden);
  observe("embed", hidden);
  // Each residual add is fused with the norm that reads its result (the MLP's, the next layer's); on a
  // backend that folds norms into its matmuls (decode steps, nobody observing the normed rows)
  // neither is an op of its own: see project_input and project_output.
  fold_norms_ = !observer_ && !act_order_ && backend_.fuses_norms(T);
  Tensor normed = rows_of(a.normed, T), mixer_out = rows_of(a.mixer_out, T);
  const float eps = c.rms_norm_eps;
  if (!fold_norms_) backend_.rms_norm(hidden, weights_.layers[0].input_norm, eps, true, normed);
  for (int layer = 0; layer < c.num_layers; ++layer) {
    const LayerWeights& L = weights_.layers[size_t(layer)];
    if (L.type == LayerType::FullAttention) attention_layer(L, cache_.kv(layer), T);
    else gdn_layer(L, cache_.state(layer), T);
    if (!fold_norms_) {
      all_reduce(mixer_out);  // o_proj / out_proj partial sums
      backend_.add_rms_norm(hidden, mixer_out, weights_.layers[size_t(layer)].post_norm, eps, true, normed);
    }
    mlp(L, T);
    if (!fold_norms_) {
      all_reduce(mixer_out);  // down_proj partial sums
      if (layer + 1 < c.num_layers)
        backend_.add_rms_norm(hidden, mixer_out, weights_.layers[size_t(layer) + 1].input_norm, eps, true, normed);
      else
        backend_.add(hidden, mixer_out);
    }
    observe("layer" + std::to_string(layer) + ".out", hidden);
  }
  Tensor selected = rows_of(a.selected, R);
  if (weights_.mtp) {  // the drafts read every row's normed hidden state
    Tensor normed_rows = rows_of(a.final_hidden, T);
    backend_.rms_norm(hidden, weights_.final_norm, eps, true, normed_rows);
    backend_.gather_rows(normed_rows, rows_of(a.logit_rows, R), selected);
    observe("final_norm", selected);
    return logits_of_selected(R);
  }
  backend_.gather_rows(hidden, rows_of(a.logit_rows, R), selected);
  if (fold_norms_ && !comm_) {
    Tensor logits = rows_of(a.logits, R);
    const Linear head[] = {weights_.lm_head};
    const Tensor out[] = {logits};
    backend_.norm_matmul_group(selected, weights_.final_norm, eps, head, out);
    return logits;
  }
  backend_.rms_norm(selected, weights_.final_norm, c.rms_norm_eps, true, selected);
  observe("final_norm", selected);
  return logits_of_selected(R);
}

// lm_head over the R normed rows in `selected`.
Tensor ModelRunner::logits_of_selected(int R) {
  if (comm_) return gather_logits(R);
  Tensor logits = rows_of(act_->logits, R);
  backend_.matmul(rows_of(act_->selected, R), weights_.lm_head, logits);
  return logits;
}

Tensor ModelRunner::draft(std::span<const SequenceStep> seqs, std::span<const int32_t> source_rows, DraftInput from) {
  if (!weights_.mtp) fail("this runner has no MTP block to draft with");
  build_batch(seqs, false);
  const int T = batch_.num_tokens(), R = int(logit_rows_.size());
  DCU_CHECK(int(source_rows.size()) == T);
  backend_.upload(act_->source_rows.data, source_rows.data(), source_rows.size() * 4);
  return draft_forward(T, R, from);
}

// The MTP block (research/qwen35-spec.md section 7.1): u = fc(concat(norm(embed(token)), norm(hidden))),
// one full-attention decoder layer on u with the block's own KV cache, mtp.norm, the shared lm_head. Norms
// are never folded here: a draft's cost is its weights, not its launches.
Tensor ModelRunner::draft_forward(int T, int R, DraftInput from) {
  const MtpWeights& m = *weights_.mtp;
  Activations& a = *act_;
  const float eps = local_.rms_norm_eps;
  Tensor hidden = rows_of(a.hidden, T), normed = rows_of(a.normed, T), mixer_out = rows_of(a.mixer_out, T);
  Tensor source = rows_of(a.selected, T);  // free until the logits
  backend_.gather_rows(from == DraftInput::TargetHidden ? a.final_hidden : a.draft_hidden, rows_of(a.source_rows, T),
                       source);
  if (comm_) embed_sharded(T);
  else backend_.embed(weights_.embed_tokens, rows_of(a.ids, T), hidden);
  backend_.rms_norm(hidden, m.pre_fc_norm_embedding, eps, true, normed);
  backend_.rms_norm(source, m.pre_fc_norm_hidden, eps, true, source);
  backend_.matmul(normed, m.fc_embedding, hidden);  // fc is whole on every rank: no reduction
  backend_.matmul(source, m.fc_hidden, mixer_out);
  backend_.add(hidden, mixer_out);
  observe("mtp.fc", hidden);
  fold_norms_ = false;
  backend_.rms_norm(hidden, m.layer.input_norm, eps, true, normed);
  attention_layer(m.layer, cache_.draft_kv(0), T);
  all_reduce(mixer_out);
  backend_.add_rms_norm(hidden, mixer_out, m.layer.post_norm, eps, true, normed);
  mlp(m.layer, T);
  all_reduce(mixer_out);
  backend_.add(hidden, mixer_out);
  Tensor out = rows_of(a.draft_hidden, T);
  backend_.rms_norm(hidden, m.norm, eps, true, out);
  observe("mtp.norm", out);
  backend_.gather_rows(out, rows_of(a.logit_rows, R), rows_of(a.selected, R));
  return logits_of_selected(R);
}

// Where forward() leaves the logits of a step with R logit rows.
Tensor ModelRunner::step_logits(int R) const {
  if (!comm_) return rows_of(act_->logits, R);
  if (shard_.rank != 0) return Tensor(act_->full_logits.data, DType::F32, {0, config_.vocab_size});
  return rows_of(act_->full_logits, R);
}

void ModelRunner::embed_sharded(int T) {
  Activations& a = *act_;
  backend_.embed(weights_.embed_tokens, rows_of(a.ids, T), rows_of(a.embed_rows, T));
  backend_.gather_rows(a.embed_rows, rows_of(a.embed_map, T), rows_of(a.hidden, T));
  all_reduce(rows_of(a.hidden, T));
}

// Each rank computes the logits of its vocabulary slice; rank 0 puts the gathered slices side by side.
Tensor ModelRunner::gather_logits(int R) {
  Activations& a = *act_;
  const int64_t stride = shard_.vocab_stride;
  const int P = shard_.size;
  if (shard_.vocab_rows > 0)
    backend_.matmul(rows_of(a.selected, R), weights_.lm_head, Tensor(a.logits.data, DType::F32, {R, shard_.vocab_rows}));
  comm_->all_gather(Tensor(a.logits.data, DType::F32, {R * stride}), Tensor(a.gathered.data, DType::F32, {P * R * stride}));
  if (shard_.rank != 0) return step_logits(R);
  const int64_t V = config_.vocab_size;
  Tensor logits = step_logits(R);
  for (int r = 0; r < P; ++r) {
    // Rank r's block holds R rows of its own width, packed.
    const int64_t begin = std::min<int64_t>(V, r * stride), width = std::min<int64_t>(V, begin + stride) - begin;
    if (width > 0)
      backend_.copy_columns(Tensor(a.gathered.as<float>() + r * R * stride, DType::F32, {R, width}), logits, begin);
  }
  return logits;
}

void ModelRunner::attention_layer(const LayerWeights& L, PagedKv& kv, int T) {
  const ModelConfig& c = local_;
  const AttentionWeights& w = L.attn;
  Activations& a = *act_;
  Tensor qg = rows_of(a.qg, T), q = rows_of(a.q, T), gate = rows_of(a.gate, T);
  Tensor k = rows_of(a.k, T), v = rows_of(a.v, T), attn = rows_of(a.attn, T);
  const int64_t kv_width = int64_t(c.num_kv_heads) * c.head_dim;
  const Linear projections[] = {w.q_proj, w.k_proj, w.v_proj};
  const Tensor outputs[] = {qg.reshaped({T, int64_t(c.num_heads) * 2 * c.head_dim}), k.reshaped({T, kv_width}),
                            v.reshaped({T, kv_width})};
  project_input(L.input_norm, T, projections, outputs);
  backend_.attention_prep(qg, k, w.q_norm, w.k_norm, c.rms_norm_eps, RopeParams{c.rotary_dim, c.rope_theta}, batch_, q,
                          gate);
  backend_.kv_cache_write(k, v, batch_, kv);
  backend_.paged_attention(q, kv, batch_, 1.0f / std::sqrt(float(c.head_dim)), attn);
  Tensor attn_flat = attn.reshaped({T, int64_t(c.num_heads) * c.head_dim});
  backend_.sigmoid_mul(attn_flat, gate.reshaped({T, int64_t(c.num_heads) * c.head_dim}));
  project_output(attn_flat, w.o_proj, T);
}

void ModelRunner::gdn_layer(const LayerWeights& L, GdnState& state, int T) {
  const ModelConfig& c = local_;
  const GdnWeights& w = L.gdn;
  Activations& a = *act_;
  Tensor mixed = rows_of(a.mixed, T), conv_out = rows_of(a.conv_out, T), z = rows_of(a.z, T);
  Tensor ga = rows_of(a.a, T), gb = rows_of(a.b, T), g = rows_of(a.g, T), beta = rows_of(a.beta, T);
  Tensor core = rows_of(a.core, T), core_normed = rows_of(a.core_normed, T);
  const Linear projections[] = {w.in_proj_qkv, w.in_proj_z, w.in_proj_a, w.in_proj_b};
  const Tensor outputs[] = {mixed, z, ga, gb};
  project_input(L.input_norm, T, projections, outputs);
  backend_.gdn_conv(mixed, w.conv1d, state, batch_, conv_out);
  backend_.gdn_gates(ga, gb, w.A_log, w.dt_bias, g, beta);
  GdnDims dims{c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim,
               c.linear_conv_kernel};
  backend_.gdn_delta_rule(conv_out, g, beta, dims, state, batch_, core);
  const int64_t R = int64_t(T) * c.linear_num_value_heads, dv = c.linear_value_head_dim;
  backend_.gated_rms_norm(core.reshaped({R, dv}), z.reshaped({R, dv}), w.norm, c.rms_norm_eps,
                          core_normed.reshaped({R, dv}));
  project_output(core_normed, w.out_proj, T);
}

void ModelRunner::mlp(const LayerWeights& L, int T) {
  Activations& a = *act_;
  Tensor gate = rows_of(a.mlp_gate, T), up = rows_of(a.mlp_up, T);
  if (fold_norms_)
    backend_.norm_gate_up_swiglu(rows_of(a.hidden, T), L.post_norm, local_.rms_norm_eps, L.mlp.gate_proj,
                                 L.mlp.up_proj, gate);
  else  // the post-attention norm of the residual stream (forward())
    backend_.gate_up_swiglu(rows_of(a.normed, T), L.mlp.gate_proj, L.mlp.up_proj, gate, up, gate);
  project_output(gate, L.mlp.down_proj, T);
}

// The projections that read the layer's normed residual stream: from `normed`, or from the stream itself
// through the norm when the backend folds it in.
void ModelRunner::project_input(const Tensor& norm_w, int T, std::span<const Linear> ws, std::span<const Tensor> ys) {
  if (fold_norms_) backend_.norm_matmul_group(rows_of(act_->hidden, T), norm_w, local_.rms_norm_eps, ws, ys);
  else backend_.matmul_group(rows_of(act_->normed, T), ws, ys);
}

// The projection that ends a mixer or the MLP: into mixer_out (added to the stream by the next norm,
// after the all-reduce), or added to the stream in place. Under tensor parallelism rank 0 adds its
// partial sum to its copy of the stream and the other ranks replace theirs with their partial sums, so
// that the all-reduce leaves stream + every partial sum on every rank.
void ModelRunner::project_output(const Tensor& x, const Linear& w, int T) {
  if (!fold_norms_) {
    backend_.matmul(x, w, rows_of(act_->mixer_out, T));
    return;
  }
  Tensor hidden = rows_of(act_->hidden, T);
  if (shard_.rank == 0) backend_.matmul_accumulate(x, w, hidden);
  else backend_.matmul(x, w, hidden);
  all_reduce(hidden);
}

}  // namespace dcu
