#!/usr/bin/env bash
# The GPU check, for an NVIDIA H100/H200 machine (Ubuntu 24.04, CUDA 13, cmake 4, g++ 13, Eigen,
# HDF5, CLI11, Catch2 3 installed; no network): configure (Release, sm_90), build, run the whole
# test suite with the GPU tests (failing if any GPU test was skipped), then the benchmarks.
# Logs and results go to $OUT (default build/gpu-check): at most 8 files, the rest in results.tar.gz.
# A short table is printed last.
#
# Narrow it for a quick iteration:
#   TALLY_GPU_TARGETS="tally_reduce reduce_gpu_test"   build only these targets (default: all)
#   TALLY_GPU_TESTS="reduce"                            ctest -R regex (default: all; "none" skips)
#   TALLY_GPU_BENCH="reduce heat2d matmul mcpi"         benchmarks to run ("none" skips)
#   TALLY_BENCH_ARGS_<name>="..."                       extra arguments for one benchmark
set -uo pipefail
source "$(dirname "$0")/common.sh"
build=${TALLY_BUILD_DIR:-$root/build/gpu}
out=${OUT:-$root/build/gpu-check}
mkdir -p "$out" "$(dirname "$build")"
results=$(mktemp -d)
summary="$out/summary.txt"
: >"$summary"
row() { printf '%-28s %s\n' "$1" "$2" | tee -a "$summary"; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv; nvcc --version | tail -2; cmake --version | head -1; } >"$out/device.txt" 2>&1

# ---- build ----------------------------------------------------------------------------------------
t0=$(date +%s)
targets=()
for t in ${TALLY_GPU_TARGETS:-}; do targets+=(--target "$t"); done
if cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTALLY_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/build.log" 2>&1 &&
   cmake --build "$build" -j "$jobs" "${targets[@]}" >>"$out/build.log" 2>&1; then
  build_status="ok ($(($(date +%s) - t0)) s)"
else
  build_status="FAILED (see build.log)"
  tail -30 "$out/build.log"
fi

# ---- tests ----------------------------------------------------------------------------------------
tests=${TALLY_GPU_TESTS:-}
test_status="not run"
if [[ $build_status == ok* && $tests != none ]]; then
  args=(--test-dir "$build" --output-on-failure --no-tests=error -j 4)
  [[ -n $tests ]] && args+=(-R "$tests")
  ctest "${args[@]}" >"$out/ctest.log" 2>&1
  rc=$?
  passed=$(grep -cE "Test +#[0-9]+: .* Passed" "$out/ctest.log")
  skipped=$(grep -cE "\*\*\*Skipped|Not Run" "$out/ctest.log")
  failed=$(grep -cE "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" "$out/ctest.log")
  test_status="$passed passed, $failed failed, $skipped skipped"
  if ((rc != 0 || skipped > 0)); then
    test_status="FAILED: $test_status"
    grep -E "\*\*\*(Failed|Skipped|Exception|Timeout)|Not Run" "$out/ctest.log" | head -20
  fi
fi

# ---- benchmarks -----------------------------------------------------------------------------------
bench_list=${TALLY_GPU_BENCH:-reduce heat2d matmul mcpi}
: >"$out/bench.log"
declare -A bench_status
if [[ $build_status == ok* && $bench_list != none ]]; then
  for b in $bench_list; do
    case $b in
      reduce) exe="$build/reduce/bench/reduce-bench" ;;
      *) exe="$build/apps/$b/$b" ;;
    esac
    [[ -x $exe ]] || { bench_status[$b]="no executable"; continue; }
    extra_var="TALLY_BENCH_ARGS_$b"
    echo "==== $b" >>"$out/bench.log"
    if "$exe" --bench --backend cuda --out "$results/$b-bench.h5" ${!extra_var:-} >>"$out/bench.log" 2>&1; then
      bench_status[$b]="ok"
    else
      bench_status[$b]="FAILED (exit $?)"
    fi
  done
fi
(cd "$results" && tar czf "$out/results.tar.gz" .) 2>/dev/null
rm -rf "$results"

# ---- table ----------------------------------------------------------------------------------------
echo
echo "== tally GPU check: $(head -2 "$out/device.txt" | tail -1)"
row "build" "$build_status"
row "tests" "$test_status"
for b in $bench_list; do
  [[ $bench_list == none ]] && break
  row "bench $b" "${bench_status[$b]:-not run}"
done
# Each benchmark ends its output with lines starting "| " (its own short table): repeat them here.
grep -E "^\| " "$out/bench.log" | tail -40
[[ $build_status == ok* && $test_status != FAILED* ]] && [[ ! " ${bench_status[*]:-} " =~ FAILED ]]
