#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (the asan preset: clang 14, AddressSanitizer + UBSan) and runs each
# for SECONDS (default 60), starting from its seed corpus fuzz/corpus/NAME/. Inputs found along the way go
# to build/asan/fuzz-corpus/NAME/ (kept between runs), a crash to build/asan/fuzz-findings/; its log is
# printed and the script fails. Usage: scripts/fuzz.sh [SECONDS [NAME...]]   (default: every fuzzer)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
names=("${@:2}")
if ((${#names[@]} == 0)); then
  for dir in fuzz/corpus/*/; do names+=("$(basename "$dir")"); done
fi
scripts/build.sh asan "${names[@]/%/_fuzz}" >/dev/null
findings=build/asan/fuzz-findings
mkdir -p "$findings"
for name in "${names[@]}"; do
  corpus="build/asan/fuzz-corpus/$name"
  log="build/asan/fuzz-$name.log"
  mkdir -p "$corpus"
  if ! "build/asan/fuzz/${name}_fuzz" "$corpus" "fuzz/corpus/$name" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -artifact_prefix="$findings/$name-" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz.sh: $name found a failure (input in $findings/); make it a regression test" >&2
    exit 1
  fi
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  echo "fuzz.sh: $name: ${runs:-?} inputs in ${seconds} s, no finding (corpus: $(ls "$corpus" | wc -l) inputs)"
done
