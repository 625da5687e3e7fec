// Maps checkpoint tensor names to ModelWeights, checking every shape and dtype.

#include <atomic>
#include <cstring>
#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "model/safetensors.h"
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

// One expected tensor: where it goes and the shape it must have.
struct Expected {
  std::string name;  // without the "model.language_model." / "model." prefix for text weights
  Tensor* slot;
  std::vector<int64_t> shape;
};

std::vector<Expected> expected_tensors(const ModelConfig& c, ModelWeights& w) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  std::vector<Expected> e;
  e.push_back({"embed_tokens.weight", &w.embed_tokens, {V, H}});
  e.push_back({"norm.weight", &w.final_norm, {H}});
  if (!c.tie_word_embeddings) e.push_back({"lm_head.weight", &w.lm_head, {V, H}});
  w.layers.resize(size_t(c.num_layers));
  for (int i = 0; i < c.num_layers; ++i) {
    LayerWeights& L = w.layers[size_t(i)];
    L.type = c.layer_types[size_t(i)];
    const std::string p = "layers." + std::to_string(i) + ".";
    e.push_back({p + "input_layernorm.weight", &L.input_norm, {H}});
    e.push_back({p + "post_attention_layernorm.weight", &L.post_norm, {H}});
    e.push_back({p + "mlp.gate_proj.weight", &L.mlp.gate_proj, {I, H}});
    e.push_back({p + "mlp.up_proj.weight", &L.mlp.up_proj, {I, H}});
    e.push_back({p + "mlp.down_proj.weight", &L.mlp.down_proj, {H, I}});
    if (L.type == LayerType::FullAttention) {
      const int64_t nh = c.num_heads, nkv = c.num_kv_heads, d = c.head_dim;
      e.push_back({p + "self_attn.q_proj.weight", &L.attn.q_proj, {nh * d * 2, H}});
      e.push_back({p + "self_attn.k_proj.weight", &L.attn.k_proj, {nkv * d, H}});
      e.push_back({p + "self_attn.v_proj.weight", &L.attn.v_proj, {nkv * d, H}});
      e.push_back({p + "self_attn.o_proj.weight", &L.attn.o_proj, {H, nh * d}});
      e.push_back({p + "self_attn.q_norm.weight", &L.attn.q_norm, {d}});
      e.push_back({p + "self_attn.k_norm.weight", &L.attn.k_norm, {d}});
    } else {
      const int64_t C = c.linear_conv_dim(), Hv = c.linear_num_value_heads, dv = c.linear_value_head_dim;
      e.push_back({p + "linear_attn.in_proj_qkv.weight", &L.gdn.in_proj_qkv, {C, H}});
      e.push_back({p + "linear_attn.in_proj_z.weight", &L.gdn.in_proj_z, {Hv * dv, H}});
      e.push_back({p + "linear_attn.in_proj_a.weight", &L.gdn.in_proj_a, {Hv, H}});
      e.push_back({p + "linear_attn.in_proj_b.weight", &L.gdn.in_proj_b, {Hv, H}});
      e.push_back({p + "linear_attn.conv1d.weight", &L.gdn.conv1d, {C, 1, c.linear_conv_kernel}});
      e.push_back({p + "linear_attn.dt_bias", &L.gdn.dt_bias, {Hv}});
      e.push_back({p + "linear_attn.A_log", &L.gdn.A_log, {Hv}});
      e.push_back({p + "linear_attn.norm.weight", &L.gdn.norm, {dv}});
      e.push_back({p + "linear_attn.out_proj.weight", &L.gdn.out_proj, {H, Hv * dv}});
    }
  }
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

}  // namespace

ModelWeights load_weights(const std::string& model_dir, const ModelConfig& config, Backend& backend,
                          const LoadProgress& progress) {
  Checkpoint ckpt = Checkpoint::open(model_dir);
  ModelWeights w;
  std::vector<Expected> expected = expected_tensors(config, w);

  // Text weights are "model.language_model.*" (Qwen3_5ForConditionalGeneration) or "model.*"
  // (Qwen3_5ForCausalLM); lm_head is top level.
  std::string prefix;
  for (const char* candidate : {"model.language_model.", "model."})
    if (ckpt.find(std::string(candidate) + "embed_tokens.weight")) {
      prefix = candidate;
      break;
    }
  if (prefix.empty()) fail("{}: no embed_tokens.weight under model.language_model.* or model.*", model_dir);

  const bool in_place = backend.kind() == DeviceKind::Cpu;
  auto buffers = in_place ? nullptr : std::make_shared<BufferStorage>(backend);
  size_t total = 0, done = 0;
  std::vector<const StoredTensor*> stored;
  for (const auto& e : expected) {
    std::string full = e.name == "lm_head.weight" ? e.name : prefix + e.name;
    const StoredTensor* t = ckpt.find(full);
    if (!t) fail("{}: tensor {} is missing from the checkpoint", model_dir, full);
    if (t->shape != e.shape)
      fail("{}: tensor {} has shape {} but the config needs {}", *t->file, full, shape_text(t->shape),
           shape_text(e.shape));
    if (!t->dtype || *t->dtype == DType::I32)
      fail("{}: tensor {} has dtype {}; weights must be BF16, F16 or F32", *t->file, full, t->dtype_name);
    stored.push_back(t);
    total += t->bytes;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const StoredTensor* t = stored[i];
    void* data = const_cast<void*>(t->data);
    if (!in_place) {
      data = buffers->allocate(t->bytes);
      backend.upload(data, t->data, t->bytes);
    }
    *expected[i].slot = view_of(data, *t->dtype, t->shape);
    done += t->bytes;
    if (progress) progress(done, total);
  }
  if (config.tie_word_embeddings) w.lm_head = w.embed_tokens;
  squeeze_conv_weights(w);

  size_t mtp = 0, visual = 0;
  for (const auto& name : ckpt.names()) {
    if (name.rfind("mtp.", 0) == 0) ++mtp;
    else if (name.rfind("model.visual.", 0) == 0 || name.rfind("visual.", 0) == 0) ++visual;
  }
  if (mtp) log::info("{} multi-token-prediction tensors (mtp.*) recognised; not used yet", mtp);
  if (visual) log::info("{} vision tensors (model.visual.*) recognised; not used yet", visual);

  if (in_place) w.storage = std::make_shared<MappedStorage>(std::move(ckpt));
  else w.storage = buffers;
  return w;
}

ModelWeights random_weights(const ModelConfig& config, Backend& backend, DType dtype, uint64_t seed) {
  ModelWeights w;
  std::vector<Expected> expected = expected_tensors(config, w);
  auto buffers = std::make_shared<BufferStorage>(backend);
  std::vector<uint16_t> half;
  std::vector<float> full;
  for (size_t i = 0; i < expected.size(); ++i) {
    const Expected& e = expected[i];
    size_t numel = 1;
    for (int64_t d : e.shape) numel *= size_t(d);
    const bool is_vector = e.shape.size() == 1;
    // Small parameter vectors stay f32 as in the real checkpoints; matrices take `dtype`.
    const DType t = is_vector ? DType::F32 : dtype;
    const bool plain_norm = e.name.find("linear_attn.norm") != std::string::npos;
    const bool a_log = e.name.find("A_log") != std::string::npos;
    void* data = buffers->allocate(numel * dtype_size(t));
    constexpr size_t kChunk = 1 << 22;
    for (size_t begin = 0; begin < numel; begin += kChunk) {
      const size_t n = std::min(kChunk, numel - begin);
      char* dst = static_cast<char*>(data) + begin * dtype_size(t);
      const uint64_t stream = seed * 0x9E3779B97F4A7C15ull + i;
      if (t == DType::F32) {
        full.resize(n);
#pragma omp parallel for schedule(static)
        for (size_t k = 0; k < n; ++k) full[k] = random_value(stream, begin + k, plain_norm, a_log);
        backend.upload(dst, full.data(), n * 4);
      } else {
        half.resize(n);
#pragma omp parallel for schedule(static)
        for (size_t k = 0; k < n; ++k) {
          float v = random_value(stream, begin + k, plain_norm, a_log);
          half[k] = t == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
        }
        backend.upload(dst, half.data(), n * 2);
      }
    }
    *e.slot = view_of(data, t, e.shape);
  }
  if (config.tie_word_embeddings) w.lm_head = w.embed_tokens;
  squeeze_conv_weights(w);
  w.storage = buffers;
  return w;
}

}  // namespace dcu
