#include "engine/model_instance.h"

namespace dcu {

Tensor ModelInstance::step(std::span<const SequenceStep> steps) {
  return on_every_rank([&](ModelRunner& runner) { return runner.step(steps); });
}

Tensor ModelInstance::draft(std::span<const SequenceStep> steps, std::span<const int32_t> source_rows, DraftInput from) {
  return on_every_rank([&](ModelRunner& runner) { return runner.draft(steps, source_rows, from); });
}

Tensor ModelInstance::on_every_rank(const std::function<Tensor(ModelRunner&)>& run) {
  if (ranks.size() == 1) return run(*ranks[0].runner);
  Tensor logits;
  threads->run(
      [&](int rank) {
        const Tensor out = run(*ranks[size_t(rank)].runner);
        if (rank == 0) logits = out;
      },
      communicator_abort());  // a rank failed: the others must not wait for it in a collective
  return logits;
}

std::function<void()> ModelInstance::communicator_abort() const {
  std::vector<Communicator*> comms;
  for (const auto& r : ranks)
    if (r.comm) comms.push_back(r.comm.get());
  return [comms] {
    for (Communicator* c : comms) c->abort();
  };
}

}  // namespace dcu
