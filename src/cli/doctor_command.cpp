// dcuserve doctor: the first command to run on a new machine. One line per check (pass / warn / fail,
// the fix under each warning and failure) or --json; exits 1 when a check failed.

#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "doctor/doctor.h"
#include "doctor/report.h"

namespace dcu {

void add_doctor_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Check this machine: CPU, GPU libraries, devices, memory, links and a kernel self-test against the CPU");
  cmd->add_flag("--json", *json, "One JSON object on stdout instead of text");
  cmd->callback([json] {
    const doctor::DoctorProbes probes = doctor::real_probes();
    const doctor::Checks checks = doctor::run_doctor(probes);
    if (*json)
      std::printf("%s\n", doctor::format_json(probes.build, checks).dump(2).c_str());
    else
      std::fputs(doctor::format_text(probes.build, checks).c_str(), stdout);
    std::fflush(stdout);
    if (doctor::any_failed(checks)) std::exit(1);
  });
}

}  // namespace dcu
