// Library discovery and the known-bad library order: the loader helpers on real libraries of this
// machine, the library lines on scripted facts, and the rocm_smi order on fake DTK trees in a
// temporary folder.

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/shared_library.h"
#include "doctor/library_checks.h"

namespace dcu::doctor {
namespace {

namespace fs = std::filesystem;

TEST(SharedLibrary, OpensByNameAndSaysWhereFrom) {
  const SharedLibrary m = open_shared_library("libm.so.6");
  ASSERT_NE(m.handle, nullptr) << m.error;
  EXPECT_TRUE(fs::exists(m.path)) << m.path;
  EXPECT_NE(find_loaded(loaded_shared_objects(), "libm"), "");
  EXPECT_EQ(find_loaded({"/a/libcudart.so.13", "/b/libcublas.so.13"}, "libcublas"), "/b/libcublas.so.13");
  EXPECT_EQ(find_loaded({"/a/libcublasLt.so.13"}, "libcublas"), "");  // another library with a longer name
}

TEST(SharedLibrary, AMissingNameFallsBackToTheBuildsPath) {
  const SharedLibrary missing = open_shared_library("libdcuserve-no-such-library.so.1");
  EXPECT_EQ(missing.handle, nullptr);
  EXPECT_NE(missing.error.find("cannot open shared object file"), std::string::npos) << missing.error;
  const std::string libm = open_shared_library("libm.so.6").path;
  const SharedLibrary fallback = open_shared_library("libdcuserve-no-such-library.so.1", libm);
  ASSERT_NE(fallback.handle, nullptr) << fallback.error;
  EXPECT_EQ(fallback.path, libm);
  const SharedLibrary both = open_shared_library("libdcuserve-no-such-library.so.1", "/nonexistent/libx.so");
  EXPECT_NE(both.error.find("/nonexistent/libx.so"), std::string::npos) << both.error;
}

TEST(SharedLibrary, VersionFromTheFileName) {
  EXPECT_EQ(version_from_file_name("/usr/local/cuda/lib64/libcudart.so.13.0.96"), "13.0.96");
  EXPECT_EQ(version_from_file_name("/opt/dtk/lib/librccl.so.1"), "1");
  EXPECT_EQ(version_from_file_name("/usr/lib/libfoo.so"), "");
  // A symlink names the version in its target.
  const fs::path dir = fs::temp_directory_path() / "dcuserve_version_test";
  fs::create_directories(dir);
  std::ofstream(dir / "libnccl.so.2.28.3") << "";
  fs::remove(dir / "libnccl.so.2");
  fs::create_symlink("libnccl.so.2.28.3", dir / "libnccl.so.2");
  EXPECT_EQ(version_from_file_name((dir / "libnccl.so.2").string()), "2.28.3");
  fs::remove_all(dir);
}

TEST(SharedLibrary, AdviceNamesTheFix) {
  EXPECT_NE(
      library_load_advice("librccl", "librccl.so.1: undefined symbol: rsmi_init").find("/opt/dtk/.hyhal/rocm_smi/lib"),
      std::string::npos);
  EXPECT_NE(library_load_advice("libnccl", "libnccl.so.2: cannot open shared object file: No such file or directory")
                .find("libnccl2"),
            std::string::npos);
  EXPECT_NE(library_load_advice("librccl", "librccl.so.1: cannot open shared object file").find("/opt/dtk/env.sh"),
            std::string::npos);
  EXPECT_NE(library_load_advice("libcublas", "libcublas.so.13: undefined symbol: cublasLtFoo").find("LD_LIBRARY_PATH"),
            std::string::npos);
  EXPECT_NE(
      library_load_advice("libnccl", "/tmp/x/libnccl.so.2 has no ncclGetVersion: it is older than this build expects")
          .find("too old or another library of that name"),
      std::string::npos);
}

TEST(Libraries, EachBuildListsWhatItLoads) {
  BuildFacts cpu;
  EXPECT_TRUE(libraries_of(cpu).empty());
  BuildFacts cuda{{DeviceKind::Cuda, {"80"}, true}, true, {}};
  EXPECT_EQ(libraries_of(cuda), (std::vector<std::string>{"libcudart", "libcublas", "libnccl"}));
  BuildFacts debian_hip{{DeviceKind::Hip, {"gfx906"}, false}, false, {}};
  EXPECT_EQ(libraries_of(debian_hip), (std::vector<std::string>{"libamdhip64"}));
  BuildFacts dtk{{DeviceKind::Hip, {"gfx906"}, true}, true, {}};
  EXPECT_EQ(libraries_of(dtk), (std::vector<std::string>{"libamdhip64", "librocblas", "librccl", "librocm_smi64"}));
}

TEST(Libraries, LoadedLibraryPassesWithPathAndVersion) {
  const Check c = check_library("libnccl", {"/usr/lib/libnccl.so.2", "2.28.3", ""});
  EXPECT_EQ(c.status, Status::Pass);
  EXPECT_EQ(c.name, "library libnccl");
  EXPECT_EQ(c.detail, "/usr/lib/libnccl.so.2, version 2.28.3");
}

TEST(Libraries, ALoadFailureFailsWithTheLoadersMessageAndTheFix) {
  const Check c = check_library("librccl", {"", "", "librccl.so.1: undefined symbol: rsmi_init"});
  EXPECT_EQ(c.status, Status::Fail);
  EXPECT_NE(c.detail.find("undefined symbol: rsmi_init"), std::string::npos);
  EXPECT_NE(c.fix.find("LD_LIBRARY_PATH"), std::string::npos);
}

TEST(Libraries, CudaDriverOlderThanTheRuntimeFails) {
  LibraryFacts f{"/usr/local/cuda/lib64/libcudart.so.13", "13.0", "", 13000, 12040};
  const Check old = check_library("libcudart", f);
  EXPECT_EQ(old.status, Status::Fail);
  EXPECT_NE(old.detail.find("supports CUDA 12.4 but this runtime is CUDA 13.0"), std::string::npos) << old.detail;
  f.driver_version = 0;
  EXPECT_EQ(check_library("libcudart", f).status, Status::Warn);  // no driver at all
  f.driver_version = 13010;
  EXPECT_EQ(check_library("libcudart", f).status, Status::Pass);
}

// A fake machine under a temporary root: folders that hold a librocm_smi64, or not.
class RocmSmiOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("dcuserve_rocm_smi_" + std::to_string(::getpid()));
    hyhal = make_lib("opt/dtk/.hyhal/rocm_smi/lib");
    dtk_lib = make_lib("opt/dtk/lib");
    fs::create_directories(root / "empty");
    empty = (root / "empty").string();
  }
  void TearDown() override { fs::remove_all(root); }
  std::string make_lib(const std::string& dir) {
    fs::create_directories(root / dir);
    std::ofstream(root / dir / "librocm_smi64.so.2") << "";
    return (root / dir).string();
  }
  Check order(const std::string& ld_library_path, const LibraryFacts& rccl, std::vector<std::string> hyhal_dirs = {}) {
    return check_rocm_smi_order(ld_library_path, list_directory, rccl, hyhal_dirs);
  }
  fs::path root;
  std::string hyhal, dtk_lib, empty;
  const LibraryFacts rccl_ok{"/opt/dtk/lib/librccl.so.1", "1", ""};
  const LibraryFacts rccl_broken{"", "", "librccl.so.1: undefined symbol: rsmi_init"};
};

TEST_F(RocmSmiOrder, AnotherRocmSmiFirstFailsAndTheFixPutsHyhalFirst) {
  const Check c = order(empty + ":" + dtk_lib + ":" + hyhal, rccl_broken);
  EXPECT_EQ(c.status, Status::Fail);
  EXPECT_NE(c.detail.find(dtk_lib), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("rsmi_init"), std::string::npos) << c.detail;
  EXPECT_EQ(c.fix, "export LD_LIBRARY_PATH=" + hyhal + ":" + empty + ":" + dtk_lib);
}

TEST_F(RocmSmiOrder, TheSameOrderOnlyWarnsWhenRcclLoadedAnyway) {
  const Check c = order(dtk_lib + ":" + hyhal, rccl_ok);
  EXPECT_EQ(c.status, Status::Warn);
  EXPECT_EQ(c.fix, "export LD_LIBRARY_PATH=" + hyhal + ":" + dtk_lib);
}

TEST_F(RocmSmiOrder, HyhalFirstPasses) {
  EXPECT_EQ(order(hyhal + ":" + dtk_lib, rccl_ok).status, Status::Pass);
  EXPECT_EQ(order(empty + "::" + hyhal + ":" + dtk_lib, rccl_ok).status, Status::Pass);  // empty entries skipped
}

TEST_F(RocmSmiOrder, HyhalOffThePathIsFoundInItsUsualFolder) {
  // LD_LIBRARY_PATH has only the DTK's other copy; the hyhal one sits in its usual folder.
  const Check c = order(dtk_lib, rccl_broken, {hyhal});
  EXPECT_EQ(c.status, Status::Fail);
  EXPECT_EQ(c.fix, "export LD_LIBRARY_PATH=" + hyhal + ":" + dtk_lib);
  // Nothing on the path: RCCL's own RUNPATH decides; only its rsmi failure makes it a failure.
  EXPECT_EQ(order(empty, rccl_broken, {hyhal}).status, Status::Fail);
  EXPECT_EQ(order(empty, rccl_ok, {hyhal}).status, Status::Pass);
  EXPECT_EQ(order("", {"", "", "librccl.so.1: cannot open shared object file"}, {hyhal}).status, Status::Pass);
}

TEST_F(RocmSmiOrder, WithoutHyhalTheQuestionDoesNotArise) {
  // A ROCm machine: one librocm_smi64, no hyhal anywhere.
  const Check c = order(dtk_lib, rccl_ok, {(root / "opt/hyhal/lib").string()});
  EXPECT_EQ(c.status, Status::Pass);
  EXPECT_NE(c.detail.find("not a DTK image"), std::string::npos);
}

}  // namespace
}  // namespace dcu::doctor
