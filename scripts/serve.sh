#!/usr/bin/env bash
# Sets everything up, builds, and starts the server on the bundled demo model. Extra arguments go to
# `dcuserve serve` (for example --port 8000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh cpu
exec build/cpu/dcuserve serve "$@"
