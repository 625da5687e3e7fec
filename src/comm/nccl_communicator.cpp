#include "comm/nccl_communicator.h"

#include <atomic>
#include <cstring>

#include "core/error.h"

#if defined(DCUSERVE_NCCL) && defined(DCUSERVE_HIP)
#include <hip/hip_runtime.h>
#include "comm/nccl_library.h"
#define gpuSetDevice hipSetDevice
#define gpuStream_t hipStream_t
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamDestroy hipStreamDestroy
#define gpuGetErrorString hipGetErrorString
#define gpuSuccess hipSuccess
#elif defined(DCUSERVE_NCCL)
#include <cuda_runtime.h>
#include "comm/nccl_library.h"
#define gpuSetDevice cudaSetDevice
#define gpuStream_t cudaStream_t
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamDestroy cudaStreamDestroy
#define gpuGetErrorString cudaGetErrorString
#define gpuSuccess cudaSuccess
#endif

namespace dcu {

#ifdef DCUSERVE_NCCL
namespace {

#define NCCL_OK(call)                                                                           \
  do {                                                                                          \
    ncclResult_t r_ = (call);                                                                   \
    if (r_ != ncclSuccess) ::dcu::fail("{} failed: {}", #call, nccl_api().GetErrorString(r_)); \
  } while (0)
#define GPU_OK(call)                                                                            \
  do {                                                                                          \
    auto r_ = (call);                                                                           \
    if (r_ != gpuSuccess) ::dcu::fail("{} failed: {}", #call, gpuGetErrorString(r_));          \
  } while (0)

// Collectives are enqueued on the backend's own stream when it exposes one (Backend::native_stream):
// they are then ordered after the ops that produced their input and before those that read their
// output, with no host wait. Fallback for a backend without a stream: the communicator's own stream,
// draining the backend's queue first and waiting for the result (two host round trips).
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size, int device, Backend& backend, bool one_process)
      : comm_(comm), rank_(rank), size_(size), device_(device), backend_(backend), one_process_(one_process) {
    GPU_OK(gpuSetDevice(device_));
    backend_stream_ = static_cast<gpuStream_t>(backend_.native_stream());
    if (!backend_stream_) GPU_OK(gpuStreamCreateWithFlags(&stream_, gpuStreamNonBlocking));
  }
  ~NcclCommunicator() override {
    // Graphs that recorded this communicator's collectives hold it: ncclCommDestroy would wait for
    // them forever, and only the backend destroys them.
    backend_.clear_graphs();
    (void)gpuSetDevice(device_);  // a destructor has no one to report to (HIP's errors are [[nodiscard]])
    if (!aborted_) nccl_api().CommDestroy(comm_);
    if (stream_) (void)gpuStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override {
#ifdef DCUSERVE_HIP
    return "rccl";
#else
    return "nccl";
#endif
  }

  void all_reduce_sum(Tensor x) override {
    DCU_CHECK(x.dtype == DType::F32);
    gpuStream_t s = begin();
    check_not_aborted();
    NCCL_OK(nccl_api().AllReduce(x.data, x.data, size_t(x.numel()), ncclFloat, ncclSum, comm_, s));
    end();
  }

  void all_gather(const Tensor& local, Tensor out) override {
    DCU_CHECK(local.dtype == DType::F32 && out.dtype == DType::F32);
    DCU_CHECK(out.numel() >= local.numel() * size_);
    gpuStream_t s = begin();
    check_not_aborted();
    NCCL_OK(nccl_api().AllGather(local.data, out.data, size_t(local.numel()), ncclFloat, comm_, s));
    end();
  }

  // Called from another thread (a failed rank's, or the watcher of a node link) while this rank may
  // wait for a collective, even inside a kernel launch that waits for the stalled GPU: ncclCommAbort
  // makes NCCL's kernels exit. It takes no lock for that reason: a collective enqueued at that very
  // moment races with it (as under PyTorch's NCCL watchdog); later ones see the flag and fail.
  void abort() override {
    if (!aborted_.exchange(true)) nccl_api().CommAbort(comm_);
  }
  // Only within one process: with the ranks of a multi-host group in two processes, node 0 recorded
  // graphs with collectives, then did not exit on SIGTERM (2 x H200, NCCL 2.28.3); its steps run op by op.
  bool records_in_graphs() const override { return backend_stream_ && one_process_; }

 private:
  void check_not_aborted() const {
    if (aborted_) fail("the tensor-parallel group was aborted: another rank failed");
  }
  // The stream a collective is enqueued on, after whatever the fallback path must wait for.
  gpuStream_t begin() {
    if (!backend_stream_) backend_.synchronize();
    GPU_OK(gpuSetDevice(device_));
    return backend_stream_ ? backend_stream_ : stream_;
  }
  void end() {
    if (!backend_stream_) GPU_OK(gpuStreamSynchronize(stream_));
  }

  ncclComm_t comm_;
  int rank_, size_, device_;
  Backend& backend_;
  gpuStream_t backend_stream_ = nullptr;  // the backend's, not owned
  gpuStream_t stream_ = nullptr;          // own, only when the backend has none
  bool one_process_;                      // every rank of the group is a thread of this process
  std::atomic<bool> aborted_ = false;
};

}  // namespace

bool nccl_compiled() { return true; }

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const NcclGroupOptions& o,
                                                                   const std::vector<Backend*>& backends) {
  DCU_CHECK(o.devices.size() == backends.size());
  ncclUniqueId id;
  if (o.first_rank == 0) NCCL_OK(nccl_api().GetUniqueId(&id));  // node 0 makes the id
  if (o.share_id) {
    std::vector<char> payload;
    if (o.first_rank == 0)
      payload.assign(reinterpret_cast<const char*>(&id), reinterpret_cast<const char*>(&id) + sizeof id);
    payload = o.share_id(payload);
    if (payload.size() != sizeof id) fail("node 0 sent {} bytes, not a {}-byte unique id", payload.size(), sizeof id);
    std::memcpy(&id, payload.data(), sizeof id);
  }

  // One thread initialises several ranks: the calls must be grouped or the first would wait for the rest.
  std::vector<ncclComm_t> comms(o.devices.size());
  NCCL_OK(nccl_api().GroupStart());
  for (size_t i = 0; i < o.devices.size(); ++i) {
    GPU_OK(gpuSetDevice(o.devices[i]));
    NCCL_OK(nccl_api().CommInitRank(&comms[i], o.world_size, id, o.first_rank + int(i)));
  }
  NCCL_OK(nccl_api().GroupEnd());
  std::vector<std::unique_ptr<Communicator>> out;
  for (size_t i = 0; i < o.devices.size(); ++i)
    out.push_back(std::make_unique<NcclCommunicator>(comms[i], o.first_rank + int(i), o.world_size, o.devices[i],
                                                     *backends[i], !o.share_id));
  return out;
}

#else

bool nccl_compiled() { return false; }

NcclLibraryInfo nccl_library_info() { return {}; }

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const NcclGroupOptions&,
                                                                   const std::vector<Backend*>&) {
  fail("this build has no NCCL/RCCL (configure with DCUSERVE_CUDA=ON or DCUSERVE_HIP=ON and NCCL/RCCL installed)");
}

#endif

}  // namespace dcu
