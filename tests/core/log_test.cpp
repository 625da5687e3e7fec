// Log lines read as vLLM's ("INFO 12-01 20:30:00 message", local time), and the start-up progress bar
// stays on one line that log lines do not break.

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "core/log.h"

namespace dcu::log {
namespace {

constexpr std::time_t k2026_12_01_20_30_00_utc = 1796157000;

// Sets TZ for one test; the previous zone comes back afterwards.
class TimeZone {
 public:
  explicit TimeZone(const char* tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    ::setenv("TZ", tz, 1);
    ::tzset();
  }
  ~TimeZone() {
    if (old_.empty()) ::unsetenv("TZ");
    else ::setenv("TZ", old_.c_str(), 1);
    ::tzset();
  }

 private:
  std::string old_;
};

TEST(Log, LineIsTheLevelThenTheLocalDateAndTime) {
  testing::internal::CaptureStderr();
  info("weights: {} read", "2.68 GB");
  warn("careful");
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(std::regex_match(out, std::regex("INFO \\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d weights: 2.68 GB read\n"
                                               "WARNING \\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d careful\n")))
      << out;
}

TEST(Log, FormatLineUsesLocalTime) {
  {
    TimeZone utc("UTC0");
    EXPECT_EQ(format_line(Level::Info, k2026_12_01_20_30_00_utc, "message"), "INFO 12-01 20:30:00 message");
    EXPECT_EQ(format_line(Level::Debug, k2026_12_01_20_30_00_utc, "m"), "DEBUG 12-01 20:30:00 m");
    EXPECT_EQ(format_line(Level::Warn, k2026_12_01_20_30_00_utc, "m"), "WARNING 12-01 20:30:00 m");
    EXPECT_EQ(format_line(Level::Error, k2026_12_01_20_30_00_utc, "m"), "ERROR 12-01 20:30:00 m");
  }
  TimeZone beijing("CST-8");  // UTC+8: already the next morning
  EXPECT_EQ(format_line(Level::Info, k2026_12_01_20_30_00_utc, "message"), "INFO 12-02 04:30:00 message");
}

TEST(Log, TerminalProgressIsOneLineRedrawnUnderLogLines) {
  testing::internal::CaptureStderr();
  {
    Progress bar("reading weights", /*terminal=*/true);
    bar.update(0, 2'000'000'000);
    bar.update(1'000'000, 2'000'000'000);  // still 0 %: not drawn again
    info("between");
    bar.update(1'000'000'000, 2'000'000'000);
  }
  const std::string out = testing::internal::GetCapturedStderr();
  const std::string erase = "\r\033[K";
  const std::string empty_bar = "reading weights   0% |" + std::string(30, ' ') + "| 0.00/2.00 GB";
  const std::string half_bar =
      "reading weights  50% |" + std::string(15, '#') + std::string(15, ' ') + "| 1.00/2.00 GB";
  const std::string expected_start = erase + empty_bar + erase + "INFO ";
  ASSERT_EQ(out.substr(0, expected_start.size()), expected_start) << out;
  const std::string expected_end = " between\n" + empty_bar + erase + half_bar + erase;
  ASSERT_GE(out.size(), expected_end.size());
  EXPECT_EQ(out.substr(out.size() - expected_end.size()), expected_end) << out;
}

TEST(Log, ProgressInAFileIsPlainLinesAtIntervals) {
  testing::internal::CaptureStderr();
  {
    Progress quick("reading weights", /*terminal=*/false);  // done before the first 5 s: no line
    quick.update(1'000'000'000, 2'000'000'000);
    quick.update(2'000'000'000, 2'000'000'000);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");

  testing::internal::CaptureStderr();
  {
    Progress slow("reading weights", /*terminal=*/false, std::chrono::milliseconds(0));
    slow.update(500'000'000, 2'000'000'000);
    slow.update(2'000'000'000, 2'000'000'000);  // the end: the caller logs it
  }
  const std::string out = testing::internal::GetCapturedStderr();
  const std::regex line("INFO \\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d reading weights: 25% \\(0.50 of 2.00 GB\\)\n");
  EXPECT_TRUE(std::regex_match(out, line)) << out;
}

}  // namespace
}  // namespace dcu::log
