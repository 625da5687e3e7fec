#!/usr/bin/env python3
"""Golden chat renders whose JSON objects are deliberately not in sorted key order, made with
transformers' apply_chat_template (the reference for tests/server/chat_order_test.cpp).

Each case holds the OpenAI request fields (`messages`, `tools`, tool-call `arguments` as the JSON
string clients send) and the render of the same conversation by transformers, with the arguments
parsed by json.loads as vLLM parses them (insertion order kept).

usage (where transformers is installed): tools/chat_order_golden.py MODEL_DIR OUT.json
"""
import copy
import json
import sys

import transformers
from transformers import AutoTokenizer

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Units."},
                "city": {"type": "string", "description": "City name."},
            },
            "required": ["city"],
        },
    },
}
# Keys in an order no sort produces: z before a, nested objects, an array of objects.
SEARCH_TOOL = {
    "function": {
        "parameters": {
            "required": ["query"],
            "properties": {
                "zeta": {"type": "integer", "minimum": 1, "description": "Page."},
                "query": {"type": "string"},
                "filters": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "after": {"type": "string"}}},
                },
            },
            "type": "object",
        },
        "name": "search",
        "description": "Search the web.",
    },
    "type": "function",
}

CASES = [
    {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER_TOOL, SEARCH_TOOL]},
    {
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Find papers on GDN."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"zeta": 2, "query": "gated deltanet", "filters": [{"name": "x", "after": "2024"}]}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"results": [], "total": 0}'},
        ],
        "tools": [SEARCH_TOOL],
    },
    {
        "messages": [
            {"role": "user", "content": "Two calls."},
            {
                "role": "assistant",
                "content": "Calling.",
                "tool_calls": [
                    {"type": "function", "id": "a", "function": {"arguments": '{"unit": "celsius", "city": "Oslo"}', "name": "get_weather"}},
                    {"type": "function", "id": "b", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "3 C"},
            {"role": "tool", "tool_call_id": "b", "content": "19 C"},
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [WEATHER_TOOL],
    },
]


def for_transformers(messages):
    """The conversation as vLLM hands it to the template: arguments parsed, keys in sent order."""
    out = copy.deepcopy(messages)
    for m in out:
        for call in m.get("tool_calls", []):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return out


def main():
    model_dir, out_path = sys.argv[1], sys.argv[2]
    tok = AutoTokenizer.from_pretrained(model_dir)
    chat = []
    for case in CASES:
        for add_generation_prompt in (True, False):
            rendered = tok.apply_chat_template(
                for_transformers(case["messages"]), tools=case.get("tools"), tokenize=False,
                add_generation_prompt=add_generation_prompt)
            chat.append({"request": dict(case, add_generation_prompt=add_generation_prompt), "rendered": rendered})
    about = (f"Renders by transformers {transformers.__version__} apply_chat_template of {model_dir}'s chat template; "
             "request objects deliberately in unsorted key order (tools/chat_order_golden.py)")
    with open(out_path, "w") as f:
        json.dump({"about": about, "chat": chat}, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
