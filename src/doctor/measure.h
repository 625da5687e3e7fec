#pragma once
// The doctor's timings, over the Backend and Communicator interfaces (so that the CPU backend and the
// in-process communicator exercise them in CI): copy bandwidth and all-reduce latency.

#include <cstddef>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "comm/communicator.h"
#include "doctor/probes.h"

namespace dcu::doctor {

// Bytes read + written per second by backend-to-backend copies of `bytes`: the best of 5 timed runs
// of 4 back-to-back copies each (one copy of 256 MiB is ~0.1 ms on an H200, too short alone to time
// from the host). Throws dcu::Error when the two buffers cannot be allocated.
double measure_copy_bandwidth(Backend& backend, size_t bytes = size_t(256) << 20);

// Back-to-back all-reduces of each of `sizes`, every rank on its own thread (comms[i] on
// backends[i]): the best of 3 rounds of `iterations`, each round's time the slowest rank's. A failure
// on one rank aborts the group and is rethrown.
std::vector<AllReduceTiming> measure_all_reduce(const std::vector<Backend*>& backends,
                                                const std::vector<std::unique_ptr<Communicator>>& comms,
                                                const std::vector<size_t>& sizes, int iterations = 20);

}  // namespace dcu::doctor
