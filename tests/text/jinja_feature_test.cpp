// Small feature templates, each rendered by python3-jinja2 (the reference) and by dcuserve.
#include <gtest/gtest.h>

#include "jinja_reference.h"

namespace dcu::test {
namespace {

JinjaCase C(std::string source, const char* context = "{}") {
  return JinjaCase{source, source, nlohmann::ordered_json::parse(context)};
}

const char* kData = R"({
  "s": "Hello, World", "u": "héllo wörld ✓ 你好", "n": 7, "f": 2.5, "neg": -3, "t": true, "nul": null,
  "l": [3, 1, 2], "words": ["b", "A", "c", "a"], "e": [],
  "d": {"z": 1, "a": 2, "m": {"x": [1, 2]}},
  "users": [{"name": "bob", "age": 30, "role": "user"}, {"name": "Al", "age": 25, "role": "admin"},
            {"name": "cy", "age": 30, "role": "user", "tags": ["x"]}],
  "text": "  line one\nline two\n\n  three  "
})";

JinjaCase D(std::string source) { return C(std::move(source), kData); }

TEST(JinjaFeatures, Literals) {
  expect_same_as_reference({
      D("{{ 'a\\tb\\n' }}|{{ \"q'\" }}|{{ 'x' 'y' }}|{{ '\\u00e9\\x41\\101' }}"),
      D("{{ 42 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 1.5 }} {{ 1e3 }} {{ 2.5e-3 }} {{ 1.0 }}"),
      D("{{ true }} {{ True }} {{ false }} {{ none }} {{ None }}"),
      D("{{ [1, 'a', none, true, 1.5, [2], {'k': 'v'}] }}"),
      D("{{ (1, 2) }} {{ (1,) }} {{ () }} {{ {'a': 1, 2: 'b'} }} {{ {} }} {{ [] }}"),
      D("{{ \"it's\" }} {{ ['it\\'s', 'say \"hi\"', 'both \\' \"'] }}"),
      D("{{ ['\\n', '\\t', '\\x01', 'é', '\\\\'] }}"),
      D("{{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1/3 }} {{ 2**0.5 }} {{ -0.0 }} {{ 123456789.123 }}"),
      D("{{ d }} {{ users[0] }} {{ l }}"),
      D("{{ [1.0, 1e-7, 'é', '\u200b', '\x7f', -2.50, 100.0, 1e100] }}"),
  });
}

TEST(JinjaFeatures, Arithmetic) {
  expect_same_as_reference({
      D("{{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }}"),
      D("{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 1.5 + 1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ true + 1 }}"),
      D("{{ 'ab' * 3 }} {{ 3 * 'x' }} {{ [1] * 2 }} {{ 'a' + 'b' }} {{ [1] + [2, 3] }} {{ (1,) + (2,) }}"),
      D("{{ 1 ~ 2 ~ 'x' ~ none ~ true ~ [1] }}|{{ undefined_var ~ 'x' }}"),
      D("{{ n + f }} {{ n * neg }} {{ -n }} {{ +n }} {{ -f }} {{ 10 - 2 - 3 }} {{ 2 * 3 + 4 * 5 }} {{ (2 + 3) * 4 }}"),
      D("{{ 1 / 0 }}"),
      D("{{ -1 | abs }} {{ not 1 == 2 }} {{ 1 if 2 > 1 }} {{ [3, 1, 2] | sort | first }} {{ (3, 1) | sort }} {{ 'abc' | batch(2) | list }}"),
      D("{{ 'a' ~ 1 + 2 }}"),
      D("{{ -2 ** 2 }} {{ -2 ** n }} {{ (-2) ** (n - 7) }} {{ -n ** 2 }} {{ -2 ** (1 + 1) }} {{ -2.0 ** n }} {{ 2 ** -1 }}"),
      D("{{ 'a' + 1 }}"),
      D("{{ 'a' - 'b' }}"),
      D("{{ missing + 1 }}"),
      D("{{ 5 // 0 }}"),
  });
}

TEST(JinjaFeatures, ComparisonsAndLogic) {
  expect_same_as_reference({
      D("{{ 1 == 1.0 }} {{ 1 != 2 }} {{ 'a' < 'b' }} {{ 2 >= 2 }} {{ 3 > 2 > 1 }} {{ 1 < 3 < 2 }} {{ [1, 2] < [1, 3] }} {{ true == 1 }}"),
      D("{{ 'ell' in s }} {{ 4 in l }} {{ 'a' in d }} {{ 'q' not in d }} {{ 3 not in l }} {{ 'x' in missing }}"),
      D("{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ none or none }} {{ not 0 }} {{ not l }} {{ not e }}"),
      D("{{ 'yes' if t else 'no' }} {{ 'yes' if nul else 'no' }} [{{ 'only' if false }}] {{ 1 if 0 else 2 if 0 else 3 }}"),
      D("{% if n > 5 and not nul %}big{% elif n > 2 %}mid{% else %}small{% endif %}"),
      D("{% if missing %}a{% elif e %}b{% elif d.m %}c{% endif %}"),
      D("{{ 1 < 'a' }}"),
      D("{{ undefined == undefined }} {{ nul == none }} {{ d == {'z': 1, 'a': 2, 'm': {'x': [1, 2]}} }} {{ [1] == (1,) }}"),
  });
}

TEST(JinjaFeatures, Tests) {
  expect_same_as_reference({
      D("{{ s is defined }} {{ missing is defined }} {{ missing is undefined }} {{ nul is none }} {{ s is string }} {{ n is string }}"),
      D("{{ d is mapping }} {{ l is mapping }} {{ l is sequence }} {{ s is sequence }} {{ d is iterable }} {{ n is iterable }} {{ missing is iterable }}"),
      D("{{ n is number }} {{ f is number }} {{ t is number }} {{ n is integer }} {{ t is integer }} {{ f is float }} {{ n is float }}"),
      D("{{ t is boolean }} {{ n is boolean }} {{ t is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}"),
      D("{{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ n is not odd }}"),
      D("{{ 'a' is equalto 'a' }} {{ 1 is eq 2 }} {{ 2 is ne 3 }} {{ 2 is lt 3 }} {{ 3 is gt 2 }} {{ 2 is le 2 }} {{ 2 is ge 3 }} {{ 2 is in l }}"),
      D("{{ 'abc' is lower }} {{ 'aBc' is lower }} {{ 'ABC' is upper }} {{ '1A' is upper }} {{ '12' is lower }} {{ range is callable }}"),
      D("{{ missing is odd }}"),
      D("{{ l is sameas l }} {{ nul is sameas none }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ 'nope' is filter }}"),
  });
}

TEST(JinjaFeatures, AttributesItemsSlices) {
  expect_same_as_reference({
      D("{{ d.z }} {{ d['a'] }} {{ d.m.x[1] }} {{ d['m']['x'][-1] }} {{ users[1].name }} {{ l.0 }} {{ users.1['age'] }}"),
      D("[{{ d.nope }}] [{{ d['nope'] }}] [{{ l[10] }}] [{{ nul.x }}] [{{ s.nope }}] [{{ n.x }}]"),
      D("{{ missing.attr }}"),
      D("{{ missing['k'] }}"),
      D("{{ d.nope.deeper }}"),
      D("{{ l[::-1] }} {{ l[1:] }} {{ l[:-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[5:] }} {{ s[::-1] }} {{ s[7:] }} {{ u[1:4] }} {{ u[-2:] }}"),
      D("{{ l[1:missing] }}"),
      D("{{ n[1:] }}"),
      D("{{ d[1:] }}"),
      D("{{ missing[1:] }}"),
      D("{{ l[1.5:] }}"),
      D("{{ l[::, 1] }}"),
      D("{{ d[1:, 'a'] }}"),
      D("{{ s[0] }} {{ s[-1] }} {{ u[1] }} {{ u[-1] }} {{ (1, 2, 3)[1:] }} {{ l[1:3:1] }} {{ l[-1:0:-1] }}"),
  });
}

TEST(JinjaFeatures, StringMethods) {
  expect_same_as_reference({
      D("{{ s.startswith('Hell') }} {{ s.endswith('x') }} {{ s.startswith(('x', 'H')) }} {{ s.upper() }} {{ s.lower() }} {{ u.upper() }}"),
      D("{{ s.split(',') }} {{ text.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  a  b '.split(None, 1) }}"),
      D("[{{ text.strip() }}] [{{ text.lstrip() }}] [{{ text.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ '\\u3000 wide\\u3000'.strip() }}]"),
      D("{{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 2) }} {{ 'ab'.replace('', '-') }} {{ s.find('o') }} {{ s.find('z') }} {{ u.find('w') }} {{ s.count('l') }}"),
      D("{{ 'hello world-foo bar'.title() }} {{ \"they're 1st\".title() }} {{ 'hELLO'.capitalize() }} {{ ', '.join(['a', 'b']) }} {{ '-'.join('abc') }}"),
      D("{{ '{} and {}'.format('a', 1) }} {{ '{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x=3) }} {{ '{:>5}|{:<4}|{:^7}|'.format('ab', 'c', 'mid') }} {{ '{:.2f} {:05d} {!r}'.format(3.14159, 42, 'q') }}"),
      D("{{ '12'.isdigit() }} {{ 'ab'.isdigit() }} {{ ' '.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ 'a1'.isalnum() }}"),
      D("{{ 'a\\nb\\r\\nc\\n'.splitlines() }} {{ 'prefix-x'.removeprefix('prefix-') }} {{ 'x.txt'.removesuffix('.txt') }} {{ 'abcabc'.rfind('b') }} {{ 'ab'.isalpha() }} {{ 'a1'.isalpha() }} {{ 'é'.isalpha() }}"),
      D("{{ 'ab'.ljust(5, '*') }}|{{ 'ab'.rjust(5) }}|{{ '42'.zfill(5) }}|{{ '-4'.zfill(4) }}|{{ 'a=b=c'.partition('=') }}|{{ 'a=b=c'.rpartition('=') }}|{{ 'abc'.partition('x') }}"),
      D("{{ '%s and %d' % ('a', 3) }}|{{ '%05.1f|%-4s|%r|%5s|%+d|%%' % (3.14159, 'x', 'y', 'ab', 4) }}|{{ '%(a)s-%(b)d' % {'a': 1, 'b': 2} }}|{{ 'abc' % l }}|{{ '%s' % l }}|{{ '%d' % 3.9 }}"),
      D("{{ 'abc' % 5 }}"),
      D("{{ '%s %s' % ('a',) }}"),
      D("{{ '%s' % (1, 2) }}"),
      D("{{ f | indent(2) }}"),
      D("{{ s.nosuchmethod() }}"),
  });
}

TEST(JinjaFeatures, ListAndDictMethods) {
  expect_same_as_reference({
      D("{{ l.index(2) }} {{ l.count(3) }} {{ words.index('c') }}"),
      D("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {{ d.keys() | list }} {{ d.values() | list }}"),
      D("{{ d.get('z') }} {{ d.get('q') }} {{ d.get('q', 'dflt') }} {{ users[0].get('name') }}"),
      D("{{ d.keys() }} {{ d.items() }} {{ d.values() | length }} [{{ d.keys()[0] }}] {{ 'z' in d.keys() }} {{ {}.keys() | length }} {% if {}.items() %}x{% else %}empty{% endif %} {{ d.keys() | sort }}"),
      D("{{ 'Hello' % missing }}|{{ '%s' % missing }}"),
      D("{% set x = [1] %}{{ x.append(2) }}"),
      D("{% set x = {'a': 1} %}{{ x.update({'b': 2}) }}"),
      D("{{ l.pop() }}|{{ l }}|{{ l.pop(0) }}|{{ l }}"),
      D("{% set x = [1, 2] %}{{ x.pop() }}{{ x }}{{ x.clear() }}{{ x }}"),
      D("{{ d.pop('a') }}"),
      D("{{ e.pop() }}"),
      D("[{{ l.append }}]"),
  });
}

TEST(JinjaFeatures, StringFilters) {
  expect_same_as_reference({
      D("[{{ text | trim }}] [{{ 'xxhixx' | trim('x') }}] {{ s | upper }} {{ s | lower }} {{ 'hello WORLD' | capitalize }} {{ 'hello wORLD-x (y)' | title }}"),
      D("{{ s | replace('o', '0') }} {{ s | replace('l', '', 1) }} {{ s | length }} {{ u | length }} {{ s | count }} {{ s | wordcount }} {{ u | wordcount }}"),
      D("[{{ 'ab' | center(8) }}] [{{ 'abc' | center(8) }}] [{{ 'abc' | center(2) }}]"),
      D("{{ text | indent }}|{{ text | indent(2, true) }}|{{ text | indent('> ', blank=true) }}|{{ 'a\\n\\nb\\n' | indent(first=true) }}"),
      D("{{ 'The quick brown fox jumps' | truncate(12) }}|{{ 'The quick brown fox' | truncate(12, true) }}|{{ 'short' | truncate(10) }}|{{ 'The quick brown fox jumps over' | truncate(15, false, '…', 0) }}"),
      D("{{ '<a href=\"x\">&\\'</a>' | e }} {{ '<b>' | escape }} {{ '<i>' | safe }} {{ 5 | string }} {{ [1, 'a'] | string }}"),
      D("{{ n | trim }} {{ missing | upper }}| {{ u | title }} {{ u | capitalize }} {{ s | reverse }} {{ u | reverse }}"),
  });
}

TEST(JinjaFeatures, SequenceFilters) {
  expect_same_as_reference({
      D("{{ l | join(',') }} {{ l | join }} {{ users | join(', ', attribute='name') }} {{ words | first }} {{ words | last }} {{ s | first }} {{ d | first }}"),
      D("[{{ e | first }}] [{{ e | last }}] {{ l | list }} {{ s | list }} {{ d | list }} {{ missing | list }} {{ l | length }} {{ d | length }} {{ missing | length }}"),
      D("{{ words | sort }} {{ words | sort(case_sensitive=true) }} {{ words | sort(reverse=true) }} {{ users | sort(attribute='age') | map(attribute='name') | list }}"),
      D("{{ users | sort(attribute='age,name') | map(attribute='name') | join(' ') }} {{ users | sort(attribute='age', reverse=true) | map(attribute='name') | join(' ') }}"),
      D("{{ words | unique | list }} {{ words | unique(case_sensitive=true) | list }} {{ users | unique(attribute='age') | map(attribute='name') | list }}"),
      D("{{ l | sum }} {{ users | sum(attribute='age') }} {{ [[1], [2]] | sum(start=[]) }} {{ l | min }} {{ l | max }} {{ words | min }} {{ words | max(case_sensitive=true) }} {{ users | max(attribute='age') }}"),
      D("[{{ e | min }}] {{ l | reverse | list }} {{ d | reverse | list }} {{ l | batch(2) | list }} {{ l | batch(2, 'x') | list }}"),
      D("{{ words | map('upper') | list }} {{ users | map(attribute='tags', default=['none']) | list }} {{ users | map(attribute='missing') | list }} {{ l | map('string') | join('-') }}"),
      D("{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ [0, 1, '', 'a', none] | select | list }} {{ l | select('gt', 1) | list }} {{ l | select('in', [1, 3]) | list }}"),
      D("{{ users | selectattr('role', 'equalto', 'user') | map(attribute='name') | list }} {{ users | rejectattr('tags') | map(attribute='name') | list }} {{ users | selectattr('tags', 'defined') | list | length }}"),
      D("{{ d | items | list }} {{ missing | items | list }} {{ d | dictsort }} {{ d | dictsort(reverse=true) }} {{ {'b': 1, 'A': 3, 'a': 2} | dictsort(case_sensitive=true) }} {{ d | dictsort(by='value') }}"),
      D("{{ users | map(attribute='m.x.0') | list }} {{ [d, d] | map(attribute='m.x.1') | list }}"),
      // map/select/unique/reverse/batch/items return generators in jinja2: truthy, unsized, unindexable.
      D("{% if e | select %}truthy{% endif %} {{ (l | select('odd')) is iterable }} {{ (l | select) is sequence }} [{{ (l | reverse)[0] }}] {{ l | reverse | reverse }} {{ l | map('string') | first }}"),
      D("{{ l | map('string') | length }}"),
      D("{{ missing | map(nonsense=1) | list }} {{ e | map | list }}"),
      D("{{ l | map('string') | last }}"),
      D("{{ d | items | length }}"),
  });
}

TEST(JinjaFeatures, NumberFilters) {
  expect_same_as_reference({
      D("{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(9) }} {{ 3.9 | int }} {{ -3.9 | int }} {{ '0x1A' | int(0, 16) }} {{ ' 7 ' | int }} {{ none | int }} {{ true | int }}"),
      D("{{ '2.5' | float }} {{ 3 | float }} {{ 'x' | float }} {{ '1e3' | float }} {{ none | float(1.5) }}"),
      D("{{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 7 | round }} {{ 1.23456 | round(3) }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(method='floor') }} {{ -0.5 | round }}"),
      D("{{ -5 | abs }} {{ -2.5 | abs }} {{ 3 | abs }} {{ n | string }} {{ f | string }}"),
  });
}

TEST(JinjaFeatures, DefaultAndTojson) {
  expect_same_as_reference({
      D("{{ missing | default('dflt') }} {{ missing | d('x') }} {{ '' | default('empty') }} {{ '' | default('empty', true) }} {{ nul | default('n') }} {{ nul | d('n', boolean=true) }} {{ s | default('x') }}"),
      D("{{ d | tojson }}|{{ users | tojson }}|{{ 'é\"\\n\\u2028' | tojson }}|{{ [1.0, 1e20, -0.5, true, none] | tojson }}"),
      D("{{ d | tojson(indent=2) }}|{{ l | tojson(indent=0) }}|{{ e | tojson(indent=2) }}|{{ {} | tojson(indent=2) }}"),
      D("{{ u | tojson(ensure_ascii=true) }} {{ '😀' | tojson(ensure_ascii=true) }} {{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }} {{ d | tojson(separators=(',', ':')) }}"),
      D("{{ {1: 'a', none: 2, true: 3, 1.5: 4} | tojson }} {{ (1, 2) | tojson }} {{ 'x' | tojson(indent='\\t') }} {{ d | tojson(indent='--') }}"),
      D("{{ missing | tojson }}"),
      D("{{ namespace(a=1) | tojson }}"),
  });
}

TEST(JinjaFeatures, ForLoops) {
  expect_same_as_reference({
      D("{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
      D("{% for x in l %}[{{ loop.previtem }}|{{ loop.nextitem }}]{{ loop.cycle('a', 'b') }}{% endfor %}"),
      D("{% for x in e %}x{% else %}empty{% endfor %}|{% for x in l if x > 1 %}{{ x }}{{ loop.index }}/{{ loop.length }}{% else %}none{% endfor %}|{% for x in l if x > 5 %}x{% else %}none{% endfor %}"),
      D("{% for k in d %}{{ k }}{% endfor %} {% for c in 'abc' %}{{ c }}.{% endfor %} {% for k, v in d | dictsort %}{{ k }}:{{ v }} {% endfor %}"),
      D("{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %} {% for a, b in [[1, 2]] %}{{ a }}{{ b }}{% endfor %}"),
      D("{% for x in range(10) %}{% if x is odd %}{% continue %}{% endif %}{% if x > 6 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
      D("a{% break %}b"),
      D("{% for x in l %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}"),
      D("{% for x in l %}{% for y in e %}{% else %}{% if x > 1 %}{% break %}{% endif %}{% endfor %}{{ x }}{% endfor %}"),
      D("{% for x in l %}{% for y in l %}{{ loop.index }}{% endfor %}/{{ loop.index }} {% endfor %}"),
      D("{% for x in missing %}x{% endfor %}ok {% for u in users %}{{ u.name }}{% if not loop.last %}, {% endif %}{% endfor %}"),
      D("{% for x in nul %}x{% endfor %}"),
      D("{% for x in n %}x{% endfor %}"),
      D("{% for a, b in l %}{% endfor %}"),
      D("{{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }} {% for i in range(3) %}{{ i }}{% endfor %}"),
      D("{{ range(100001) | length }}"),
      D("{% for x in l %}{{ loop }}{% endfor %}"),
  });
}

TEST(JinjaFeatures, ScopingAndAssignment) {
  expect_same_as_reference({
      D("{% set x = 1 %}{% for i in l %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}"),
      D("{% for i in range(3) %}{% if i == 1 %}{% set y = 5 %}{% endif %}[{{ y }}]{% endfor %}[{{ y }}]"),
      D("{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set c, d2 = [3, 4] %}{{ c }}{{ d2 }} {% set t = 1, 2 %}{{ t }}"),
      D("{% set ns = namespace(total=0, items=[]) %}{% for x in l %}{% set ns.total = ns.total + x %}{% set ns.items = ns.items + [x] %}{% endfor %}{{ ns.total }} {{ ns.items }} {{ ns }}"),
      D("{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}[{{ ns.c }}]"),
      D("{% set block_var %}  hello {{ s }}  {% endset %}[{{ block_var }}] {% set up | upper | trim %} shout {% endset %}[{{ up }}]"),
      D("{% if true %}{% set z = 3 %}{% endif %}{{ z }} {% with q = 5, r = 6 %}{{ q + r }}{% endwith %}[{{ q }}]"),
      D("{% set d2 = dict(a=1, b='x') %}{{ d2 }} {{ dict() }}"),
      D("{% set x = 5 %}{% for i in [1, 2] %}[{{ x }}]{% set x = i %}({{ x }}){% endfor %}{{ x }}"),
      D("{% macro m() %}{{ later }}{% endmacro %}{% set later = 'L' %}{{ m() }}"),
      D("{% for a in [1, 2] %}{% for b in [3, 4] if b > 3 %}{{ loop.length }}{{ loop.first }}{% endfor %}{{ loop.length }}{% endfor %}"),
      D("{% set x = 1 %}{% set x.attr = 2 %}"),
      D("{% set a, b = [1, 2, 3] %}"),
  });
}

TEST(JinjaFeatures, MacrosCallFilterRaw) {
  expect_same_as_reference({
      D("{% macro greet(name, greeting='Hi') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Bob') }} {{ greet('Al', greeting='Yo') }} {{ greet(greeting='Hey', name='Cy') }}"),
      D("{% macro m(a, b) %}[{{ a }}|{{ b }}]{% endmacro %}{{ m(1) }}{{ m() }}"),
      D("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}"),
      D("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inside {{ s }}{% endcall %}"),
      D("{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each(l) %}<{{ x * 2 }}>{% endcall %}"),
      D("{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k }}*{{ fact(k - 1) }}{% endif %}{% endmacro %}{{ fact(5) }}"),
      D("{% set g = 'outer' %}{% macro show() %}{{ g }}{% endmacro %}{{ show() }}"),
      D("{% filter upper %}hello {{ s }}{% endfilter %}|{% filter replace('a', 'b') | title %}a cat a hat{% endfilter %}"),
      D("{% raw %}{{ not rendered }} {% if %}{% endraw %}|{%- raw -%}  {{ x }}  {%- endraw -%}  |"),
      D("{# a comment #}x{# multi\nline #}y"),
      D("{% generation %}gen {{ s }}{% endgeneration %}"),
  });
}

TEST(JinjaFeatures, Whitespace) {
  expect_same_as_reference({
      D("a\n{% if true %}\nb\n{% endif %}\nc\n"),
      D("a\n    {% if true %}\n    b\n    {% endif %}\nc"),
      D("  {{ s }}  \n  {% for x in l %}\n  {{ x }}\n  {% endfor %}\n"),
      D("a  {%- if true -%}  b  {%- endif -%}  c|{{- ' x ' -}}  |  {{- 'y' }}"),
      D("a\n  {%+ if true %}b{% endif %}\n{% if true +%}\nc\n{% endif %}"),
      D("x {# c #} y\n  {# line comment #}\nz\n  {#- strip -#}  w"),
      D("{% for x in l %}\n{{ x }}\n{% endfor %}\n\n"),
      D("text\r\nwith crlf\r\n{% if true %}\r\nyes\r\n{% endif %}\r\n"),
      D("  {% if true %}a{% endif %}  {% if true %}b{% endif %}\n\t{% if true %}\tc{% endif %}"),
      D("{{ '{{' }} }} {{ {'a': {'b': 1}} }}"),
      D("line\n{% set x = 1 -%}\n   after {{ x }}\n"),
      D("{%- if true %} a {% endif -%}\n\n  b  \n"),
  });
}

TEST(JinjaFeatures, Globals) {
  expect_same_as_reference({
      D("{{ raise_exception('bad input: ' ~ n) }}"),
      D("{% if n > 5 %}{{ raise_exception('too big') }}{% endif %}after"),
      D("{{ strftime_now('%Y') | length }}"),
      D("{{ undefined_function() }}"),
  });
}

}  // namespace
}  // namespace dcu::test
