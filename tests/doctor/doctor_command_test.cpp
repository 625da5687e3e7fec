// The real `dcuserve doctor` of this build on this machine (the binary in DCUSERVE_BIN): text and
// --json describe the same checks, and the exit status is 1 exactly when one failed.

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

struct CommandRun {
  std::string out;
  int status = -1;
};

CommandRun run(const std::string& args) {
  const char* bin = std::getenv("DCUSERVE_BIN");
  EXPECT_NE(bin, nullptr) << "DCUSERVE_BIN is not set (ctest sets it)";
  CommandRun r;
  FILE* p = popen((std::string(bin ? bin : "dcuserve") + " " + args + " 2>/dev/null").c_str(), "r");
  if (!p) return r;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) r.out.append(buffer, n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(DoctorCommand, JsonListsEveryCheckAndTheExitStatusFollowsTheVerdict) {
  const CommandRun r = run("doctor --json");
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["checks"].is_array());
  ASSERT_GE(j["checks"].size(), 3u);
  EXPECT_EQ(j["checks"].front()["name"], "cpu");
  EXPECT_EQ(j["checks"].back()["name"], "cpu model");
  int fails = 0;
  for (const auto& c : j["checks"]) {
    const std::string status = c["status"];
    EXPECT_TRUE(status == "pass" || status == "warn" || status == "fail") << status;
    EXPECT_FALSE(c["detail"].get<std::string>().empty()) << c["name"];
    if (status != "pass") {
      EXPECT_FALSE(c["fix"].get<std::string>().empty()) << c["name"];
    }
    fails += status == "fail";
  }
  EXPECT_EQ(j["summary"]["fail"], fails);
  EXPECT_EQ(j["ok"], fails == 0);
  EXPECT_EQ(r.status, fails == 0 ? 0 : 1);
  if (j["build"]["gpu"] == "none") {  // a CPU-only build says so
    bool said = false;
    for (const auto& c : j["checks"])
      said |= c["name"] == "gpu" && c["detail"].get<std::string>().find("CPU-only build") != std::string::npos;
    EXPECT_TRUE(said);
  }
}

TEST(DoctorCommand, TextHasAHeaderOneLinePerCheckAFixUnderProblemsAndATally) {
  const CommandRun text = run("doctor");
  const nlohmann::json j = nlohmann::json::parse(run("doctor --json").out);
  std::istringstream in(text.out);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 3u) << text.out;
  EXPECT_EQ(lines.front(), "dcuserve doctor: " + j["build"]["description"].get<std::string>());
  size_t i = 1;
  for (const auto& c : j["checks"]) {
    ASSERT_LT(i, lines.size()) << text.out;
    const std::string status = c["status"] == "fail" ? "FAIL" : c["status"].get<std::string>();
    EXPECT_TRUE(lines[i].starts_with(status + "  " + c["name"].get<std::string>())) << lines[i];
    ++i;
    if (c.contains("fix")) {
      EXPECT_NE(lines[i].find("fix: "), std::string::npos) << lines[i];
      ++i;
    }
  }
  ASSERT_EQ(i + 1, lines.size()) << text.out;
  EXPECT_NE(lines.back().find(" passed, "), std::string::npos) << lines.back();
  EXPECT_EQ(text.status, j["ok"] ? 0 : 1);
}

}  // namespace
