#pragma once
// Each subcommand registers itself on the application; its callback runs after parsing.

namespace CLI {
class App;
}

namespace dcu {

void add_serve_command(CLI::App& app);     // serve_command.cpp
void add_generate_command(CLI::App& app);  // generate_command.cpp
void add_bench_command(CLI::App& app);     // bench_command.cpp
void add_info_command(CLI::App& app);      // info_command.cpp
void add_tokenize_command(CLI::App& app);  // tokenize_command.cpp

}  // namespace dcu
