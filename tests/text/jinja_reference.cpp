#include "jinja_reference.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "text/jinja/template.h"

namespace dcu::test {

std::vector<JinjaResult> reference_render(const std::vector<JinjaCase>& cases) {
  char dir_template[] = "/tmp/dcuserve-jinja-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) fail("cannot create a temporary directory");
  std::string in = std::string(dir) + "/in.json", out = std::string(dir) + "/out.json";
  nlohmann::ordered_json request = {{"cases", nlohmann::ordered_json::array()}};
  for (const auto& c : cases) request["cases"].push_back({{"template", c.source}, {"context", c.context}});
  std::ofstream(in) << request.dump();
  std::string command = "/usr/bin/python3 tools/jinja_reference.py " + in + " " + out;
  int rc = std::system(command.c_str());
  std::ifstream result_file(out);
  std::stringstream text;
  text << result_file.rdbuf();
  std::remove(in.c_str());
  std::remove(out.c_str());
  rmdir(dir);
  if (rc != 0 || text.str().empty())
    fail("the jinja2 reference failed (exit {}); install python3-jinja2 (scripts/setup.sh)", rc);
  auto results = nlohmann::json::parse(text.str());
  std::vector<JinjaResult> out_results;
  for (const auto& r : results) {
    JinjaResult x;
    x.ok = r["ok"].get<bool>();
    if (x.ok) {
      x.output = r["output"].get<std::string>();
    } else {
      x.error = r["error"].get<std::string>() + ": " + r["message"].get<std::string>();
      x.line = r["line"].is_number() ? r["line"].get<int>() : 0;
    }
    out_results.push_back(std::move(x));
  }
  if (out_results.size() != cases.size()) fail("the jinja2 reference returned {} results for {} cases", out_results.size(), cases.size());
  return out_results;
}

JinjaResult engine_render(const JinjaCase& c) {
  JinjaResult r;
  try {
    jinja::Template t(c.source);
    r.output = t.render(c.context);
    r.ok = true;
  } catch (const dcu::Error& e) {
    r.error = e.what();
    static const std::regex line_re("at line ([0-9]+)");
    std::smatch m;
    if (std::regex_search(r.error, m, line_re)) r.line = std::stoi(m[1]);
  }
  return r;
}

void expect_same_as_reference(const std::vector<JinjaCase>& cases, bool compare_error_lines) {
  std::vector<JinjaResult> expected;
  ASSERT_NO_THROW(expected = reference_render(cases));
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case '" + cases[i].name + "': " + cases[i].source);
    JinjaResult got = engine_render(cases[i]);
    const JinjaResult& want = expected[i];
    if (want.ok) {
      EXPECT_TRUE(got.ok) << "dcuserve failed: " << got.error;
      if (got.ok) {
        EXPECT_EQ(got.output, want.output);
      }
    } else {
      EXPECT_FALSE(got.ok) << "jinja2 failed with " << want.error << " but dcuserve rendered: " << got.output;
      if (!got.ok && compare_error_lines && want.line > 0) {
        EXPECT_EQ(got.line, want.line) << "jinja2: " << want.error << "\ndcuserve: " << got.error;
      }
    }
  }
}

}  // namespace dcu::test
