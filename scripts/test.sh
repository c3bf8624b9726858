#!/usr/bin/env bash
# The test command: set up, configure, build, run the whole test suite (ctest, then the scripts' pytest).
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$root/scripts/setup.sh"
mkdir -p "$(dirname "$build")"
configure_and_build
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs"
if [[ -d "$root/scripts/tests" ]]; then
  TALLY_BUILD_DIR="$build" python3 -m pytest -q "$root/scripts/tests"
fi
