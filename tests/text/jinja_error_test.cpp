// Broken templates: jinja2 and dcuserve must both fail, and dcuserve's message must name the
// same template line as jinja2 reports.
#include <gtest/gtest.h>

#include "core/error.h"
#include "jinja_reference.h"
#include "text/jinja/template.h"

namespace dcu::test {
namespace {

JinjaCase E(std::string source) { return JinjaCase{source, source, nlohmann::ordered_json::parse(R"({"m": [{"role": "user"}]})")}; }

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  expect_same_as_reference({
      E("line 1\n{% if x %}\nno endif\n"),
      E("a\nb\n{% for x in %}{% endfor %}"),
      E("{% for x in m %}\n{% endif %}\n{% endfor %}"),
      E("ok\n\n{{ 1 + }}"),
      E("{{ 'unterminated }}"),
      E("{% unknowntag %}"),
      E("one\n{{ x | nosuchfilter }}"),
      E("one\ntwo\n{{ x is nosuchtest }}"),
      E("{% macro m(a=1, b) %}{% endmacro %}"),
      E("{# never closed"),
      E("{% raw %} never closed"),
      E("{{ (1, 2 }}"),
      E("{{ [1, 2) }}"),
      E("{% set %}"),
      E("x\n{% if true %}\n{% else %}\n{% else %}\n{% endif %}"),
      E("{{ a.1.2b }}"),
      E("{% for x in m %}{{ x }}"),
      E("{% include 'other.jinja' %}"),
      E("{{ }}"),
      E("\n\n{% if %}{% endif %}"),
  });
}

TEST(JinjaErrors, RuntimeErrorsNameTheLine) {
  expect_same_as_reference({
      E("a\nb\n{{ missing.attr }}"),
      E("{% for message in m %}\n{{ message.content.strip() }}\n{% endfor %}"),
      E("x\n{% if m[0].role == 'user' %}\n{{ raise_exception('no users here') }}\n{% endif %}"),
      E("{{ 1 }}\n{{ m + 1 }}"),
      E("\n{{ m | tojson(indent=nosuch.x) }}"),
      E("\n\n{% set ns = namespace() %}\n{{ ns.x.y }}"),
  });
}

TEST(JinjaErrors, RuntimeLimitsStopRunawayTemplates) {
  // Not comparable with Python (it would run out of memory or time); dcuserve must fail cleanly.
  jinja::RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_steps = 1'000'000;
  EXPECT_THROW(jinja::Template("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", limits).render({}),
               dcu::Error);
  EXPECT_THROW(jinja::Template("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", limits).render({}), dcu::Error);
  EXPECT_THROW(jinja::Template("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", limits).render({}), dcu::Error);
  EXPECT_THROW(jinja::Template("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), dcu::Error);
  EXPECT_THROW(jinja::Template("{{ 'ab' * 10000000000 }}", limits).render({}), dcu::Error);
}

}  // namespace
}  // namespace dcu::test
