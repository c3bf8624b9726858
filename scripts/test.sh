#!/usr/bin/env bash
# The test command: set up, configure, build, run the whole test suite: ctest (the C++ tests), then
# pytest over tests/python (the Python module's tests and the scripts'). Without the Python module
# (nanobind missing when the build was configured) its tests report skipped, said once at the end.
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$root/scripts/setup.sh"
mkdir -p "$(dirname "$build")"
configure_and_build
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs"
TALLY_BUILD_DIR="$build" python3 -m pytest -q "$root/tests/python"
