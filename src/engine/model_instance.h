#pragma once
// The model one node drives: its tensor-parallel ranks, stepped together. Node 0's engine and the
// follower nodes of a multi-host group (engine/follower_node.h) both step one of these.

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "cache/cache_storage.h"
#include "comm/communicator.h"
#include "comm/rank_threads.h"
#include "engine/step_channel.h"
#include "model/model_runner.h"

namespace dcu {

// One tensor-parallel rank (the whole model at size 1). Members are destroyed in reverse order:
// runner, communicator, caches, backend.
struct RankInstance {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<CacheStorage> cache;   // this rank's heads; the same blocks and slots on every rank
  std::unique_ptr<Communicator> comm;    // null at size 1
  std::unique_ptr<ModelRunner> runner;   // uses *backend, *cache and *comm
};

// Every rank steps the same scheduled work; sampling reads rank 0's logits.
struct ModelInstance {
  std::vector<RankInstance> ranks;
  std::unique_ptr<RankThreads> threads;  // one worker thread per rank when there are several
  // Node 0 of a multi-host group: the other nodes, sent every step first. Declared last, destroyed
  // first: it tells them to shut down while the ranks still exist.
  std::unique_ptr<StepBroadcaster> followers;

  // One model step on this node's ranks; local rank 0's logits (ModelRunner::step). When a rank fails,
  // the others are released from their collectives and its error is thrown.
  Tensor step(std::span<const SequenceStep> steps);
  // A draft step of the MTP block on every rank (ModelRunner::draft); local rank 0's logits.
  Tensor draft(std::span<const SequenceStep> steps, std::span<const int32_t> source_rows, DraftInput from);
  // A function that aborts every rank's communicator, so that their blocked and later collectives fail
  // (a rank on another node will not arrive). Valid while the ranks live, also after this instance moves.
  std::function<void()> communicator_abort() const;

 private:
  // run(rank's runner) on every rank at once; rank 0's result.
  Tensor on_every_rank(const std::function<Tensor(ModelRunner&)>& run);
};

}  // namespace dcu
