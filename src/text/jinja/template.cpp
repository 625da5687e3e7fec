#include "text/jinja/template.h"

#include "text/jinja/error.h"
#include "text/jinja/parser.h"

namespace dcu::jinja {

Template::Template(const std::string& source, RenderLimits limits) : body_(parse_template(source)), limits_(limits) {}

std::string Template::render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) fail("template context must be a JSON object");
  auto globals = std::make_shared<Scope>();
  for (const auto& [key, value] : context.items()) globals->vars[key] = Value::from_json(value);
  Interpreter interpreter(limits_);
  return interpreter.render(body_, globals);
}

}  // namespace dcu::jinja
