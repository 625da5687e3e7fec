#pragma once
// Leveled logging to stderr, safe to call from any thread. Lines look like vLLM's:
// "INFO 12-01 20:30:00 message": the level, the local date (month-day) and time to the second. No
// milliseconds: the lines that time something (weights read, start-up) state their own durations.

#include <chrono>
#include <ctime>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace dcu::log {

enum class Level { Debug, Info, Warn, Error };

void set_level(Level level);
bool enabled(Level level);
void write(Level level, const std::string& message);
// The line write() prints for `message` logged at `when`, without its newline.
std::string format_line(Level level, std::time_t when, std::string_view message);

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

// Decimal gigabytes with two decimals: "2.68 GB".
std::string gigabytes(double bytes);

// Progress of one long step over bytes (reading weights). On a terminal: a bar on stderr's last line,
// redrawn in place; log lines written meanwhile go above it. Otherwise (a file or a pipe): an info
// line every `interval`, so a quick step prints none. Used from one thread.
class Progress {
 public:
  explicit Progress(std::string what, bool terminal = stderr_is_terminal(),
                    std::chrono::milliseconds interval = std::chrono::seconds(5));
  ~Progress();  // erases the bar
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(size_t done, size_t total);
  static bool stderr_is_terminal();

 private:
  std::string what_;
  bool terminal_;
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point next_line_;
  int percent_ = -1;
};

}  // namespace dcu::log
