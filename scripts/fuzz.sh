#!/usr/bin/env bash
# Builds the libFuzzer targets (tokenizer + detokenizer, Jinja parser + renderer, config.json with its
# quantization_config) with clang and
# AddressSanitizer/UBSan, and runs each for SECONDS (default 120). Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-120}"
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p"; }
done
out=build/fuzz
mkdir -p "$out/tokenizer_corpus" "$out/jinja_corpus" "$out/config_corpus"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Isrc)
clang++-14 "${flags[@]}" fuzz/tokenizer_fuzz.cpp src/text/tokenizer*.cpp src/text/unicode.cpp \
  src/text/detokenizer.cpp src/core/log.cpp -lfmt -lpcre2-8 -lutf8proc -o "$out/tokenizer_fuzz"
clang++-14 "${flags[@]}" fuzz/jinja_fuzz.cpp src/text/jinja/*.cpp -lfmt -lutf8proc -o "$out/jinja_fuzz"
clang++-14 "${flags[@]}" fuzz/model_config_fuzz.cpp src/model/config.cpp src/model/quantization_config.cpp \
  src/core/log.cpp -lfmt -o "$out/model_config_fuzz"
cp tests/data/jinja/templates/*.jinja "$out/jinja_corpus/"
n=0
for f in $(find tests/data models -name config.json); do cp "$f" "$out/config_corpus/$((n += 1)).json"; done
"$out/tokenizer_fuzz" "$out/tokenizer_corpus" -max_total_time="$seconds" -max_len=4096
"$out/jinja_fuzz" "$out/jinja_corpus" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048
"$out/model_config_fuzz" "$out/config_corpus" -max_total_time="$seconds" -max_len=8192 -timeout=10
