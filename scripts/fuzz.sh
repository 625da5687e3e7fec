#!/usr/bin/env bash
# Builds the libFuzzer targets (tokenizer + detokenizer, Jinja parser + renderer) with clang and
# AddressSanitizer/UBSan, and runs each for SECONDS (default 120). Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-120}"
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p"; }
done
out=build/fuzz
mkdir -p "$out/tokenizer_corpus" "$out/jinja_corpus"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Isrc)
clang++-14 "${flags[@]}" fuzz/tokenizer_fuzz.cpp src/text/tokenizer*.cpp src/text/unicode.cpp \
  src/text/detokenizer.cpp src/core/log.cpp -lfmt -lpcre2-8 -lutf8proc -o "$out/tokenizer_fuzz"
clang++-14 "${flags[@]}" fuzz/jinja_fuzz.cpp src/text/jinja/*.cpp -lfmt -lutf8proc -o "$out/jinja_fuzz"
cp tests/data/jinja/templates/*.jinja "$out/jinja_corpus/"
"$out/tokenizer_fuzz" "$out/tokenizer_corpus" -max_total_time="$seconds" -max_len=4096
"$out/jinja_fuzz" "$out/jinja_corpus" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048
