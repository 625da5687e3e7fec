#include "comm/nccl_library.h"

#include <dlfcn.h>

#include "core/error.h"
#include "core/shared_library.h"

namespace dcu {
namespace {

#if defined(DCUSERVE_HIP)
constexpr const char* kSoname = "librccl.so.1";
#else
constexpr const char* kSoname = "libnccl.so.2";
#endif

struct Loaded {
  NcclApi api{};
  NcclLibraryInfo info;
};

template <typename F>
bool resolve(void* handle, const char* symbol, F& out, NcclLibraryInfo& info) {
  out = reinterpret_cast<F>(dlsym(handle, symbol));
  if (!out) info.error = fmt::format("{} has no {}: it is older than this build expects", info.path, symbol);
  return out != nullptr;
}

Loaded load() {
  Loaded l;
  l.info.name = kSoname;
  // The soname first (LD_LIBRARY_PATH, then the system's folders), then the file CMake found.
  const SharedLibrary lib = open_shared_library(kSoname, DCUSERVE_NCCL_FALLBACK);
  if (!lib.handle) {
    l.info.error = lib.error;
    return l;
  }
  l.info.path = lib.path;
  NcclApi& a = l.api;
  void* h = lib.handle;
  NcclLibraryInfo& i = l.info;
  const bool ok =
      resolve(h, "ncclGetVersion", a.GetVersion, i) && resolve(h, "ncclGetErrorString", a.GetErrorString, i) &&
      resolve(h, "ncclGetUniqueId", a.GetUniqueId, i) && resolve(h, "ncclCommInitRank", a.CommInitRank, i) &&
      resolve(h, "ncclGroupStart", a.GroupStart, i) && resolve(h, "ncclGroupEnd", a.GroupEnd, i) &&
      resolve(h, "ncclAllReduce", a.AllReduce, i) && resolve(h, "ncclAllGather", a.AllGather, i) &&
      resolve(h, "ncclCommAbort", a.CommAbort, i) && resolve(h, "ncclCommDestroy", a.CommDestroy, i);
  if (!ok) return l;
  int code = 0;
  if (a.GetVersion(&code) == ncclSuccess)  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch
    l.info.version = fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

NcclLibraryInfo nccl_library_info() { return loaded().info; }

const NcclApi& nccl_api() {
  const Loaded& l = loaded();
  if (!l.info.error.empty())
    fail("tensor parallelism on GPUs needs {}, which could not be loaded: {}; {}", kSoname, l.info.error,
         library_load_advice(kSoname, l.info.error));
  return l.api;
}

}  // namespace dcu
