// Maps checkpoint tensor names to ModelWeights, checking every shape and dtype; the matrices a quantized
// checkpoint ships quantized go through model/quantized_loading.h.

#include <atomic>
#include <cmath>
#include <cstring>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "model/checkpoint_formats.h"
#include "model/quantize.h"
#include "model/quantized_loading.h"
#include "model/safetensors.h"
#include "model/weight_slice.h"
#include "model/weights.h"

namespace dcu {
namespace {

// Keeps the mapped checkpoint alive for backends that read weights in place.
class MappedStorage final : public WeightStorage {
 public:
  explicit MappedStorage(Checkpoint ckpt) : checkpoint(std::move(ckpt)) {}
  Checkpoint checkpoint;
};

// Backend buffers holding uploaded or generated weights.
class BufferStorage final : public WeightStorage {
 public:
  explicit BufferStorage(Backend& backend) : backend_(backend) {}
  ~BufferStorage() override {
    for (void* p : buffers_) backend_.release(p);
  }
  void* allocate(size_t bytes) {
    buffers_.push_back(backend_.allocate(bytes));
    return buffers_.back();
  }

 private:
  Backend& backend_;
  std::vector<void*> buffers_;
};

// A sharded checkpoint on the CPU: views of the mapped files plus copies of the slices that are not
// contiguous there.
class MixedStorage final : public WeightStorage {
 public:
  MixedStorage(std::shared_ptr<WeightStorage> mapped, std::shared_ptr<WeightStorage> buffers)
      : mapped_(std::move(mapped)), buffers_(std::move(buffers)) {}

 private:
  std::shared_ptr<WeightStorage> mapped_, buffers_;
};

// One expected tensor: where it goes (a plain tensor, or a matrix the matmuls read), the shape it must
// have in the file and this rank's slice.
struct Expected {
  std::string name;  // without the "model.language_model." / "model." prefix for text weights
  std::variant<Tensor*, Linear*> slot;
  std::vector<int64_t> shape;
  Slice slice = {};

  bool is_matrix() const { return std::holds_alternative<Linear*>(slot); }
  // Names outside the text model's prefix: lm_head and the MTP block are top level.
  bool top_level() const { return name == "lm_head.weight" || name.rfind("mtp.", 0) == 0; }
  // A Linear module the checkpoint may ship quantized (a tied lm_head's quantized copy is the embedding,
  // no module; the MTP block is read dense).
  bool is_module() const { return is_matrix() && name != "embed_tokens.weight" && name.rfind("mtp.", 0) != 0; }
  void place(const Tensor& t) const {
    if (is_matrix()) *std::get<Linear*>(slot) = Linear(t);
    else *std::get<Tensor*>(slot) = t;
  }
};

size_t numel_of(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

// The shape of `e`'s slice.
std::vector<int64_t> local_shape(const Expected& e) {
  std::vector<int64_t> shape = e.shape;
  if (!e.slice.rows.empty()) {
    shape[0] = 0;
    for (auto [begin, count] : e.slice.rows) shape[0] += count;
  }
  if (e.slice.col_count >= 0) shape.back() = e.slice.col_count;
  return shape;
}

// The tensors of one decoder layer named `n` ("layers.3.") into L, L.type set.
void add_layer_tensors(const ModelConfig& c, const ShardPlan& p, const std::string& n, LayerWeights& L,
                       std::vector<Expected>& e) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const bool tp = p.sharded();
  const Slice all;
  {
    // Column-parallel projections keep rows (heads, intermediate rows); row-parallel ones keep columns.
    auto rows = [&](int64_t begin, int64_t count) { return tp ? row_slice(begin, count) : all; };
    auto cols = [&](int64_t begin, int64_t count) { return tp ? col_slice(begin, count) : all; };
    const int64_t ib = p.intermediate_begin, il = p.intermediate_size;
    e.push_back({n + "input_layernorm.weight", &L.input_norm, {H}});
    e.push_back({n + "post_attention_layernorm.weight", &L.post_norm, {H}});
    e.push_back({n + "mlp.gate_proj.weight", &L.mlp.gate_proj, {I, H}, rows(ib, il)});
    e.push_back({n + "mlp.up_proj.weight", &L.mlp.up_proj, {I, H}, rows(ib, il)});
    e.push_back({n + "mlp.down_proj.weight", &L.mlp.down_proj, {H, I}, cols(ib, il)});
    if (L.type == LayerType::FullAttention) {
      const int64_t nh = c.num_heads, nkv = c.num_kv_heads, d = c.head_dim;
      // q_proj rows are per head [d query | d gate]: a head range keeps the interleave.
      const int64_t qb = p.q_head_begin, ql = p.num_heads, kb = p.kv_head_begin, kl = p.num_kv_heads;
      e.push_back({n + "self_attn.q_proj.weight", &L.attn.q_proj, {nh * d * 2, H}, rows(qb * 2 * d, ql * 2 * d)});
      e.push_back({n + "self_attn.k_proj.weight", &L.attn.k_proj, {nkv * d, H}, rows(kb * d, kl * d)});
      e.push_back({n + "self_attn.v_proj.weight", &L.attn.v_proj, {nkv * d, H}, rows(kb * d, kl * d)});
      e.push_back({n + "self_attn.o_proj.weight", &L.attn.o_proj, {H, nh * d}, cols(qb * d, ql * d)});
      e.push_back({n + "self_attn.q_norm.weight", &L.attn.q_norm, {d}});
      e.push_back({n + "self_attn.k_norm.weight", &L.attn.k_norm, {d}});
    } else {
      const int64_t C = c.linear_conv_dim(), Hv = c.linear_num_value_heads, dv = c.linear_value_head_dim;
      const int64_t dk = c.linear_key_head_dim, Kd = c.linear_key_dim();
      const int64_t kb = p.key_head_begin, kl = p.num_key_heads, vb = p.value_head_begin, vl = p.num_value_heads;
      // q | k | v sections are sharded separately, each by its own heads (qwen35-spec.md section 9, item 12).
      Slice qkv = all;
      if (tp) qkv.rows = {{kb * dk, kl * dk}, {Kd + kb * dk, kl * dk}, {2 * Kd + vb * dv, vl * dv}};
      e.push_back({n + "linear_attn.in_proj_qkv.weight", &L.gdn.in_proj_qkv, {C, H}, qkv});
      e.push_back({n + "linear_attn.in_proj_z.weight", &L.gdn.in_proj_z, {Hv * dv, H}, rows(vb * dv, vl * dv)});
      e.push_back({n + "linear_attn.in_proj_a.weight", &L.gdn.in_proj_a, {Hv, H}, rows(vb, vl)});
      e.push_back({n + "linear_attn.in_proj_b.weight", &L.gdn.in_proj_b, {Hv, H}, rows(vb, vl)});
      e.push_back({n + "linear_attn.conv1d.weight", &L.gdn.conv1d, {C, 1, c.linear_conv_kernel}, qkv});
      e.push_back({n + "linear_attn.dt_bias", &L.gdn.dt_bias, {Hv}, rows(vb, vl)});
      e.push_back({n + "linear_attn.A_log", &L.gdn.A_log, {Hv}, rows(vb, vl)});
      e.push_back({n + "linear_attn.norm.weight", &L.gdn.norm, {dv}});
      e.push_back({n + "linear_attn.out_proj.weight", &L.gdn.out_proj, {H, Hv * dv}, cols(vb * dv, vl * dv)});
    }
  }
}

// quantized_head: a tied lm_head gets its own (quantized) copy of the embedding rows. mtp: the MTP block too.
std::vector<Expected> expected_tensors(const ModelConfig& c, ModelWeights& w, const ShardPlan& p,
                                       bool quantized_head, bool mtp) {
  const int64_t H = c.hidden_size, V = c.vocab_size;
  const Slice vocab = p.sharded() ? row_slice(p.vocab_begin, p.vocab_rows) : Slice{};
  std::vector<Expected> e;
  e.push_back({"embed_tokens.weight", &w.embed_tokens, {V, H}, vocab});
  e.push_back({"norm.weight", &w.final_norm, {H}});
  if (!c.tie_word_embeddings) e.push_back({"lm_head.weight", &w.lm_head, {V, H}, vocab});
  else if (quantized_head) e.push_back({"embed_tokens.weight", &w.lm_head, {V, H}, vocab});
  w.layers.resize(size_t(c.num_layers));
  for (int i = 0; i < c.num_layers; ++i) {
    w.layers[size_t(i)].type = c.layer_types[size_t(i)];
    add_layer_tensors(c, p, "layers." + std::to_string(i) + ".", w.layers[size_t(i)], e);
  }
  if (!mtp) return e;
  if (c.mtp_num_hidden_layers < 1) fail("the model has no MTP block (config.json: mtp_num_hidden_layers is 0)");
  MtpWeights& m = w.mtp.emplace();
  e.push_back({"mtp.pre_fc_norm_embedding.weight", &m.pre_fc_norm_embedding, {H}});
  e.push_back({"mtp.pre_fc_norm_hidden.weight", &m.pre_fc_norm_hidden, {H}});
  e.push_back({"mtp.fc.weight", &m.fc_embedding, {H, 2 * H}, col_slice(0, H)});
  e.push_back({"mtp.fc.weight", &m.fc_hidden, {H, 2 * H}, col_slice(H, H)});
  e.push_back({"mtp.norm.weight", &m.norm, {H}});
  m.layer.type = LayerType::FullAttention;
  add_layer_tensors(c, p, "mtp.layers.0.", m.layer, e);
  return e;
}

// Deterministic value for element `index` of a tensor: uniform with std 0.02 for matrices and norms,
// ones for the GDN output norm, log(1..16) for A_log (decays in a realistic range).
float random_value(uint64_t stream, uint64_t index, bool plain_norm, bool a_log) {
  uint64_t z = stream + index * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const float u = float(z >> 40) / float(1ull << 24);  // [0, 1)
  if (plain_norm) return 1.0f;
  if (a_log) return std::log(1.0f + 15.0f * u);
  return (2.0f * u - 1.0f) * 0.0346f;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

Tensor view_of(void* data, DType dtype, const std::vector<int64_t>& shape) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = int(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  return t;
}

// Conv weights are stored [C, 1, Kc]; ops read them as [C, Kc].
void squeeze_conv_weights(ModelWeights& w) {
  for (auto& L : w.layers)
    if (L.type == LayerType::LinearAttention && !L.gdn.conv1d.empty())
      L.gdn.conv1d = L.gdn.conv1d.reshaped({L.gdn.conv1d.shape[0], L.gdn.conv1d.shape[2]});
}

// Copies `e`'s slice of the stored tensor `src` (shape e.shape) into host memory.
std::vector<char> gather_slice(const Expected& e, const void* src, DType dtype) {
  const size_t esize = dtype_size(dtype);
  int64_t row_elems = 1;
  for (size_t i = 1; i < e.shape.size(); ++i) row_elems *= e.shape[i];
  const int64_t col_begin = e.slice.col_count < 0 ? 0 : e.slice.col_begin;
  const int64_t col_count = e.slice.col_count < 0 ? row_elems : e.slice.col_count;
  std::vector<std::pair<int64_t, int64_t>> ranges = e.slice.rows;
  if (ranges.empty()) ranges = {{0, e.shape[0]}};
  std::vector<char> out;
  const char* base = static_cast<const char*>(src);
  for (auto [begin, count] : ranges) {
    DCU_CHECK(begin >= 0 && begin + count <= e.shape[0]);
    for (int64_t r = begin; r < begin + count; ++r) {
      const char* row = base + size_t(r * row_elems + col_begin) * esize;
      out.insert(out.end(), row, row + size_t(col_count) * esize);
    }
  }
  return out;
}

// Where `e`'s one row range starts in the stored tensor `t`, in bytes (0 without a row slice).
size_t first_row_offset(const Expected& e, const StoredTensor& t) {
  return e.slice.rows.empty() ? 0 : (t.bytes / size_t(e.shape[0])) * size_t(e.slice.rows[0].first);
}

// The global row of each local row of `e`'s slice.
std::vector<int64_t> global_rows(const Expected& e) {
  std::vector<int64_t> out;
  if (e.slice.rows.empty())
    for (int64_t r = 0; r < e.shape[0]; ++r) out.push_back(r);
  for (auto [begin, count] : e.slice.rows)
    for (int64_t r = begin; r < begin + count; ++r) out.push_back(r);
  return out;
}

}  // namespace

namespace {

// BF16 matrix bytes -> F16, or F32 when a value does not fit f16 (|x| > 65504); `dtype` says which.
std::vector<char> convert_bf16_matrix(const std::vector<char>& bf16, const std::string& name, DType& dtype) {
  const size_t n = bf16.size() / 2;
  const auto* src = reinterpret_cast<const uint16_t*>(bf16.data());
  bool fits = true;
  for (size_t i = 0; i < n && fits; ++i) fits = std::fabs(bf16_to_f32(src[i])) <= 65504.0f;
  dtype = fits ? DType::F16 : DType::F32;
  std::vector<char> out(n * dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) {
    const float v = bf16_to_f32(src[i]);
    if (fits) {
      const uint16_t h = f32_to_f16(v);
      std::memcpy(&out[i * 2], &h, 2);
    } else {
      std::memcpy(&out[i * 4], &v, 4);
    }
  }
  if (!fits) log::warn("{}: values beyond the f16 range; kept in f32", name);
  return out;
}

// An act-order down_proj (docs/QUANTIZATION.md, "Act-order"): its input features, the MLP's intermediate
// rows, are produced in its canonical column order by reading gate_proj's and up_proj's rows in that
// order (the SwiGLU between them is elementwise). down_proj then takes its inputs as they come, without a
// gather, and a rank's share of them is whole groups of its columns.
void order_mlp_rows_by_down_proj(const Checkpoint& ckpt, std::vector<Expected>& expected,
                                 const std::vector<int>& quantized_index, std::vector<QuantizedMatrix>& quantized) {
  const std::string down = "mlp.down_proj.weight";
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string& name = expected[i].name;
    if (quantized_index[i] < 0 || !name.ends_with(down)) continue;
    QuantizedMatrix& m = quantized[size_t(quantized_index[i])];
    const std::vector<int32_t> order = quantized_input_order(ckpt, m.module, m.quant, m.N, m.K);
    if (order.empty()) continue;
    m.inputs_in_group_order = true;
    // This rank's canonical columns [begin, begin + count) as runs of stored intermediate rows.
    const int64_t begin = m.slice.col_count < 0 ? 0 : m.slice.col_begin;
    const int64_t count = m.slice.col_count < 0 ? m.K : m.slice.col_count;
    Slice rows;
    for (int64_t j = begin; j < begin + count; ++j) {
      const int64_t row = order[size_t(j)];
      if (!rows.rows.empty() && rows.rows.back().first + rows.rows.back().second == row) ++rows.rows.back().second;
      else rows.rows.push_back({row, 1});
    }
    const std::string mlp = name.substr(0, name.size() - down.size()) + "mlp.";
    for (size_t j = 0; j < expected.size(); ++j)
      if (expected[j].name == mlp + "gate_proj.weight" || expected[j].name == mlp + "up_proj.weight") {
        expected[j].slice = rows;
        if (quantized_index[j] >= 0) quantized[size_t(quantized_index[j])].slice = rows;
      }
  }
}

}  // namespace

ModelWeights load_weights(const std::string& model_dir, const ModelConfig& config, Backend& backend,
                          const LoadProgress& progress) {
  return load_weights(model_dir, config, backend, shard_plan(config, 0, 1), progress);
}

ModelWeights load_weights(const std::string& model_dir, const ModelConfig& config, Backend& backend,
                          const ShardPlan& shard, const LoadProgress& progress, const WeightOptions& options) {
  Checkpoint ckpt = Checkpoint::open(model_dir);
  const QuantizationConfig shipped = load_quantization_config(model_dir);
  ModelWeights w;
  const bool quantize = options.quantize != WeightFormat::Dense;
  std::vector<Expected> expected = expected_tensors(config, w, shard, quantize, options.mtp);

  // Text weights are "model.language_model.*" (Qwen3_5ForConditionalGeneration) or "model.*"
  // (Qwen3_5ForCausalLM); lm_head is top level.
  std::string prefix;
  for (const char* candidate : {"model.language_model.", "model."})
    if (ckpt.find(std::string(candidate) + "embed_tokens.weight")) {
      prefix = candidate;
      break;
    }
  if (prefix.empty()) fail("{}: no embed_tokens.weight under model.language_model.* or model.*", model_dir);
  auto checkpoint_name = [&](const Expected& e) { return e.top_level() ? e.name : prefix + e.name; };

  // The Linear modules the model reads, and those the checkpoint ships quantized (no dense .weight).
  std::set<std::string> modules;
  std::vector<QuantizedMatrix> shipped_quantized;
  std::vector<int> quantized_index(expected.size(), -1);
  for (size_t i = 0; i < expected.size(); ++i) {
    const Expected& e = expected[i];
    if (!e.is_module()) continue;
    const std::string full = checkpoint_name(e);
    const std::string module = full.substr(0, full.size() - std::string_view(".weight").size());
    modules.insert(module);
    const ModuleQuant q = shipped.module_storage(module);
    if (!q.quantized()) continue;
    quantized_index[i] = int(shipped_quantized.size());
    shipped_quantized.push_back({e.name, module, q, e.shape[0], e.shape[1], e.slice});
  }
  // Before any tensor is read: a missing or unclaimed scale, or a rank split that cuts a group.
  check_quantization_tensors(ckpt, shipped, modules, {"mtp.", "model.visual.", "visual."});
  check_group_alignment(shipped_quantized, config, shard.size);
  order_mlp_rows_by_down_proj(ckpt, expected, quantized_index, shipped_quantized);
  const std::map<std::string, size_t> module_sizes =
      shipped_quantized.empty() ? std::map<std::string, size_t>{} : module_bytes(ckpt);

  const bool in_place = backend.kind() == DeviceKind::Cpu;
  auto buffers = std::make_shared<BufferStorage>(backend);
  bool copied = false;
  size_t total = 0, done = 0;
  std::vector<const StoredTensor*> stored;
  std::vector<size_t> slice_bytes;
  for (size_t i = 0; i < expected.size(); ++i) {
    const Expected& e = expected[i];
    if (quantized_index[i] >= 0) {  // decoded whole, so every rank reads all of it
      stored.push_back(nullptr);
      slice_bytes.push_back(module_sizes.at(shipped_quantized[size_t(quantized_index[i])].module));
      total += slice_bytes.back();
      continue;
    }
    const std::string full = checkpoint_name(e);
    const StoredTensor* t = ckpt.find(full);
    if (!t) fail("{}: tensor {} is missing from the checkpoint", model_dir, full);
    if (t->shape != e.shape)
      fail("{}: tensor {} has shape {} but the config needs {}", *t->file, full, shape_text(t->shape),
           shape_text(e.shape));
    if (!t->dtype || *t->dtype == DType::I32)
      fail("{}: tensor {} has dtype {}; weights must be BF16, F16 or F32", *t->file, full, t->dtype_name);
    stored.push_back(t);
    slice_bytes.push_back(numel_of(local_shape(e)) * dtype_size(*t->dtype));
    total += slice_bytes.back();
  }
  auto upload = [&](const HostLinear& host) {
    copied = true;
    return upload_linear(host, backend, [&](size_t bytes) { return buffers->allocate(bytes); });
  };
  std::vector<std::string> requantized;  // act-order modules whose input features ranks split
  for (size_t i = 0; i < expected.size(); ++i) {
    const Expected& e = expected[i];
    if (quantized_index[i] >= 0) {
      const QuantizedMatrix& m = shipped_quantized[size_t(quantized_index[i])];
      bool requantized_here = false;
      HostLinear host = load_quantized_matrix(ckpt, m, &requantized_here);
      if (host.format == WeightFormat::Fp8 && !backend.reads_fp8_weights()) host = fp8_as_int8(host);
      *std::get<Linear*>(e.slot) = upload(host);
      if (requantized_here) requantized.push_back(m.module);
      done += slice_bytes[i];
      if (progress) progress(done, total);
      continue;
    }
    const StoredTensor* t = stored[i];
    const std::vector<int64_t> shape = local_shape(e);
    void* data = const_cast<void*>(t->data);
    DType dtype = *t->dtype;
    const bool one_row_range = e.slice.col_count < 0 && e.slice.rows.size() <= 1;
    if (quantize && e.is_matrix() && !keeps_16_bit(e.name)) {
      if (dtype != DType::BF16 && dtype != DType::F16 && dtype != DType::F32)
        fail("{}: tensor {} is {}; --quantization {} quantizes 16- or 32-bit matrices", *t->file, e.name,
             t->dtype_name, weight_format_name(options.quantize));
      std::vector<char> gathered;
      const char* rows = static_cast<const char*>(t->data);
      if (!one_row_range) rows = (gathered = gather_slice(e, t->data, dtype)).data();
      else rows += first_row_offset(e, *t);
      HostLinear host = make_host_linear(stored_format(options.quantize, backend), shape[0], shape[1], e.name);
      quantize_rows(rows, dtype, 0, shape[0], host);
      *std::get<Linear*>(e.slot) = upload(host);
      done += slice_bytes[i];
      if (progress) progress(done, total);
      continue;
    }
    if (options.matrix_dtype == DType::F16 && dtype == DType::BF16 && shape.size() >= 2) {
      std::vector<char> host = e.slice.whole() ? std::vector<char>(static_cast<const char*>(t->data),
                                                                   static_cast<const char*>(t->data) + t->bytes)
                                               : gather_slice(e, t->data, dtype);
      host = convert_bf16_matrix(host, e.name, dtype);
      data = buffers->allocate(host.size());
      backend.upload(data, host.data(), host.size());
      copied = true;
    } else if (in_place && one_row_range) {
      data = static_cast<char*>(data) + first_row_offset(e, *t);
      touch_pages(data, slice_bytes[i]);  // read now, not during the first request
    } else if (e.slice.whole()) {
      data = buffers->allocate(t->bytes);
      backend.upload(data, t->data, t->bytes);
      copied = true;
    } else {
      std::vector<char> host = gather_slice(e, t->data, dtype);
      DCU_CHECK(host.size() == slice_bytes[i]);
      data = buffers->allocate(host.size());
      backend.upload(data, host.data(), host.size());
      copied = true;
    }
    e.place(view_of(data, dtype, shape));
    done += slice_bytes[i];
    if (progress) progress(done, total);
  }
  if (config.tie_word_embeddings && !quantize) w.lm_head = w.embed_tokens;
  squeeze_conv_weights(w);

  size_t mtp = 0, visual = 0;
  for (const auto& name : ckpt.names()) {
    if (name.rfind("mtp.", 0) == 0) ++mtp;
    else if (name.rfind("model.visual.", 0) == 0 || name.rfind("visual.", 0) == 0) ++visual;
  }
  if (shard.rank == 0) {
    if (mtp && !options.mtp)
      log::info("{} multi-token-prediction tensors (mtp.*) recognised; used with --speculative-config", mtp);
    if (visual) log::info("{} vision tensors (model.visual.*) recognised; not used yet", visual);
    if (!requantized.empty())
      log::info("{} act-order module(s) whose input features the ranks split are requantized to int8 in groups "
                "of {} (docs/QUANTIZATION.md, \"Act-order\"): {}",
                requantized.size(), kQuantGroup, fmt::join(requantized, ", "));
  }

  if (!in_place) w.storage = buffers;
  else if (!copied) w.storage = std::make_shared<MappedStorage>(std::move(ckpt));
  else w.storage = std::make_shared<MixedStorage>(std::make_shared<MappedStorage>(std::move(ckpt)), buffers);
  return w;
}

bool has_act_order(const ModelWeights& w) {
  auto reordered = [](const Linear& m) { return !m.k_order.empty(); };
  if (reordered(w.lm_head)) return true;
  for (const LayerWeights& L : w.layers)
    for (const Linear* m : {&L.mlp.gate_proj, &L.mlp.up_proj, &L.mlp.down_proj, &L.attn.q_proj, &L.attn.k_proj,
                            &L.attn.v_proj, &L.attn.o_proj, &L.gdn.in_proj_qkv, &L.gdn.in_proj_z, &L.gdn.in_proj_a,
                            &L.gdn.in_proj_b, &L.gdn.out_proj})
      if (reordered(*m)) return true;
  return false;
}

ModelWeights random_weights(const ModelConfig& config, Backend& backend, DType dtype, uint64_t seed) {
  return random_weights(config, backend, dtype, seed, shard_plan(config, 0, 1));
}

ModelWeights random_weights(const ModelConfig& config, Backend& backend, DType dtype, uint64_t seed,
                            const ShardPlan& shard, const LoadProgress& progress, WeightFormat quantize, bool mtp) {
  ModelWeights w;
  const bool quantizing = quantize != WeightFormat::Dense;
  std::vector<Expected> expected = expected_tensors(config, w, shard, quantizing, mtp);
  // Small parameter vectors stay f32 as in the real checkpoints; matrices take `dtype`.
  auto dtype_of = [dtype](const Expected& e) { return e.shape.size() == 1 ? DType::F32 : dtype; };
  size_t total = 0, done = 0;
  for (const Expected& e : expected) total += numel_of(local_shape(e)) * dtype_size(dtype_of(e));
  auto buffers = std::make_shared<BufferStorage>(backend);
  std::vector<uint16_t> half;
  std::vector<float> full;
  for (size_t i = 0; i < expected.size(); ++i) {
    const Expected& e = expected[i];
    const std::vector<int64_t> shape = local_shape(e);
    const size_t numel = numel_of(shape);
    // Each local element takes the value of its element in the whole tensor.
    int64_t full_cols = 1;
    for (size_t k = 1; k < e.shape.size(); ++k) full_cols *= e.shape[k];
    const int64_t local_cols = numel / size_t(std::max<int64_t>(shape[0], 1));
    const int64_t col_begin = e.slice.col_count < 0 ? 0 : e.slice.col_begin;
    const std::vector<int64_t> rows = e.slice.whole() ? std::vector<int64_t>{} : global_rows(e);
    auto global_index = [&](size_t k) -> uint64_t {
      if (rows.empty()) return k;
      const int64_t r = int64_t(k) / local_cols, c = int64_t(k) % local_cols;
      return uint64_t(rows[size_t(r)] * full_cols + col_begin + c);
    };
    const DType t = dtype_of(e);
    const bool plain_norm = e.name.find("linear_attn.norm") != std::string::npos;
    const bool a_log = e.name.find("A_log") != std::string::npos;
    // The values' stream is the tensor's (a tied lm_head's quantized copy draws the embedding's).
    size_t first = 0;
    while (expected[first].name != e.name) ++first;
    const uint64_t stream = seed * 0x9E3779B97F4A7C15ull + first;
    constexpr size_t kChunk = 1 << 22;
    if (quantizing && e.is_matrix() && !keeps_16_bit(e.name)) {  // whole rows at a time
      HostLinear host = make_host_linear(stored_format(quantize, backend), shape[0], shape[1], e.name);
      const int64_t chunk_rows = std::max<int64_t>(1, int64_t(kChunk) / local_cols);
      for (int64_t row0 = 0; row0 < shape[0]; row0 += chunk_rows) {
        const int64_t count = std::min(chunk_rows, shape[0] - row0);
        const size_t begin = size_t(row0 * local_cols), n = size_t(count * local_cols);
        full.resize(n);
#pragma omp parallel for schedule(static)
        for (size_t k = 0; k < n; ++k) full[k] = random_value(stream, global_index(begin + k), plain_norm, a_log);
        quantize_rows(full.data(), DType::F32, row0, count, host);
        done += n * dtype_size(t);
        if (progress) progress(done, total);
      }
      *std::get<Linear*>(e.slot) = upload_linear(host, backend, [&](size_t bytes) { return buffers->allocate(bytes); });
      continue;
    }
    void* data = buffers->allocate(numel * dtype_size(t));
    for (size_t begin = 0; begin < numel; begin += kChunk) {
      const size_t n = std::min(kChunk, numel - begin);
      char* dst = static_cast<char*>(data) + begin * dtype_size(t);
      if (t == DType::F32) {
        full.resize(n);
#pragma omp parallel for schedule(static)
        for (size_t k = 0; k < n; ++k) full[k] = random_value(stream, global_index(begin + k), plain_norm, a_log);
        backend.upload(dst, full.data(), n * 4);
      } else {
        half.resize(n);
#pragma omp parallel for schedule(static)
        for (size_t k = 0; k < n; ++k) {
          float v = random_value(stream, global_index(begin + k), plain_norm, a_log);
          half[k] = t == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
        }
        backend.upload(dst, half.data(), n * 2);
      }
      done += n * dtype_size(t);
      if (progress) progress(done, total);
    }
    e.place(view_of(data, t, shape));
  }
  if (config.tie_word_embeddings && !quantizing) w.lm_head = w.embed_tokens;
  squeeze_conv_weights(w);
  w.storage = buffers;
  return w;
}

}  // namespace dcu
