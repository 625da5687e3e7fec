// The Backend implementation for CUDA and HIP GPUs: memory on one device, one stream, and the op table
// forwarding to the kernel launchers (kernels.h). Shape checks mirror the CPU reference.

#include "backend/gpu/gpu_backend.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "backend/gpu/kernel_ops.h"
#include "backend/gpu/kernels.h"
#include "backend/gpu_backend_api.h"
#include "core/error.h"
#include "core/log.h"

#if defined(DCUSERVE_CUDA)
#include <cublas_v2.h>
#elif defined(DCUSERVE_ROCBLAS)
#include <rocblas/rocblas.h>
#endif

namespace dcu {

namespace gpu {
[[noreturn]] void fail_call(const char* expr, const char* file, int line, const char* what) {
  fail("GPU call failed at {}:{}: {}: {}", file, line, expr, what);
}
}  // namespace gpu

namespace {

using gpu::Launch;

class GpuBackend final : public Backend {
 public:
  GpuBackend(int device, const GpuBackendOptions& options) : device_(device) {
    int count = 0;
    if (gpuGetDeviceCount(&count) != gpuSuccess || device < 0 || device >= count)
      fail("GPU device {} is not available ({} device(s) found)", device, count);
    GPU_CHECK(gpuSetDevice(device_));
    GPU_CHECK(gpuStreamCreateWithFlags(&stream_, gpuStreamNonBlocking));
    lanes_ = options.logical_warp == 0 ? gpu::kNativeLanes : options.logical_warp;
    if (lanes_ != gpu::kNativeLanes && !(lanes_ == 64 && gpu::kNativeLanes == 32))
      fail("logical warp width {} is not supported on this build (native {})", lanes_, gpu::kNativeLanes);
    if (options.gemv_max_tokens < 1 || options.gemv_max_tokens > gpu::kGemvMaxTokens)
      fail("gemv_max_tokens {} is outside 1..{}", options.gemv_max_tokens, gpu::kGemvMaxTokens);
    gemv_max_tokens_ = options.gemv_max_tokens;
#if defined(DCUSERVE_HIP)
    // The 2-row limit of the bf16/f16 mode is where NVIDIA's tensor cores overtake the GEMV on an
    // H200; gfx906 has no matrix cores, so decode batches keep the GEMV up to its 16 rows.
    gemv_max_tokens_ = int(gpu::kGemvMaxTokens);
#endif
    split_activations_ = options.split_activations;
    int8_activations_ = options.int8_activations;
#if defined(DCUSERVE_CUDA)
    tensor_cores_ = options.vendor_blas && options.tensor_core_decode;
    if (options.vendor_blas) {
      cublasHandle_t handle = nullptr;
      if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) fail("cuBLAS could not be initialised on GPU {}", device_);
      cublasSetStream(handle, stream_);
      blas_ = handle;
    }
#elif defined(DCUSERVE_ROCBLAS)
    if (options.vendor_blas) {
      rocblas_handle handle = nullptr;
      if (rocblas_create_handle(&handle) != rocblas_status_success)
        fail("rocBLAS could not be initialised on GPU {}", device_);
      rocblas_set_stream(handle, stream_);
      blas_ = handle;
    }
#endif
    gpuDeviceProp_t p{};
    GPU_CHECK(gpuGetDeviceProperties(&p, device_));
    name_ = fmt::format("{}:{} ({})", kind() == DeviceKind::Cuda ? "cuda" : "hip", device_, p.name);
    overlap_ = kind() == DeviceKind::Cuda && p.major >= 9 && gpu::kernels_can_overlap();
    multiprocessors_ = std::max(1, p.multiProcessorCount);
  }

  // A destructor cannot throw, and a failing device at shutdown leaves nothing to recover: the results
  // of these calls are deliberately ignored.
  ~GpuBackend() override {
    (void)gpuSetDevice(device_);
    (void)gpuStreamSynchronize(stream_);
    for (auto& [_, exec] : graphs_) (void)gpuGraphExecDestroy(exec);
#if defined(DCUSERVE_CUDA)
    if (blas_) (void)cublasDestroy(static_cast<cublasHandle_t>(blas_));
#elif defined(DCUSERVE_ROCBLAS)
    if (blas_) (void)rocblas_destroy_handle(static_cast<rocblas_handle>(blas_));
#endif
    (void)gpuStreamDestroy(stream_);
  }

  DeviceKind kind() const override {
#if defined(DCUSERVE_HIP)
    return DeviceKind::Hip;
#else
    return DeviceKind::Cuda;
#endif
  }
  std::string name() const override { return name_; }

  // --- memory ---
  void* allocate(size_t bytes) override {
    GPU_CHECK(gpuSetDevice(device_));
    void* p = nullptr;
    if (gpuMalloc(&p, std::max<size_t>(bytes, 1)) != gpuSuccess) {
      (void)gpuGetLastError();
      fail("out of GPU memory allocating {} bytes on {}", bytes, name_);
    }
    return p;
  }
  void release(void* ptr) override {
    if (!ptr) return;
    GPU_CHECK(gpuSetDevice(device_));
    GPU_CHECK(gpuStreamSynchronize(stream_));  // no kernel in flight still reads it
    GPU_CHECK(gpuFree(ptr));
  }
  // Synchronous so the caller may free or reuse its host buffer right away. Any thread may call them.
  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    GPU_CHECK(gpuSetDevice(device_));
    GPU_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyHostToDevice, stream_));
    GPU_CHECK(gpuStreamSynchronize(stream_));
  }
  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    GPU_CHECK(gpuSetDevice(device_));
    GPU_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToHost, stream_));
    GPU_CHECK(gpuStreamSynchronize(stream_));
  }
  void fill_zero(void* dst, size_t bytes) override {
    if (bytes) GPU_CHECK(gpuMemsetAsync(dst, 0, bytes, stream_));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) GPU_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, stream_));
  }
  void synchronize() override { GPU_CHECK(gpuStreamSynchronize(stream_)); }
  void* native_stream() override { return stream_; }

  bool supports_graphs() const override { return true; }
  void capture_graph(uint64_t key, const std::function<void()>& record) override {
    GPU_CHECK(gpuSetDevice(device_));
    GPU_CHECK(gpuStreamBeginCapture(stream_, gpuStreamCaptureModeThreadLocal));
    try {
      record();
    } catch (...) {
      gpuGraph_t broken = nullptr;
      if (gpuStreamEndCapture(stream_, &broken) == gpuSuccess && broken) (void)gpuGraphDestroy(broken);
      (void)gpuGetLastError();
      throw;
    }
    gpuGraph_t graph = nullptr;
    GPU_CHECK(gpuStreamEndCapture(stream_, &graph));
    gpuGraphExec_t exec = nullptr;
    const gpuError_t made = gpuGraphInstantiateWithFlags(&exec, graph, 0);
    (void)gpuGraphDestroy(graph);
    GPU_CHECK(made);
    drop_graph(key);
    graphs_[key] = exec;
  }
  bool launch_graph(uint64_t key) override {
    auto it = graphs_.find(key);
    if (it == graphs_.end()) return false;
    GPU_CHECK(gpuSetDevice(device_));
    GPU_CHECK(gpuGraphLaunch(it->second, stream_));
    return true;
  }
  void clear_graphs() override {
    while (!graphs_.empty()) drop_graph(graphs_.begin()->first);
  }

  // --- ops ---
  void embed(const Tensor& table, const Tensor& ids, Tensor out) override { gpu::embed(launch(), table, ids, out); }
  void rms_norm(const Tensor& x, const Tensor& w, float eps, bool unit_offset, Tensor out) override {
    gpu::rms_norm(launch(), x, w, eps, unit_offset, out);
  }
  void add_rms_norm(Tensor x, const Tensor& y, const Tensor& w, float eps, bool unit_offset, Tensor out) override {
    gpu::add_rms_norm(launch(), x, y, w, eps, unit_offset, out);
  }
  void matmul(const Tensor& x, const Linear& w, Tensor y) override {
    const Linear ws[] = {w};
    const Tensor ys[] = {y};
    matmul_group(x, ws, ys);
  }
  void matmul_group(const Tensor& x, std::span<const Linear> ws, std::span<const Tensor> ys) override {
    if (!in_input_order(ws)) {
      // Act-order weights read the activations in their own column orders: one launch each.
      for (size_t i = 0; i < ws.size(); ++i) {
        const Linear one[] = {ws[i]};
        const Tensor y[] = {ys[i]};
        const auto args = matmul_args(ws[i].k_order.empty() ? x : in_column_order(x, ws[i].k_order), one, y);
        gpu::launch_matmul_group(launch(), args.data(), 1, scratch_);
      }
      return;
    }
    const auto args = matmul_args(x, ws, ys);
    for_each_kernel_group(args, int(ws.size()), [&](const gpu::MatmulArgs* group, int count) {
      gpu::launch_matmul_group(launch(), group, count, scratch_);
    });
  }
  void gate_up_swiglu(const Tensor& x, const Linear& gate_w, const Linear& up_w, Tensor gate, Tensor up,
                      Tensor out) override {
    DCU_CHECK(f32(out) && up_w.rows() == gate_w.rows() && out.numel() == gate.numel() && up.numel() == gate.numel());
    if (!gate_w.k_order.empty() || !up_w.k_order.empty())  // two column orders: two matmuls, then swiglu
      return Backend::gate_up_swiglu(x, gate_w, up_w, gate, up, out);
    const Linear ws[] = {gate_w, up_w};
    const Tensor ys[] = {gate, up};
    const auto args = matmul_args(x, ws, ys);
    DCU_CHECK(same_kernel(args[0], args[1]));
    gpu::launch_gate_up_swiglu(launch(), args[0], args[1], out.as<float>(), scratch_);
  }
  bool reads_fp8_weights() const override { return kind() == DeviceKind::Cuda; }
  bool fuses_norms(int64_t T) const override { return gpu::gemv_takes_all(gemv_max_tokens_, T); }
  void norm_matmul_group(const Tensor& x, const Tensor& norm_w, float eps, std::span<const Linear> ws,
                         std::span<const Tensor> ys) override {
    DCU_CHECK(norm_w.numel() == x.cols() && in_input_order(ws));
    const auto args = matmul_args(x, ws, ys);
    for_each_kernel_group(args, int(ws.size()), [&](const gpu::MatmulArgs* group, int count) {
      gpu::launch_norm_matmul_group(launch(), group, count, false, {norm_w.data, norm_w.dtype, eps, false});
    });
  }
  void norm_gate_up_swiglu(const Tensor& x, const Tensor& norm_w, float eps, const Linear& gate_w, const Linear& up_w,
                           Tensor out) override {
    DCU_CHECK(norm_w.numel() == x.cols() && up_w.rows() == gate_w.rows());
    const Linear ws[] = {gate_w, up_w};
    DCU_CHECK(in_input_order(ws));
    const Tensor ys[] = {out, out};  // the fused GEMV writes the first output only
    const auto args = matmul_args(x, ws, ys);
    DCU_CHECK(same_kernel(args[0], args[1]));
    gpu::launch_norm_matmul_group(launch(), args.data(), 2, true, {norm_w.data, norm_w.dtype, eps, false});
  }
  void matmul_accumulate(const Tensor& x, const Linear& w, Tensor y) override {
    const Linear ws[] = {w};
    DCU_CHECK(in_input_order(ws));
    const Tensor ys[] = {y};
    gpu::launch_matmul_accumulate(launch(), matmul_args(x, ws, ys)[0]);
  }
  void add(Tensor x, const Tensor& y) override { gpu::add(launch(), x, y); }
  void swiglu(const Tensor& gate, const Tensor& up, Tensor out) override { gpu::swiglu(launch(), gate, up, out); }
  void sigmoid_mul(Tensor x, const Tensor& gate) override { gpu::sigmoid_mul(launch(), x, gate); }
  void gather_rows(const Tensor& x, const Tensor& rows, Tensor out) override {
    gpu::gather_rows(launch(), x, rows, out);
  }

  void attention_prep(const Tensor& qg, Tensor k, const Tensor& q_norm, const Tensor& k_norm, float eps,
                      const RopeParams& rope, const BatchLayout& batch, Tensor q, Tensor gate) override {
    gpu::attention_prep(launch(), qg, k, q_norm, k_norm, eps, rope, batch, q, gate);
  }
  void kv_cache_write(const Tensor& k, const Tensor& v, const BatchLayout& batch, PagedKv& cache) override {
    gpu::kv_cache_write(launch(), k, v, batch, cache);
  }
  void paged_attention(const Tensor& q, const PagedKv& cache, const BatchLayout& batch, float scale,
                       Tensor out) override {
    gpu::paged_attention(launch(), scratch_, q, cache, batch, scale, out);
  }

  void gdn_conv(const Tensor& mixed, const Tensor& weight, GdnState& state, const BatchLayout& batch,
                Tensor out) override {
    gpu::gdn_conv(launch(), mixed, weight, state, batch, out);
  }
  void gdn_gates(const Tensor& a, const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor g,
                 Tensor beta) override {
    gpu::gdn_gates(launch(), a, b, A_log, dt_bias, g, beta);
  }
  void gdn_delta_rule(const Tensor& qkv, const Tensor& g, const Tensor& beta, const GdnDims& dims, GdnState& state,
                      const BatchLayout& batch, Tensor out) override {
    gpu::gdn_delta_rule(launch(), qkv, g, beta, dims, state, batch, out);
  }
  void gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, Tensor out) override {
    gpu::gated_rms_norm(launch(), x, z, w, eps, out);
  }

  void adjust_logits(Tensor logits, const Tensor& targets, const Tensor& factors) override {
    gpu::adjust_logits(launch(), logits, targets, factors);
  }
  void mask_logits(Tensor logits, const Tensor& rows, const Tensor& allowed) override {
    gpu::mask_logits(launch(), logits, rows, allowed);
  }
  void logit_summary(const Tensor& logits, const Tensor& rows, const Tensor& inv_temperature, Tensor top_values,
                     Tensor top_ids, Tensor stats) override {
    gpu::logit_summary(launch(), scratch_, logits, rows, inv_temperature, top_values, top_ids, stats);
  }
  void copy_columns(const Tensor& x, Tensor out, int64_t column) override {
    gpu::copy_columns(launch(), x, out, column);
  }

 private:
  static bool f32(const Tensor& t) { return t.dtype == DType::F32; }
  // No act-order weight among ws: the fused decode ops read x as it is (the model runner does not
  // fold norms for models with act-order weights).
  static bool in_input_order(std::span<const Linear> ws) {
    return std::none_of(ws.begin(), ws.end(), [](const Linear& w) { return !w.k_order.empty(); });
  }
  // x [T, K] gathered into `order` (an act-order weight's), in the backend's scratch for that.
  Tensor in_column_order(const Tensor& x, const Tensor& order) {
    DCU_CHECK(f32(x) && order.dtype == DType::I32 && order.numel() == x.cols());
    Tensor out(ordered_inputs_.get(x.bytes()), DType::F32, {x.rows(), x.cols()});
    gpu::launch_gather_columns(launch(), x.as<float>(), order.as<int32_t>(), out.as<float>(), x.rows(), x.cols());
    return out;
  }
  // ys[i] = x . ws[i]^T as the kernels' arguments, shapes checked.
  static std::array<gpu::MatmulArgs, kMaxMatmulGroup> matmul_args(const Tensor& x, std::span<const Linear> ws,
                                                                 std::span<const Tensor> ys) {
    DCU_CHECK(ws.size() == ys.size() && !ws.empty() && ws.size() <= kMaxMatmulGroup && f32(x));
    static_assert(gpu::kMaxMatmulGroup == int(kMaxMatmulGroup));
    const int64_t T = x.rows(), K = x.cols();
    std::array<gpu::MatmulArgs, kMaxMatmulGroup> group{};
    for (size_t i = 0; i < ws.size(); ++i) {
      const Linear& w = ws[i];
      const Tensor& y = ys[i];
      DCU_CHECK(f32(y) && w.cols() == K && y.rows() == T && y.cols() == w.rows());
      group[i] = {x.as<float>(), w.weight.data, w.weight.dtype, y.as<float>(), T, K, w.rows(), w.format,
                  w.scales.empty() ? nullptr : w.scales.as<float>(),
                  w.zeros.empty() ? nullptr : w.zeros.as<uint8_t>(), w.group};
    }
    return group;
  }
  // Whether two matmuls can share a launch: one kernel reads both weights.
  static bool same_kernel(const gpu::MatmulArgs& a, const gpu::MatmulArgs& b) {
    return a.format == b.format && a.group == b.group && (a.format != WeightFormat::Dense || a.w_type == b.w_type);
  }
  // Calls run(group, count) on each run of consecutive matmuls that share a kernel (a GDN layer's
  // quantized projections and its 16-bit in_proj_a/b are two launches).
  template <typename Run>
  static void for_each_kernel_group(const std::array<gpu::MatmulArgs, kMaxMatmulGroup>& args, int count, Run&& run) {
    for (int begin = 0; begin < count;) {
      int end = begin + 1;
      while (end < count && same_kernel(args[size_t(begin)], args[size_t(end)])) ++end;
      run(args.data() + begin, end - begin);
      begin = end;
    }
  }
  Launch launch() {
    GPU_CHECK(gpuSetDevice(device_));
    return Launch{stream_,   lanes_,     blas_,           gemv_max_tokens_,   tensor_cores_, split_activations_,
                  overlap_, &expanded_, multiprocessors_, int8_activations_, &activations_};
  }
  void drop_graph(uint64_t key) {
    auto it = graphs_.find(key);
    if (it == graphs_.end()) return;
    (void)gpuGraphExecDestroy(it->second);
    graphs_.erase(it);
  }
  // Device scratch that grows on demand; the old buffer is freed only after the stream has drained
  // (and graphs that point into it are dropped).
  class GrowingScratch final : public gpu::Scratch {
   public:
    explicit GrowingScratch(GpuBackend& owner) : owner_(owner) {}
    ~GrowingScratch() override {
      if (data_) (void)gpuFree(data_);
    }
    void* get(size_t bytes) override {
      if (bytes > bytes_) {
        owner_.clear_graphs();
        if (data_) {
          GPU_CHECK(gpuStreamSynchronize(owner_.stream_));
          GPU_CHECK(gpuFree(data_));
          data_ = nullptr;
        }
        bytes_ = std::max(bytes, bytes_ * 2);
        data_ = owner_.allocate(bytes_);
      }
      return data_;
    }

   private:
    GpuBackend& owner_;
    void* data_ = nullptr;
    size_t bytes_ = 0;
  };

  int device_ = 0;
  int lanes_ = gpu::kNativeLanes;
  int gemv_max_tokens_ = gpu::kGemvMaxTokens;
  bool tensor_cores_ = false;
  bool split_activations_ = true;
  bool int8_activations_ = false;
  bool overlap_ = false;
  int multiprocessors_ = 1;
  gpuStream_t stream_ = nullptr;
  void* blas_ = nullptr;
  GrowingScratch scratch_{*this};
  GrowingScratch expanded_{*this};  // quantized weights expanded for prompt-sized matmuls (Launch::expanded)
  GrowingScratch ordered_inputs_{*this};  // activations gathered for act-order weights
  GrowingScratch activations_{*this};  // int8 activations of quantized matmuls (Launch::activations)
  std::unordered_map<uint64_t, gpuGraphExec_t> graphs_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(int device_index, const GpuBackendOptions& options) {
  return std::make_unique<GpuBackend>(device_index, options);
}

}  // namespace dcu
