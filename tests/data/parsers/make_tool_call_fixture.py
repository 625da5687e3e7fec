#!/usr/bin/python3
"""Renders assistant tool-call turns the way the models are trained to write them, as the reference
for the output parsers' round-trip tests (tests/text/parser_template_roundtrip_test.cpp).

- qwen3_coder: the Qwen3.5 chat template (tests/data/tokenizer/qwen35_chat_template.jinja), rendered
  with python3-jinja2 in Hugging Face's environment (trim/lstrip blocks, tojson = json.dumps with
  ensure_ascii=False). The generated part is what follows the generation prompt
  "<|im_start|>assistant\\n<think>\\n" up to "<|im_end|>".
- hermes: the tool-call lines of the Qwen3 chat template, rendered the same way.

Run from the repository root: /usr/bin/python3 tests/data/parsers/make_tool_call_fixture.py
"""
import json

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception

with open("tests/data/tokenizer/qwen35_chat_template.jinja") as f:
    qwen35 = env.from_string(f.read())

# The assistant tool-call lines of the Qwen3 (hermes) chat template.
qwen3_tool_calls = env.from_string(
    "{{- content }}"
    "{%- for tool_call in tool_calls %}"
    "{%- if (loop.first and content) or (not loop.first) %}{{- '\\n' }}{%- endif %}"
    "{%- if tool_call.function %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' }}{{- tool_call.name }}{{- '\", \"arguments\": ' }}"
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}")


def fn(name, properties):
    return {"type": "function", "function": {"name": name, "description": name + " tool",
                                             "parameters": {"type": "object", "properties": properties}}}


TOOLS = [
    fn("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string", "enum": ["c", "f"]}}),
    fn("set_config", {"ratio": {"type": "number"}, "enabled": {"type": "boolean"}, "tags": {"type": "array"},
                      "options": {"type": "object"}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                      "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}),
    fn("write_file", {"path": {"type": "string"}, "content": {"type": "string"}}),
]


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


CASES = [
    {"name": "single_call_with_content", "reasoning": "The user wants the weather.", "content": "Let me check.",
     "tool_calls": [call("get_weather", {"city": "Paris", "days": 3, "unit": "c"})]},
    {"name": "two_calls_no_content", "reasoning": "Two cities.", "content": "",
     "tool_calls": [call("get_weather", {"city": "東京", "days": 1}), call("get_weather", {"city": "Zürich \"ZH\"", "days": 10})]},
    {"name": "typed_values", "reasoning": "Configure it.", "content": "",
     "tool_calls": [call("set_config", {"ratio": 0.25, "enabled": True, "tags": ["a", "b c", 3],
                                        "options": {"depth": 2, "nested": {"k": [1, 2.5, None]}, "name": "x"},
                                        "note": None, "limit": None})]},
    {"name": "integral_float_and_false", "reasoning": "", "content": "Setting.",
     "tool_calls": [call("set_config", {"ratio": 2.0, "enabled": False, "limit": 7, "note": "none given"})]},
    {"name": "multiline_code_value", "reasoning": "Write the file.\nCarefully.", "content": "",
     "tool_calls": [call("write_file", {"path": "src/a.py",
                                        "content": "\ndef f():\n    return '</parameter> is a tag'\n\n"})]},
    {"name": "unknown_parameter_stays_string", "reasoning": "Extra arg.", "content": "",
     "tool_calls": [call("get_weather", {"city": "Oslo", "extra": "42"}), call("not_declared", {"x": "1"})]},
]


def generated_qwen35(case):
    messages = [{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": case["content"], "reasoning_content": case["reasoning"],
                 "tool_calls": case["tool_calls"]}]
    text = qwen35.render(messages=messages, tools=TOOLS, add_generation_prompt=False)
    prompt = qwen35.render(messages=messages[:1], tools=TOOLS, add_generation_prompt=True)
    assert text.startswith(prompt[:-len("<|im_start|>assistant\n<think>\n")])
    opener = "<|im_start|>assistant\n<think>\n"
    assert prompt.endswith(opener)
    generated = text[text.index(opener) + len(opener):]
    assert generated.endswith("<|im_end|>\n")
    return generated[:-len("<|im_end|>\n")]


def generated_hermes(case):
    return qwen3_tool_calls.render(content=case["content"], tool_calls=case["tool_calls"])


out = {"tools": TOOLS, "cases": []}
for case in CASES:
    out["cases"].append({**case, "qwen35_generated": generated_qwen35(case), "hermes_generated": generated_hermes(case)})

with open("tests/data/parsers/qwen_tool_call_renders.json", "w") as f:
    json.dump(out, f, ensure_ascii=False, indent=1)
    f.write("\n")
