// The in-process communicator on CPU ranks: sums and gathers against a serial computation, identical
// results on every rank, many collectives back to back, and aborts that release waiting ranks.

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "comm/in_process_communicator.h"
#include "comm/rank_threads.h"
#include "core/error.h"

namespace dcu {
namespace {

struct Ranks {
  explicit Ranks(int n) : threads(n) {
    for (int r = 0; r < n; ++r) backends.push_back(make_cpu_backend());
    std::vector<Backend*> raw;
    for (auto& b : backends) raw.push_back(b.get());
    comms = make_in_process_communicators(raw);
  }
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<std::unique_ptr<Communicator>> comms;
  RankThreads threads;
};

float value(int rank, int step, size_t i) { return float((rank + 1) * 0.37 + step * 1.25 - double(i % 97) * 0.011); }

TEST(InProcessCommunicator, AllReduceSumsEveryRanksTensorIdenticallyOnAllRanks) {
  for (int n : {1, 2, 3, 4, 8}) {
    Ranks ranks(n);
    const size_t count = 1003;  // not a multiple of the rank count
    std::vector<std::vector<float>> data(static_cast<size_t>(n), std::vector<float>(count));
    for (int step = 0; step < 20; ++step) {
      ranks.threads.run([&](int r) {
        auto& d = data[size_t(r)];
        for (size_t i = 0; i < count; ++i) d[i] = value(r, step, i);
        EXPECT_EQ(ranks.comms[size_t(r)]->rank(), r);
        EXPECT_EQ(ranks.comms[size_t(r)]->size(), n);
        ranks.comms[size_t(r)]->all_reduce_sum(Tensor(d.data(), DType::F32, {int64_t(count)}));
      });
      for (size_t i = 0; i < count; ++i) {
        float expected = value(0, step, i);
        for (int r = 1; r < n; ++r) expected += value(r, step, i);
        ASSERT_EQ(data[0][i], expected) << "n " << n << " step " << step << " i " << i;
        for (int r = 1; r < n; ++r) ASSERT_EQ(data[size_t(r)][i], data[0][i]);
      }
    }
  }
}

TEST(InProcessCommunicator, AllGatherStacksRanksInOrder) {
  const int n = 4;
  Ranks ranks(n);
  const size_t count = 37;
  std::vector<std::vector<float>> out(static_cast<size_t>(n), std::vector<float>(count * n, -1.f));
  std::vector<std::vector<float>> local(static_cast<size_t>(n), std::vector<float>(count));
  ranks.threads.run([&](int r) {
    for (size_t i = 0; i < count; ++i) local[size_t(r)][i] = value(r, 0, i);
    ranks.comms[size_t(r)]->all_gather(Tensor(local[size_t(r)].data(), DType::F32, {int64_t(count)}),
                                       Tensor(out[size_t(r)].data(), DType::F32, {int64_t(count * n)}));
  });
  for (int dst = 0; dst < n; ++dst)
    for (int src = 0; src < n; ++src)
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[size_t(dst)][size_t(src) * count + i], value(src, 0, i));
}

TEST(InProcessCommunicator, AFailingRankReleasesTheOthersAndTheErrorIsItsOwn) {
  Ranks ranks(3);
  std::vector<float> d(8, 1.f);
  std::atomic<int> released{0};
  auto task = [&](int r) {
    if (r == 1) throw Error("rank 1 ran out of memory");
    try {
      std::vector<float> mine = d;
      ranks.comms[size_t(r)]->all_reduce_sum(Tensor(mine.data(), DType::F32, {8}));
    } catch (const Error&) {
      ++released;
      throw;
    }
  };
  auto abort_all = [&] {
    for (auto& c : ranks.comms) c->abort();
  };
  try {
    ranks.threads.run(task, abort_all);
    FAIL() << "run() returned normally";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rank 1 ran out of memory");
  }
  EXPECT_EQ(released.load(), 2);
}

TEST(RankThreads, RunsEveryRankOnItsOwnThreadEachTime) {
  RankThreads threads(4);
  std::vector<std::thread::id> ids(4);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread::id> now(4);
    threads.run([&](int r) { now[size_t(r)] = std::this_thread::get_id(); });
    for (int r = 0; r < 4; ++r) {
      EXPECT_NE(now[size_t(r)], std::this_thread::get_id());
      if (round > 0) {
        EXPECT_EQ(now[size_t(r)], ids[size_t(r)]);
      }
      for (int q = 0; q < r; ++q) EXPECT_NE(now[size_t(r)], now[size_t(q)]);
    }
    ids = now;
  }
}

}  // namespace
}  // namespace dcu
