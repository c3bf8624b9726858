#!/usr/bin/env bash
# The run command: set up, configure, build, then run every app on its default problem (GPU when
# usable, CPU otherwise), writing results/<app>.h5 and printing one summary line per app.
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$root/scripts/setup.sh"
mkdir -p "$(dirname "$build")"
configure_and_build >"$build.build.log" 2>&1 || { cat "$build.build.log"; exit 1; }
results=${TALLY_RESULTS:-$root/results}
mkdir -p "$results"
status=0
for app in heat2d matmul mcpi; do
  exe="$build/apps/$app/$app"
  [[ -x $exe ]] || continue
  "$exe" --out "$results/$app.h5" || status=$?  # progress only on a terminal; the summary line always
done
"$build/reduce/bench/reduce-bench" --quick --out "$results/reduce-bench.h5" || status=$?
exit $status
