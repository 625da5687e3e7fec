#include "engine/model_instance.h"

namespace dcu {

Tensor ModelInstance::step(std::span<const SequenceStep> steps) {
  if (ranks.size() == 1) return ranks[0].runner->step(steps);
  Tensor logits;
  threads->run(
      [&](int rank) {
        const Tensor out = ranks[size_t(rank)].runner->step(steps);
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
