#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <unistd.h>

namespace dcu::log {
namespace {

std::atomic<Level> g_level{Level::Info};
std::mutex g_mutex;
std::string g_bar;  // the progress bar drawn on stderr's last line, "" when none; guarded by g_mutex
constexpr const char* kNames[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
constexpr const char* kEraseLine = "\r\033[K";
constexpr int kBarWidth = 30;

// "loading weights  45% |#############                 | 1.21/2.68 GB"
std::string bar_text(const std::string& what, int percent, size_t done, size_t total) {
  const int filled = percent * kBarWidth / 100;
  return fmt::format("{} {:3}% |{}{}| {:.2f}/{}", what, percent, std::string(size_t(filled), '#'),
                     std::string(size_t(kBarWidth - filled), ' '), double(done) / 1e9, gigabytes(double(total)));
}

void draw_bar(std::string bar) {
  std::lock_guard lock(g_mutex);
  g_bar = std::move(bar);
  std::fprintf(stderr, "%s%s", kEraseLine, g_bar.c_str());
}

}  // namespace

void set_level(Level level) { g_level = level; }
bool enabled(Level level) { return level >= g_level.load(); }

std::string format_line(Level level, std::time_t when, std::string_view message) {
  std::tm local{};
  ::localtime_r(&when, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%m-%d %H:%M:%S", &local);
  return fmt::format("{} {} {}", kNames[int(level)], stamp, message);
}

void write(Level level, const std::string& message) {
  const std::string line = format_line(level, std::time(nullptr), message);
  std::lock_guard lock(g_mutex);
  // The line takes the progress bar's place; the bar is drawn again below it.
  std::fprintf(stderr, "%s%s\n%s", g_bar.empty() ? "" : kEraseLine, line.c_str(), g_bar.c_str());
}

std::string gigabytes(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

Progress::Progress(std::string what, bool terminal, std::chrono::milliseconds interval)
    : what_(std::move(what)), terminal_(terminal), interval_(interval),
      next_line_(std::chrono::steady_clock::now() + interval_) {}

Progress::~Progress() {
  if (terminal_ && percent_ >= 0) draw_bar("");
}

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO); }

void Progress::update(size_t done, size_t total) {
  const int percent = total ? int(100.0 * double(done) / double(total)) : 100;
  if (percent == percent_) return;
  percent_ = percent;
  if (terminal_) return draw_bar(bar_text(what_, percent, done, total));
  const auto now = std::chrono::steady_clock::now();
  if (now < next_line_ || done == total) return;  // the caller logs the end
  next_line_ = now + interval_;
  info("{}: {}% ({:.2f} of {})", what_, percent, double(done) / 1e9, gigabytes(double(total)));
}

}  // namespace dcu::log
