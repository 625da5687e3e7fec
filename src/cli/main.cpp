// dcuserve: serve | generate | bench | info | tokenize | doctor

#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"dcuserve: Qwen3.5 inference server for DCU, CUDA and CPU"};
  app.require_subcommand(1);
  dcu::add_serve_command(app);
  dcu::add_generate_command(app);
  dcu::add_bench_command(app);
  dcu::add_info_command(app);
  dcu::add_tokenize_command(app);
  dcu::add_doctor_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const dcu::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
