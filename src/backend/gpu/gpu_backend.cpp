// The Backend implementation for CUDA and HIP GPUs: memory on one device, one stream, graphs, the scratch
// buffers, and the op table forwarding to kernel_ops.h (shape checks and launches, mirroring the CPU
// reference).

#include "backend/gpu/gpu_backend.h"

#include <algorithm>
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
    gpu::matmul_group(launch(), scratch_, ordered_inputs_, x, ws, ys);
  }
  void gate_up_swiglu(const Tensor& x, const Linear& gate_w, const Linear& up_w, Tensor gate, Tensor up,
                      Tensor out) override {
    if (!gate_w.k_order.empty() || !up_w.k_order.empty())  // two column orders: two matmuls, then swiglu
      return Backend::gate_up_swiglu(x, gate_w, up_w, gate, up, out);
    gpu::gate_up_swiglu(launch(), scratch_, x, gate_w, up_w, gate, up, out);
  }
  bool reads_fp8_weights() const override { return kind() == DeviceKind::Cuda; }
  bool fuses_norms(int64_t T) const override { return gpu::gemv_takes_all(gemv_max_tokens_, T); }
  void norm_matmul_group(const Tensor& x, const Tensor& norm_w, float eps, std::span<const Linear> ws,
                         std::span<const Tensor> ys) override {
    gpu::norm_matmul_group(launch(), x, norm_w, eps, ws, ys);
  }
  void norm_gate_up_swiglu(const Tensor& x, const Tensor& norm_w, float eps, const Linear& gate_w, const Linear& up_w,
                           Tensor out) override {
    gpu::norm_gate_up_swiglu(launch(), x, norm_w, eps, gate_w, up_w, out);
  }
  void matmul_accumulate(const Tensor& x, const Linear& w, Tensor y) override {
    gpu::matmul_accumulate(launch(), x, w, y);
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
