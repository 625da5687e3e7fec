#pragma once
// A parsed Jinja template that renders like Python's jinja2 in transformers' sandbox
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols).

#include <string>

#include <nlohmann/json.hpp>

#include "text/jinja/ast.h"
#include "text/jinja/interpreter.h"

namespace dcu::jinja {

class Template {
 public:
  // Parses the source; a syntax error is a dcu::Error naming the template line.
  explicit Template(const std::string& source, RenderLimits limits = {});

  // `context` is a JSON object; its keys become template variables. Errors (undefined
  // values, raise_exception, type errors, limits) are dcu::Error naming the template line.
  std::string render(const nlohmann::ordered_json& context) const;

 private:
  Body body_;
  RenderLimits limits_;
};

}  // namespace dcu::jinja
