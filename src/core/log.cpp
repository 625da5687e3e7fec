#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

namespace dcu::log {
namespace {
std::atomic<Level> g_level{Level::Info};
std::mutex g_mutex;
constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
}  // namespace

void set_level(Level level) { g_level = level; }
bool enabled(Level level) { return level >= g_level.load(); }

void write(Level level, const std::string& message) {
  using namespace std::chrono;
  auto now = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  std::lock_guard lock(g_mutex);
  std::fprintf(stderr, "[%lld.%03lld %s] %s\n", (long long)(now / 1000), (long long)(now % 1000),
               kNames[int(level)], message.c_str());
}

}  // namespace dcu::log
