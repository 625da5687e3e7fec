#!/usr/bin/env bash
# Sets up, builds and starts the server on the bundled demo model: the packages building needs
# (scripts/setup.sh serve), the dcuserve executable alone (not the tests), then `dcuserve serve` with
# the extra arguments (for example --port 8001; --help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "serve.sh: checking the packages building needs (scripts/setup.sh serve)..."
scripts/setup.sh serve
echo "serve.sh: building dcuserve (the first build takes a few minutes)..."
scripts/build.sh cpu dcuserve
echo "serve.sh: starting build/cpu/dcuserve serve $*"
exec build/cpu/dcuserve serve "$@"
