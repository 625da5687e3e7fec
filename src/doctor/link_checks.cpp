#include "doctor/link_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dcu::doctor {
namespace {

struct Nominal {
  const char* name_part;  // matched against the device name (first match wins: specific ones first)
  double bytes_per_s;
};
constexpr Nominal kNominal[] = {
    {"H200", 4.8e12},  {"H100 PCIe", 2.0e12},        {"H100 NVL", 3.9e12},         {"H100", 3.35e12},
    {"H800", 3.35e12}, {"A100-PCIE-40GB", 1.555e12}, {"A100-SXM4-40GB", 1.555e12}, {"A100", 2.0e12},
    {"A800", 2.0e12},
};

std::string sized(size_t bytes) {
  return bytes >= (1u << 20) ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} KiB", bytes >> 10);
}

std::string microseconds(double s) { return fmt::format("{:.1f} us", s * 1e6); }

}  // namespace

std::optional<double> nominal_bandwidth(const std::string& name, const std::string& arch) {
  for (const Nominal& n : kNominal)
    if (name.find(n.name_part) != std::string::npos) return n.bytes_per_s;
  if (arch == "gfx906") return 1.0e12;  // HBM2 of the Z100 / Z100L, MI50, MI60
  return std::nullopt;
}

Check check_copy_bandwidth(int index, const std::string& name, const std::string& arch, double measured) {
  const std::string check = fmt::format("gpu {} bandwidth", index);
  const std::optional<double> nominal = nominal_bandwidth(name, arch);
  nlohmann::json data = {{"copy_bytes_per_s", measured}};
  if (!nominal)
    return pass(
        check, fmt::format("device-to-device copy {:.2f} TB/s (no nominal figure known for {})", measured / 1e12, name),
        data);
  data["nominal_bytes_per_s"] = *nominal;
  const double share = measured / *nominal;
  const std::string detail = fmt::format("device-to-device copy {:.2f} TB/s, {:.0f}% of the {:.2f} TB/s nominal",
                                         measured / 1e12, share * 100, *nominal / 1e12);
  if (share < kLowBandwidthShare)
    return warn(check, detail,
                "another process may be using the card, or it runs at reduced clocks: check nvidia-smi / hy-smi "
                "(clocks, power, other processes) and run the doctor again",
                data);
  return pass(check, detail, data);
}

Check check_link(const std::vector<int>& devices, const std::optional<GpuPeerLink>& peer, const AllReduceMeasurement& m,
                 bool nccl_build) {
  const std::string name = (devices.size() == 2 ? "link " : "all-reduce ") + fmt::format("{}", fmt::join(devices, "-"));
  const int n = int(devices.size());
  nlohmann::json data = {{"devices", devices}, {"communicator", m.communicator}};
  std::vector<std::string> parts;
  if (peer) {
    parts.push_back(fmt::format("peer access {}{}", peer->peer_access ? "yes" : "no",
                                peer->link.empty() ? "" : " (" + peer->link + ")"));
    data["peer_access"] = peer->peer_access, data["link"] = peer->link;
  }
  std::vector<std::string> sizes;
  for (const AllReduceTiming& t : m.timings) {
    // NCCL's "bus bandwidth": what each link carries, 2 (n - 1) / n of the buffer for a ring.
    const double bus = double(t.bytes) / t.seconds * 2.0 * (n - 1) / n;
    sizes.push_back(fmt::format("{} in {} ({:.1f} GB/s)", sized(t.bytes), microseconds(t.seconds), bus / 1e9));
    data["all_reduce"].push_back({{"bytes", t.bytes}, {"seconds", t.seconds}, {"bus_bytes_per_s", bus}});
  }
  parts.push_back(fmt::format("all-reduce over {}: {}", m.communicator, fmt::join(sizes, ", ")));
  const std::string detail = fmt::format("{}", fmt::join(parts, "; "));
  if (!nccl_build)
    return warn(name, detail + "; this build has no NCCL/RCCL, so tensor-parallel collectives go through host memory",
                "build with NCCL (CUDA: NVIDIA's libnccl-dev) or RCCL (the DTK / ROCm tree) found by CMake", data);
  if (peer && !peer->peer_access)
    return warn(name, detail,
                "no peer access: NCCL/RCCL stage through host memory between these GPUs; check the PCIe topology "
                "(nvidia-smi topo -m / hy-smi --showtopo), ACS and IOMMU settings, and for containers --ipc=host",
                data);
  if (!m.timings.empty() && m.timings.front().seconds > kSlowAllReduceSeconds)
    return warn(name, detail,
                fmt::format("a decode step does two all-reduces per layer (128 on the 27B: {:.1f} ms per step at this "
                            "latency); check that the GPUs share a fast link (nvidia-smi topo -m / hy-smi --showtopo)",
                            128 * m.timings.front().seconds * 1e3),
                data);
  return pass(name, detail, data);
}

}  // namespace dcu::doctor
