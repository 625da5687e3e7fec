// The kernel self-test and the timings, run for real on the CPU backend: against itself everything
// passes; against a backend with one wrong or throwing op exactly that op fails; a backend that
// folds norms into matmuls gets those ops checked too. The timings over the CPU backend and the
// in-process communicator.

#include <algorithm>

#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "comm/in_process_communicator.h"
#include "doctor/measure.h"
#include "doctor/self_test.h"

namespace dcu::doctor {
namespace {

// The CPU backend with rms_norm off by 1% and paged attention missing its code object.
class BrokenBackend final : public CpuBackend {
 public:
  void rms_norm(const Tensor& x, const Tensor& w, float eps, bool unit_offset, Tensor out) override {
    CpuBackend::rms_norm(x, w, eps, unit_offset, out);
    for (int64_t i = 0; i < out.numel(); ++i) out.as<float>()[i] *= 1.01f;
  }
  void paged_attention(const Tensor&, const PagedKv&, const BatchLayout&, float, Tensor) override {
    fail("hipModuleLaunchKernel failed: invalid device function");
  }
};

// A device that folds norms into its decode matmuls, computed the reference's way (or wrongly).
class FoldingBackend final : public CpuBackend {
 public:
  explicit FoldingBackend(bool wrong) : wrong_(wrong) {}
  bool fuses_norms(int64_t T) const override { return T == 1; }
  void norm_matmul_group(const Tensor& x, const Tensor& norm_w, float eps, std::span<const Linear> ws,
                         std::span<const Tensor> ys) override {
    std::vector<float> normed(size_t(x.numel()));
    Tensor n(normed.data(), DType::F32, {x.rows(), x.cols()});
    rms_norm(x, norm_w, eps, !wrong_, n);  // wrong: the plain norm instead of (1 + w)
    matmul_group(n, ws, ys);
  }
  void norm_gate_up_swiglu(const Tensor& x, const Tensor& norm_w, float eps, const Linear& gate_w, const Linear& up_w,
                           Tensor out) override {
    std::vector<float> normed(size_t(x.numel())), up(size_t(out.numel()));
    Tensor n(normed.data(), DType::F32, {x.rows(), x.cols()}), u(up.data(), DType::F32, {out.rows(), out.cols()});
    rms_norm(x, norm_w, eps, true, n);
    gate_up_swiglu(n, gate_w, up_w, out, u, out);
  }
  void matmul_accumulate(const Tensor& x, const Linear& w, Tensor y) override {
    std::vector<float> product(size_t(y.numel()));
    Tensor p(product.data(), DType::F32, {y.rows(), y.cols()});
    matmul(x, w, p);
    add(y, p);
  }

 private:
  bool wrong_;
};

std::vector<std::string> failed_names(const std::vector<OpResult>& results) {
  std::vector<std::string> out;
  for (const OpResult& r : results)
    if (!r.passed()) out.push_back(r.name);
  return out;
}

TEST(SelfTest, TheCpuAgainstItselfPassesEveryCase) {
  CpuBackend reference, device;
  const std::vector<OpResult> ops = compare_ops(reference, device);
  EXPECT_GE(ops.size(), 25u);
  EXPECT_TRUE(failed_names(ops).empty()) << failed_names(ops).front();
  for (const OpResult& r : ops) EXPECT_EQ(r.error, 0.0) << r.name;  // the same code: bit-identical
  const std::vector<OpResult> model = compare_model(reference, device, 1e-2);
  ASSERT_EQ(model.size(), 2u);  // bf16 and int4 weights
  for (const OpResult& r : model) EXPECT_TRUE(r.passed()) << r.name << " " << r.error << " " << r.failure;
}

TEST(SelfTest, AWrongOpAndAThrowingOpFailAndNothingElse) {
  CpuBackend reference;
  BrokenBackend device;
  const std::vector<OpResult> ops = compare_ops(reference, device);
  const std::vector<std::string> failed = failed_names(ops);
  EXPECT_EQ(failed, (std::vector<std::string>{"rms_norm, add_rms_norm", "paged_attention prefill F32 cache",
                                              "paged_attention decode F32 cache"}));
  const auto rms =
      std::find_if(ops.begin(), ops.end(), [](const OpResult& r) { return r.name == "rms_norm, add_rms_norm"; });
  EXPECT_GT(rms->error, 5e-3);  // 1% of values up to ~3
  const auto attention = std::find_if(ops.begin(), ops.end(), [](const OpResult& r) { return !r.failure.empty(); });
  EXPECT_NE(attention->failure.find("invalid device function"), std::string::npos);
  // The model runs both ops: both weight formats fail.
  for (const OpResult& r : compare_model(reference, device, 1e-2)) EXPECT_FALSE(r.passed()) << r.name;
}

TEST(SelfTest, FoldedNormsAreCheckedWhereTheDeviceFoldsThem) {
  CpuBackend reference;
  FoldingBackend right(false), wrong(true);
  const auto folded = [](const std::vector<OpResult>& ops) {
    return std::find_if(ops.begin(), ops.end(),
                        [](const OpResult& r) { return r.name == "norms folded into matmuls"; });
  };
  const std::vector<OpResult> good = compare_ops(reference, right), bad = compare_ops(reference, wrong);
  ASSERT_NE(folded(good), good.end());
  EXPECT_TRUE(folded(good)->passed()) << folded(good)->error;
  ASSERT_NE(folded(bad), bad.end());
  EXPECT_FALSE(folded(bad)->passed());
  CpuBackend plain;
  const std::vector<OpResult> none = compare_ops(reference, plain);
  EXPECT_EQ(folded(none), none.end());  // the CPU never folds them: nothing to check
}

TEST(SelfTest, CpuSmokePassesOnTheCpuAndCatchesAWrongOp) {
  CpuBackend cpu;
  const std::vector<OpResult> smoke = cpu_smoke(cpu);
  ASSERT_EQ(smoke.size(), 1u);
  EXPECT_TRUE(smoke[0].passed()) << smoke[0].error << " " << smoke[0].failure;
  // Stepwise and one-shot feeding run different kernels paths; a broken attention breaks the model.
  BrokenBackend broken;
  EXPECT_FALSE(cpu_smoke(broken)[0].passed());
}

TEST(Measure, CopyBandwidthOfTheCpu) {
  CpuBackend cpu;
  const double bytes_per_s = measure_copy_bandwidth(cpu, size_t(8) << 20);
  EXPECT_GT(bytes_per_s, 1e8);   // any machine copies more than 100 MB/s
  EXPECT_LT(bytes_per_s, 1e13);  // and less than 10 TB/s
}

TEST(Measure, AllReduceOverInProcessRanks) {
  CpuBackend a, b, c;
  const std::vector<Backend*> backends = {&a, &b, &c};
  const auto comms = make_in_process_communicators(backends);
  const std::vector<AllReduceTiming> t = measure_all_reduce(backends, comms, {4096, 65536}, 5);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].bytes, 4096u);
  EXPECT_EQ(t[1].bytes, 65536u);
  for (const AllReduceTiming& x : t) {
    EXPECT_GT(x.seconds, 0.0);
    EXPECT_LT(x.seconds, 1.0);
  }
}

// A rank whose collective fails aborts the group: the others are released and the error comes back.
class FailingCommunicator final : public Communicator {
 public:
  int rank() const override { return 1; }
  int size() const override { return 2; }
  std::string name() const override { return "failing"; }
  void all_reduce_sum(Tensor) override { fail("the link went down"); }
  void all_gather(const Tensor&, Tensor) override {}
  void abort() override {}
};

TEST(Measure, AFailingRankAbortsTheGroupAndTheErrorComesBack) {
  CpuBackend a, b;
  const std::vector<Backend*> backends = {&a, &b};
  auto pair = make_in_process_communicators(backends);
  std::vector<std::unique_ptr<Communicator>> comms;
  comms.push_back(std::move(pair[0]));
  comms.push_back(std::make_unique<FailingCommunicator>());
  EXPECT_THROW(
      {
        try {
          measure_all_reduce(backends, comms, {4096}, 3);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("link went down"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace dcu::doctor
