#pragma once
// Measured speeds: each GPU's copy bandwidth against its nominal memory bandwidth, and the links
// between GPUs (peer access, and the latency and bandwidth of all-reduces the size of decode steps').

#include <optional>
#include <string>
#include <vector>

#include "doctor/check.h"
#include "doctor/probes.h"

namespace dcu::doctor {

// The memory bandwidth a card is sold with, bytes/s, from its name ("NVIDIA H200") or architecture
// (gfx906: Z100, MI50, MI60); nullopt when unknown.
std::optional<double> nominal_bandwidth(const std::string& name, const std::string& arch);

// A device-to-device copy reaches well under nominal even when healthy (read + write share the bus);
// below this share of it, something else is using the card or it runs at reduced clocks.
constexpr double kLowBandwidthShare = 0.5;
// "gpu i bandwidth": `measured` (bytes read + written per second) against the nominal figure; a
// shortfall is a warning, never a failure (another process may be using the card).
Check check_copy_bandwidth(int index, const std::string& name, const std::string& arch, double measured);

// Above this per-all-reduce time at the smallest size, decode steps (two all-reduces per layer) are
// bound by the link.
constexpr double kSlowAllReduceSeconds = 100e-6;
// "link a-b" (two devices) or "all-reduce 0-1-2-3" (the whole group): peer access for a pair (null
// for a group), the all-reduce timings, and whether they went through NCCL/RCCL.
Check check_link(const std::vector<int>& devices, const std::optional<GpuPeerLink>& peer, const AllReduceMeasurement& m,
                 bool nccl_build);

}  // namespace dcu::doctor
