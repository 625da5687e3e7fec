#pragma once
// Minimal leveled logging to stderr, safe to call from any thread.

#include <fmt/format.h>

namespace dcu::log {

enum class Level { Debug, Info, Warn, Error };

void set_level(Level level);
bool enabled(Level level);
void write(Level level, const std::string& message);

template <typename... Args> void info(fmt::format_string<Args...> f, Args&&... a) {
  if (enabled(Level::Info)) write(Level::Info, fmt::format(f, std::forward<Args>(a)...));
}
template <typename... Args> void warn(fmt::format_string<Args...> f, Args&&... a) {
  if (enabled(Level::Warn)) write(Level::Warn, fmt::format(f, std::forward<Args>(a)...));
}
template <typename... Args> void error(fmt::format_string<Args...> f, Args&&... a) {
  if (enabled(Level::Error)) write(Level::Error, fmt::format(f, std::forward<Args>(a)...));
}
template <typename... Args> void debug(fmt::format_string<Args...> f, Args&&... a) {
  if (enabled(Level::Debug)) write(Level::Debug, fmt::format(f, std::forward<Args>(a)...));
}

}  // namespace dcu::log
