#!/usr/bin/python3
"""Renders Jinja templates with Python's jinja2, configured exactly as transformers'
apply_chat_template configures it. The reference for dcuserve's Jinja engine tests.

usage: jinja_reference.py INPUT.json OUTPUT.json
INPUT:  {"cases": [{"template": "...", "context": {...}}, ...]}
OUTPUT: [{"ok": true, "output": "..."} or {"ok": false, "error": "TypeName", "message": "...", "line": N}, ...]
"""
import json
import sys
import traceback
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(Extension):
    """transformers' {% generation %} tag: the body renders unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def template_line(exc):
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return exc.lineno
    line = None  # other errors: the template frame of the traceback (Python's own SyntaxError has none)
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == "<template>":
            line = lineno
    return line


def render(env, cache, case):
    try:
        source = case["template"]
        if source not in cache:
            cache[source] = env.from_string(source)
        template = cache[source]
        return {"ok": True, "output": template.render(**case.get("context", {}))}
    except Exception as exc:  # every failure is a result to compare, not a crash
        return {"ok": False, "error": type(exc).__name__, "message": str(exc), "line": template_line(exc)}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    env = make_env()
    cache = {}
    results = [render(env, cache, case) for case in cases]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
