#include "engine/follower_node.h"

#include "comm/rendezvous.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/local_ranks.h"
#include "engine/step_channel.h"

namespace dcu {

void run_follower_node(const EngineOptions& o, const CommunicatorFactory& make_communicators) {
  ModelConfig config = model_config_for(o);
  check_group_options(o, config);
  if (o.node_rank == 0) fail("node 0 runs the engine, not the follower loop");
  const StepCapacity capacity = step_capacity(o);
  LocalRanks ranks(o, std::move(config), make_communicators);
  log::info("node {} of {}: follower of node 0 at {}:{}", o.node_rank, o.nnodes, o.master_addr, o.master_port);
  std::vector<NodeLink> links = connect_nodes({o.nnodes, o.node_rank, o.master_addr, o.master_port});
  ModelInstance model;
  try {
    offer_settings(links[0], ranks.settings(capacity));
    ranks.make_communicators(links);
    ranks.load_weights();
    model = ranks.finish(receive_cache_shape(links[0], ranks.cache_budget(capacity)), capacity);
  } catch (const Error& e) {
    links[0].send_failure(e.what());
    throw;
  }
  log::info("node {} of {}: ready; running node 0's steps", o.node_rank, o.nnodes);
  StepReceiver node0(std::move(links[0]), model.communicator_abort());  // destroyed before the ranks it aborts
  while (std::optional<ReceivedSteps> step = node0.next()) {
    try {
      model.step(step->steps());
    } catch (const Error& e) {
      node0.step_failed(e);
    }
  }
  log::info("node {} of {}: node 0 shut the group down", o.node_rank, o.nnodes);
}

}  // namespace dcu
