#!/usr/bin/env python3
"""Writes schemas.jsonl: the structured-output corpus (one {"name", "schema"} per line).

Hand-written schemas in the shapes real clients send (OpenAI strict mode, pydantic, zod, tool
parameters, GeoJSON, JSON-RPC, configs), then systematic variations over every keyword the engine
implements: type lists, properties/required/additionalProperties, enum (up to 1000 values), const,
items/prefixItems/minItems/maxItems, anyOf/oneOf, allOf, local $ref/$defs with recursion, nesting
to depth 16, pattern, minLength/maxLength, numeric bounds, and the formats date, time, date-time,
uuid, email, ipv4, uri. Deterministic: rerun it to regenerate the file.
"""
import json
import random

rng = random.Random(21)
out = []


def add(name, schema):
    out.append({"name": name, "schema": schema})


def obj(props, required=None, extra=None, **kw):
    s = {"type": "object", "properties": props, "required": list(props) if required is None else required}
    if extra is not None:
        s["additionalProperties"] = extra
    s.update(kw)
    return s


S, I, N, B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}

# --- shapes real clients send ---
add("person", obj({"name": S, "age": {"type": "integer", "minimum": 0, "maximum": 150}, "email": {"type": "string", "format": "email"}}, ["name", "age"]))
add("address", obj({"street": S, "city": S, "zip": {"type": "string", "pattern": "^[0-9]{5}(-[0-9]{4})?$"}, "country": {"type": "string", "minLength": 2, "maxLength": 2}}))
add("product", obj({"id": {"type": "string", "format": "uuid"}, "title": {"type": "string", "maxLength": 80}, "price": {"type": "number", "minimum": 0}, "tags": {"type": "array", "items": S, "maxItems": 5}, "in_stock": B}, ["id", "title", "price"]))
add("order", {"type": "object", "properties": {"order_id": I, "items": {"type": "array", "minItems": 1, "items": obj({"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "qty": {"type": "integer", "minimum": 1, "maximum": 99}})}, "status": {"enum": ["pending", "shipped", "delivered", "cancelled"]}}, "required": ["order_id", "items", "status"], "additionalProperties": False})
add("event", obj({"title": S, "start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"}, "day": {"type": "string", "format": "date"}, "at": {"type": "string", "format": "time"}}, ["title", "start"]))
add("server_config", obj({"host": {"type": "string", "format": "ipv4"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535}, "docs": {"type": "string", "format": "uri"}, "debug": B}))
add("openai_strict_weather", {"type": "object", "properties": {"location": S, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", None]}}, "required": ["location", "unit"], "additionalProperties": False})
add("openai_strict_nullable_anyof", {"type": "object", "properties": {"note": {"anyOf": [S, {"type": "null"}]}, "score": {"anyOf": [N, {"type": "null"}]}}, "required": ["note", "score"], "additionalProperties": False})
add("pydantic_model", {"$defs": {"Pet": {"properties": {"name": {"title": "Name", "type": "string"}, "kind": {"enum": ["cat", "dog"], "title": "Kind", "type": "string"}}, "required": ["name", "kind"], "title": "Pet", "type": "object"}}, "properties": {"owner": {"title": "Owner", "type": "string"}, "pets": {"items": {"$ref": "#/$defs/Pet"}, "title": "Pets", "type": "array"}, "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Nickname"}}, "required": ["owner", "pets"], "title": "Owner", "type": "object"})
add("zod_object", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "number"}, "hobbies": {"type": "array", "items": {"type": "string"}}}, "required": ["name", "age", "hobbies"], "additionalProperties": False})
add("zod_enum_union", {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"shape": {"anyOf": [obj({"kind": {"type": "string", "const": "circle"}, "r": N}, extra=False), obj({"kind": {"type": "string", "const": "square"}, "side": N}, extra=False)]}}, "required": ["shape"], "additionalProperties": False})
add("tool_search", obj({"query": {"type": "string", "minLength": 1}, "limit": {"type": "integer", "minimum": 1, "maximum": 50}, "filters": obj({"lang": {"enum": ["en", "de", "fr", "zh"]}, "after": {"type": "string", "format": "date"}}, [])}, ["query"]))
add("tool_calendar", obj({"summary": S, "attendees": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 4}, "start": {"type": "string", "format": "date-time"}, "duration_minutes": {"type": "integer", "exclusiveMinimum": 0, "maximum": 480}}))
add("geojson_point", obj({"type": {"const": "Point"}, "coordinates": {"type": "array", "prefixItems": [{"type": "number", "minimum": -180, "maximum": 180}, {"type": "number", "minimum": -90, "maximum": 90}], "items": False, "minItems": 2}}))
add("jsonrpc_request", obj({"jsonrpc": {"const": "2.0"}, "method": {"type": "string", "pattern": "^[a-z_.]+$"}, "params": {"type": "array", "maxItems": 3}, "id": {"type": ["integer", "string"]}}, ["jsonrpc", "method", "id"]))
add("recipe", obj({"name": S, "servings": {"type": "integer", "minimum": 1, "maximum": 12}, "ingredients": {"type": "array", "minItems": 1, "maxItems": 8, "items": obj({"item": S, "grams": {"type": "number", "exclusiveMinimum": 0, "maximum": 5000}})}, "vegetarian": B}))
add("movie_review", obj({"title": S, "year": {"type": "integer", "minimum": 1888, "maximum": 2030}, "rating": {"type": "number", "minimum": 0, "maximum": 10}, "verdict": {"enum": ["must-see", "fine", "skip"]}}))
add("sentiment", obj({"label": {"enum": ["positive", "negative", "neutral"]}, "confidence": {"type": "number", "minimum": 0, "maximum": 1}}))
add("entities", obj({"entities": {"type": "array", "items": obj({"text": S, "type": {"enum": ["PERSON", "ORG", "LOC", "DATE"]}, "start": {"type": "integer", "minimum": 0}})}}))
add("classification_oneof", {"oneOf": [obj({"kind": {"const": "spam"}, "score": {"type": "number", "minimum": 0, "maximum": 1}}), obj({"kind": {"const": "ham"}})]})
add("tree_recursive", {"$defs": {"node": {"type": "object", "properties": {"value": I, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}}, "required": ["value"]}}, "$ref": "#/$defs/node"})
add("linked_list", {"definitions": {"cell": {"type": "object", "properties": {"head": S, "tail": {"anyOf": [{"$ref": "#/definitions/cell"}, {"type": "null"}]}}, "required": ["head", "tail"]}}, "$ref": "#/definitions/cell"})
add("root_recursion", {"type": "object", "properties": {"name": S, "sub": {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}}, "required": ["name"]})
add("expression_tree", {"$defs": {"expr": {"anyOf": [{"type": "integer"}, obj({"op": {"enum": ["+", "-", "*"]}, "args": {"type": "array", "items": {"$ref": "#/$defs/expr"}, "minItems": 2, "maxItems": 2}})]}}, "$ref": "#/$defs/expr"})
add("allof_merge", {"allOf": [obj({"id": I}, ["id"]), {"properties": {"id": {"minimum": 10, "maximum": 20}, "name": S}, "required": ["name"]}]})
add("allof_ref_merge", {"$defs": {"base": obj({"created": {"type": "string", "format": "date"}}, ["created"])}, "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"title": {"type": "string", "maxLength": 30}}, "required": ["title"]}]})
add("type_list", {"type": ["string", "integer", "null", "boolean"]})
add("any_json", {})
add("bool_true_schema", True)
add("map_of_ints", {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}})
add("listed_and_extra", {"type": "object", "properties": {"kind": {"const": "x"}}, "required": ["kind"], "additionalProperties": {"type": "string", "maxLength": 5}})
add("draft4_exclusive", {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "minimum": 5, "exclusiveMinimum": True, "maximum": 10, "exclusiveMaximum": True})
add("draft4_tuple", {"$schema": "http://json-schema.org/draft-04/schema#", "type": "array", "items": [S, I], "additionalItems": False})
add("unevaluated_false", {"type": "object", "properties": {"a": S}, "required": ["a"], "unevaluatedProperties": False})
add("required_not_listed", {"type": "object", "required": ["x"], "additionalProperties": {"type": "boolean"}})
add("min_max_properties", {"type": "object", "properties": {"a": I, "b": I}, "required": ["a"], "minProperties": 1, "maxProperties": 2})
add("unicode_enum", {"enum": ["café", "naïve", "日本語", "emoji 😀", "quote \" and \\ backslash", "tab\tnewline\n"]})
add("const_object", {"const": {"version": 1, "flags": [True, False, None], "name": "x"}})
add("escaped_keys", obj({"we\"ird": S, "back\\slash": I, "ünï": B}))
add("pattern_unanchored", {"type": "string", "pattern": "[0-9]{3}"})
add("pattern_alternation", {"type": "string", "pattern": "^(red|green|blue)(-[a-z]+)?$"})
add("pattern_with_length", {"type": "string", "pattern": "^[a-z]+$", "minLength": 3, "maxLength": 6})
add("format_with_length", {"type": "string", "format": "email", "maxLength": 24})

# --- systematic variations ---
for i in range(20):
    lo = rng.randint(-1000, 1000)
    hi = lo + rng.choice([0, 1, 9, 10, 99, 1000, 123456])
    kind = rng.choice(["inclusive", "exclusive_lo", "exclusive_hi", "lo_only", "hi_only"])
    s = {"type": "integer"}
    if kind != "hi_only":
        s["exclusiveMinimum" if kind == "exclusive_lo" else "minimum"] = lo - (1 if kind == "exclusive_lo" else 0)
    if kind != "lo_only":
        s["exclusiveMaximum" if kind == "exclusive_hi" else "maximum"] = hi + (1 if kind == "exclusive_hi" else 0)
    add(f"integer_bounds_{i}", s)
for i in range(14):
    lo = rng.randint(-50, 50)
    hi = lo + rng.choice([1, 2, 10, 100])
    s = {"type": "number"}
    if i % 3 != 2:
        s["exclusiveMinimum" if i % 2 else "minimum"] = lo
    if i % 3 != 1:
        s["exclusiveMaximum" if i % 4 == 0 else "maximum"] = hi
    add(f"number_bounds_{i}", s)
for i in range(12):
    lo = rng.choice([0, 1, 2, 5, 10])
    hi = lo + rng.choice([0, 1, 5, 20, 100])
    s = {"type": "string"}
    if i % 3 != 2:
        s["minLength"] = lo
    if i % 3 != 1:
        s["maxLength"] = hi
    add(f"string_length_{i}", s)
patterns = ["^[A-Z][a-z]+$", "^\\d{3}-\\d{2}-\\d{4}$", "^[a-f0-9]{6}$", "^#?([a-fA-F0-9]{6}|[a-fA-F0-9]{3})$", "^\\+?[1-9]\\d{6,12}$",
            "^[a-z0-9_-]{3,16}$", "^v\\d+\\.\\d+\\.\\d+$", "^(?:[01]\\d|2[0-3]):[0-5]\\d$", "^\\w+@\\w+\\.com$", "^[^\\s]+$",
            "^(\\d+,)*\\d+$", "^[A-Z]{2}\\d{2}[A-Z0-9]{4}\\d{7}$", "^.{1,10}$", "^(yes|no)$", "^[\\u4e00-\\u9fa5]{1,4}$",
            "^\\S+ \\S+$", "^[a-z]+(-[a-z]+)*$", "^\\$\\d+(\\.\\d{2})?$", "^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$", "^\\(\\d{3}\\) \\d{3}-\\d{4}$"]
for i, p in enumerate(patterns):
    add(f"pattern_{i}", {"type": "string", "pattern": p})
formats = ["date", "time", "date-time", "uuid", "email", "ipv4", "uri"]
for i, f in enumerate(formats):
    add(f"format_{f}", {"type": "string", "format": f})
    add(f"format_{f}_in_array", {"type": "array", "items": {"type": "string", "format": f}, "minItems": 1, "maxItems": 3})
    add(f"format_{f}_nullable", obj({"v": {"anyOf": [{"type": "string", "format": f}, {"type": "null"}]}}))
for size in [2, 3, 5, 10, 30, 100, 300, 1000]:
    add(f"enum_strings_{size}", {"type": "string", "enum": [f"value_{k}_{rng.randint(0, 99999)}" for k in range(size)]})
for size in [3, 50, 500]:
    add(f"enum_mixed_{size}", {"enum": [rng.choice([k, f"s{k}", k + 0.5, None, True]) for k in range(size)]})
for depth in [2, 4, 6, 8, 12, 16]:
    s = {"type": "string", "maxLength": 8}
    for d in range(depth):
        s = obj({f"level{d}": s, "n": {"type": "integer", "minimum": 0, "maximum": 9}}, [f"level{d}"])
    add(f"nested_objects_{depth}", s)
    a = {"type": "integer", "minimum": 0, "maximum": 9}
    for d in range(depth):
        a = {"type": "array", "items": a, "minItems": 1, "maxItems": 2}
    add(f"nested_arrays_{depth}", a)
for lo, hi in [(0, 0), (0, 1), (1, 1), (2, 4), (3, None), (0, 10), (5, 5)]:
    s = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100}, "minItems": lo}
    if hi is not None:
        s["maxItems"] = hi
    add(f"array_items_{lo}_{hi}", s)
for i in range(6):
    prefix = [rng.choice([S, I, B, {"type": "null"}, {"enum": ["a", "b"]}]) for _ in range(i + 1)]
    s = {"type": "array", "prefixItems": prefix}
    if i % 2:
        s["items"] = False
    else:
        s["items"] = {"type": "integer"}
        s["maxItems"] = i + 3
    s["minItems"] = rng.randint(0, i + 1)
    add(f"tuple_{i}", s)
for i in range(12):
    n = rng.randint(1, 8)
    props = {}
    for k in range(n):
        props[f"p{k}"] = rng.choice([S, I, N, B, {"type": "null"}, {"type": "string", "maxLength": 5}, {"enum": [1, 2, 3]},
                                     {"type": "array", "items": I, "maxItems": 2}, {"type": ["integer", "null"]}])
    required = sorted(rng.sample(list(props), rng.randint(0, n)))
    s = {"type": "object", "properties": props, "required": required}
    if i % 3 == 0:
        s["additionalProperties"] = False
    elif i % 3 == 1:
        s["additionalProperties"] = rng.choice([I, B, {"type": "string", "maxLength": 3}])
    add(f"object_optional_{i}", s)
for i in range(8):
    branches = [rng.choice([S, I, B, {"type": "null"}, obj({"x": I}), {"type": "array", "items": S, "maxItems": 2},
                            {"type": "string", "format": "date"}, {"const": "fixed"}]) for _ in range(rng.randint(2, 4))]
    add(f"anyof_{i}", {("anyOf" if i % 2 else "oneOf"): branches} if i % 2 else
        {"oneOf": [obj({"tag": {"const": f"t{k}"}, "v": b}) for k, b in enumerate(branches)]})
for i in range(6):
    add(f"anyof_with_siblings_{i}", {"type": "object", "properties": {"id": I}, "required": ["id"],
                                     "anyOf": [{"properties": {"a": S}, "required": ["a"]}, {"properties": {"b": B}, "required": ["b"]}]})
for i in range(6):
    parts = [obj({f"f{k}": rng.choice([S, I, B])}, [f"f{k}"]) for k in range(i + 2)]
    add(f"allof_{i}", {"allOf": parts})
for i in range(6):
    add(f"defs_shared_{i}", {"$defs": {"pt": obj({"x": N, "y": N}), "color": {"enum": ["r", "g", "b"]}},
                             "type": "object", "properties": {f"p{k}": {"$ref": "#/$defs/pt"} for k in range(i + 1)} | {"c": {"$ref": "#/$defs/color"}}})
for i in range(5):
    add(f"mutual_recursion_{i}", {"$defs": {"a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}, "n": I}, "required": ["n"]},
                                            "b": {"type": "array", "items": {"$ref": "#/$defs/a"}, "maxItems": i}},
                                  "$ref": "#/$defs/a"})
for i in range(8):
    fields = {f"field_{k}": rng.choice([S, I, N, B, {"type": "string", "format": rng.choice(formats)}, {"enum": ["x", "y", "z"]}])
              for k in range(rng.randint(3, 12))}
    add(f"openai_strict_{i}", {"type": "object", "properties": fields, "required": list(fields), "additionalProperties": False})
for i in range(6):
    add(f"tool_parameters_{i}", obj({"path": {"type": "string", "description": "file path"}, "line": {"type": "integer", "minimum": 1},
                                     "mode": {"enum": ["read", "write", "append"]}, "recursive": B,
                                     "patterns": {"type": "array", "items": S, "maxItems": i}}, ["path"]))
add("wide_object_60", obj({f"k{k}": {"type": "integer", "minimum": 0, "maximum": 9} for k in range(60)}))
add("wide_optional_40", {"type": "object", "properties": {f"k{k}": B for k in range(40)}, "required": []})
add("big_enum_objects", {"type": "array", "items": {"enum": [{"id": k, "tag": f"t{k}"} for k in range(200)]}, "maxItems": 3})

if __name__ == "__main__":
    names = [e["name"] for e in out]
    assert len(names) == len(set(names)), "names must be unique"
    with open(__file__.replace("make_schemas.py", "schemas.jsonl"), "w") as f:
        for e in out:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
    print(f"{len(out)} schemas")
