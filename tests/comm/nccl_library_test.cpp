// NCCL/RCCL is opened at run time (comm/nccl_library.h): a build that uses it names the file and the
// version it loaded, or why it could not, and then making a group fails with an error naming the
// library and the fix. (Run with LD_LIBRARY_PATH on a folder holding a fake libnccl.so.2 to take the
// second branch.) A build without NCCL/RCCL says so.

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "comm/nccl_communicator.h"
#include "core/error.h"

namespace dcu {
namespace {

std::string group_error(const NcclGroupOptions& o, const std::vector<Backend*>& backends) {
  try {
    make_nccl_communicators(o, backends);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NcclLibrary, NamesWhatItLoadedOrWhyNot) {
  const NcclLibraryInfo info = nccl_library_info();
  if (!nccl_compiled()) {
    EXPECT_TRUE(info.name.empty()) << info.name;
    EXPECT_NE(group_error({}, {}).find("this build has no NCCL/RCCL"), std::string::npos);
    return;
  }
  EXPECT_TRUE(info.name == "libnccl.so.2" || info.name == "librccl.so.1") << info.name;
  if (info.error.empty()) {
    EXPECT_NE(info.path.find(info.name.substr(0, info.name.find('.'))), std::string::npos) << info.path;
    EXPECT_FALSE(info.version.empty());
    return;
  }
  // Not loadable: the group is refused before any GPU is touched, naming the library and the loader's message.
  auto cpu = make_cpu_backend();
  NcclGroupOptions o;
  o.devices = {0};
  o.world_size = 1;
  const std::string e = group_error(o, {cpu.get()});
  EXPECT_NE(e.find("tensor parallelism on GPUs needs " + info.name), std::string::npos) << e;
  EXPECT_NE(e.find(info.error), std::string::npos) << e;
}

}  // namespace
}  // namespace dcu
