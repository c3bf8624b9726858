#!/usr/bin/env bash
# The GPU check, for an NVIDIA H100/H200 machine (no network needed). First the README's two commands
# exactly as a user runs them, each a row of the table (a failing one fails the check):
#   scripts/run.sh    set up, build build/default, every app on its default problem, reduce-bench --quick
#   scripts/test.sh   set up, build, the whole test suite (ctest, pytest)
# then, in the build folder those built (Release, the CUDA backend for sm_90; checked):
#   GPU tests       ctest -L gpu, failing if any GPU test was skipped
#   ranks (NCCL)    ctest -L ranks with device buffers through NCCL, also where the ranks share one GPU
#   memcheck        compute-sanitizer over the apps on small problems and a fast subset of GPU tests
#                   (racecheck and synccheck over the blocked Chebyshev kernel)
#   python          the module's GPU tests (PyTorch, CuPy; a skip fails) and scripts/python_bench.py
#   benchmarks      each app's and reduce-bench's --bench on the GPU (and across ranks on several GPUs)
# Logs and results go to $OUT (default build/gpu-check): summary.txt (the table, printed last),
# readme.log, ctest.log, ranks.log, memcheck.log, bench.log, python.log and results.tar.gz.
#
# Stages: run test (the README's two commands) gpu ranks memcheck python bench, all by default, in
# that order; name some to run only those (scripts/gpu-check.sh run, then test, then gpu ranks ...).
# The README's commands come first on a fresh tree: the GPU stages use the build they make. Each stage's
# rows are kept in build/gpu-check-state for this tree (HEAD, its uncommitted changes and the GPU):
# the table shows every stage, those of earlier runs of the same tree marked so, and a check passes
# (exit 0) only once every stage has run for this tree and none failed; stages still to run make it
# exit 4. A change to the tree starts the record afresh, so the README's commands run first again.
#
# Narrow a stage for a quick iteration (a narrowed stage's rows are shown, never kept):
#   TALLY_GPU_TESTS="reduce"                     ctest -R regex for the GPU tests (default: all; "none" skips)
#   TALLY_GPU_BENCH="reduce heat2d matmul mcpi"  benchmarks to run ("none" skips)
#   TALLY_BENCH_ARGS_<name>="..."                extra arguments for one benchmark (e.g. reduce: --suite exact)
#   TALLY_GPU_MEMCHECK="heat2d matmul"           memcheck runs whose label starts with one of these
#                                                (default: all; "none" skips)
#   TALLY_MEMCHECK_TIMEOUT=300                   seconds per memcheck run
#   TALLY_GPU_RANKS=2                            multi-GPU mode: the benchmarks again under `mpiexec -n 2`
#                                                (default: the GPU count when it is 2 or more, else off)
set -uo pipefail
# NVLink multicast stays off in every multi-GPU run started from here (it can take the host's shared
# GPUs out of service for days); the launchers pass these to every rank.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# The rank runtime's setting that sends device buffers between ranks through NCCL, also when ranks
# share one GPU: NCCL then takes each rank for a host of its own (a distinct NCCL_HOSTID) and connects
# them through sockets on the loopback interface.
nccl_transport=(TALLY_RANK_TRANSPORT=nccl NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1)
source "$(dirname "$0")/common.sh"
stages_all=(run test gpu ranks memcheck python bench)
selected=("$@")
((${#selected[@]})) || selected=("${stages_all[@]}")
for st in "${selected[@]}"; do
  [[ " ${stages_all[*]} " == *" $st "* ]] || { echo "gpu-check: no stage '$st' (stages: ${stages_all[*]})" >&2; exit 2; }
done
want() { [[ " ${selected[*]} " == *" $1 "* ]]; }
# The record of this tree's stages: HEAD, a hash of its uncommitted changes to tracked files, the GPU.
state=$root/build/gpu-check-state
key="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo no-git) $(git -C "$root" diff HEAD 2>/dev/null | sha1sum | cut -c1-12) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
if [[ ! -f $state/key || $(cat "$state/key") != "$key" ]]; then
  rm -rf "$state" && mkdir -p "$state" && echo "$key" >"$state/key"
fi
declare -A stage_rows  # stage -> this run's rows ("name|status" lines)
stage_row() { stage_rows[$1]+="$2|$3"$'\n'; }
# keep STAGE NARROWING: this run's rows of STAGE into the record, unless a setting narrowed the stage.
keep() { [[ -n $2 ]] || printf '%s' "${stage_rows[$1]}" >"$state/$1.rows"; }
out=${OUT:-$root/build/gpu-check}
mkdir -p "$out"
results=$(mktemp -d)
summary="$out/summary.txt"
: >"$summary"
check_failed=0
row() {  # row NAME STATUS: one line of the table; a status starting FAILED fails the check
  printf '%-28s %s\n' "$1" "$2" >>"$summary"
  [[ $2 != FAILED* ]] || check_failed=1
}
seconds_since() { echo "$(($(date +%s) - $1)) s"; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv; nvcc --version | tail -2; cmake --version | head -1; } >"$results/device.txt" 2>&1

# ---- the README's commands ------------------------------------------------------------------------
: >"$out/readme.log"
for st in run test; do
  want $st || continue
  cmd=scripts/$st.sh t0=$(date +%s)
  echo "==== $cmd" >>"$out/readme.log"
  if (cd "$root" && "$cmd") >>"$out/readme.log" 2>&1; then
    stage_row $st "$cmd" "ok ($(seconds_since "$t0"))"
  else
    stage_row $st "$cmd" "FAILED: exit $? (see readme.log)"
  fi
  keep $st ""
done

# ---- the build they made: the CUDA backend for sm_90 ---------------------------------------------
# The GPU stages reuse it instead of configuring a build of their own.
build_status="ok: $build"
if [[ ! -f $build/CMakeCache.txt ]]; then
  build_status="FAILED: no build in $build (scripts/run.sh and scripts/test.sh build it)"
elif ! grep -qE "^CMAKE_CUDA_COMPILER:[A-Z]*=.*nvcc" "$build/CMakeCache.txt"; then
  build_status="FAILED: $build has no CUDA backend (no CUDA compiler in its cache; a toolkit on PATH or in /usr/local/cuda?)"
elif ! grep -rqs --include=build.ninja --include=flags.make -e "sm_90" "$build"; then
  build_status="FAILED: $build does not compile for sm_90 (CMAKE_CUDA_ARCHITECTURES set elsewhere?)"
elif [[ ! -x $build/tests/reduce/reduce_gpu_test ]]; then
  build_status="FAILED: $build has no GPU tests (the build did not finish: see readme.log)"
fi

# ---- GPU tests ------------------------------------------------------------------------------------
tests=${TALLY_GPU_TESTS:-}
: >"$out/ctest.log"
if want gpu && [[ $build_status == ok* && $tests != none ]]; then
  args=(--test-dir "$build" --output-on-failure --no-tests=error -j 4 -L gpu)
  [[ -n $tests ]] && args+=(-R "$tests")
  ctest "${args[@]}" >"$out/ctest.log" 2>&1
  rc=$?
  passed=$(grep -cE "Test +#[0-9]+: .* Passed" "$out/ctest.log")
  skipped=$(grep -cE "\*\*\*Skipped|Not Run" "$out/ctest.log")
  failed=$(grep -cE "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" "$out/ctest.log")
  test_status="$passed passed, $failed failed, $skipped skipped"
  # On a GPU machine a skipped GPU test means a missing GPU or framework: a failure.
  if ((rc != 0 || skipped > 0)); then
    test_status="FAILED: $test_status"
    grep -E "\*\*\*(Failed|Skipped|Exception|Timeout)|Not Run" "$out/ctest.log" | head -20
  fi
  stage_row gpu "GPU tests" "$test_status"
  keep gpu "$tests"
fi

# ---- the rank tests through NCCL ------------------------------------------------------------------
# Every rank test (2 and 3 ranks on this machine's GPUs, one GPU shared if that is all there is) with
# the device transport set to NCCL; rank_gpu_test names the transport it got, which must be NCCL.
: >"$out/ranks.log"
if want ranks && [[ $build_status == ok* && $tests != none ]]; then
  env "${nccl_transport[@]}" ctest --test-dir "$build" --output-on-failure --no-tests=error -V -L ranks \
    >"$out/ranks.log" 2>&1
  rc=$?
  passed=$(grep -cE "Test +#[0-9]+: .* Passed" "$out/ranks.log")
  failed=$(grep -cE "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout|\*\*\*Skipped|Not Run" "$out/ranks.log")
  nccl=$(grep -cE "^[0-9: ]*[23] ranks, device transport: nccl" "$out/ranks.log")
  ranks_status="$passed passed, $failed failed or skipped; NCCL in $nccl of the 2 multi-rank rank_gpu_test runs"
  if ((rc != 0 || failed > 0 || nccl < 2)); then
    ranks_status="FAILED: $ranks_status"
    grep -E "\*\*\*(Failed|Skipped|Exception|Timeout)|Not Run|device transport" "$out/ranks.log" | head -20
  fi
  stage_row ranks "ranks through NCCL" "$ranks_status"
  keep ranks "$tests"
fi

# ---- compute-sanitizer memcheck -------------------------------------------------------------------
# The apps on small problems and a fast subset of the GPU tests under memcheck: 0 errors, kept so.
# Left out: the tests that provoke CUDA API errors on purpose (bad launches, allocations larger than
# the device), which memcheck counts as errors, and the 2^31-element inputs (minutes under memcheck).
memcheck_select=${TALLY_GPU_MEMCHECK:-}
sanitizer=$(command -v compute-sanitizer 2>/dev/null || true)
[[ -z $sanitizer && -x /usr/local/cuda/bin/compute-sanitizer ]] && sanitizer=/usr/local/cuda/bin/compute-sanitizer
: >"$out/memcheck.log"
if want memcheck && [[ $build_status == ok* && $memcheck_select != none ]]; then
  if [[ -z $sanitizer ]]; then
    memcheck_status="FAILED: no compute-sanitizer (PATH, /usr/local/cuda/bin)"
  else
    t=$build/tests
    mc=$results/memcheck
    mkdir -p "$mc"
    # label|executable|arguments[|tool], split on spaces; tool: memcheck (the default), racecheck
    # (shared-memory hazards) or synccheck (barriers); '@' stands for a space inside one argument (a Catch2
    # test name, a --set line); in a Catch2 test spec ',' separates alternatives and '*' (at either
    # end) is a wildcard.
    memcheck_runs=(
      "heat2d-registers|$build/apps/heat2d/heat2d|--backend cuda --cuda-kernel registers --nx 65 --ny 47 --max-iter 300 --check-every 7 --validate --quiet --out $mc/heat2d-r.h5"
      "heat2d-persistent|$build/apps/heat2d/heat2d|--backend cuda --nx 300 --ny 200 --tol 1e-4 --max-iter 300 --check-every 3 --validate --quiet --out $mc/heat2d-p.h5"
      "heat2d-async|$build/apps/heat2d/heat2d|--backend cuda --cuda-kernel async --precision float --nx 97 --max-iter 200 --validate --quiet --out $mc/heat2d-a.h5"
      "heat2d-transient|$build/apps/heat2d/heat2d|--backend cuda --mode transient --nx 33 --t-end 0.01 --quiet --out $mc/heat2d-t.h5"
      "matmul-double|$build/apps/matmul/matmul|--backend cuda --precision double --m 130 --n 67 --k 257 --repeats 1 --warmup 0 --no-eigen --quiet --out $mc/matmul-d.h5"
      "matmul-float|$build/apps/matmul/matmul|--backend cuda --precision float --m 256 --n 128 --k 512 --repeats 1 --warmup 0 --no-eigen --quiet --out $mc/matmul-f.h5"
      "heat2d-implicit-cg|$build/apps/heat2d/heat2d|--deck $root/data/tealeaf/tea_bm_1.in --set x_cells@37 --set y_cells@29 --set end_step@2 --backend cuda --quiet --out $mc/tea-cg.h5"
      "heat2d-implicit-cheby|$build/apps/heat2d/heat2d|--deck $root/data/tealeaf/tea_bm_1.in --set x_cells@37 --set y_cells@29 --set end_step@2 --solver cheby --preconditioner jac_diag --backend cuda --quiet --out $mc/tea-cheby.h5"
      "heat2d-implicit-ppcg|$build/apps/heat2d/heat2d|--deck $root/data/tealeaf/tea_bm_1.in --set x_cells@37 --set y_cells@29 --set end_step@2 --solver ppcg --preconditioner jac_block --backend cuda --quiet --out $mc/tea-ppcg.h5"
      "heat2d-implicit-cheby-blocked-racecheck|$build/apps/heat2d/heat2d|--deck $root/data/tealeaf/tea_bm_1.in --set x_cells@150 --set y_cells@77 --set end_step@1 --solver cheby --backend cuda --quiet --out $mc/tea-race.h5|racecheck"
      "heat2d-implicit-cheby-blocked-synccheck|$build/apps/heat2d/heat2d|--deck $root/data/tealeaf/tea_bm_1.in --set x_cells@150 --set y_cells@77 --set end_step@1 --solver cheby --preconditioner jac_diag --backend cuda --quiet --out $mc/tea-sync.h5|synccheck"
      "matmul-ozaki|$build/apps/matmul/matmul|--backend cuda --precision double --level ozaki --m 130 --n 67 --k 257 --repeats 1 --warmup 0 --no-eigen --quiet --out $mc/matmul-o.h5"
      "mcpi-device|$build/apps/mcpi/mcpi|--backend cuda --n 2^22 --batch 2^20 --quiet --out $mc/mcpi-d.h5"
      "mcpi-host-sobol|$build/apps/mcpi/mcpi|--backend cuda --api host --generator scrambled-sobol --n 2^21 --batch 2^19 --quiet --out $mc/mcpi-h.h5"
      "reduce-tests|$t/reduce/reduce_gpu_test|[nan],[stream],[workspace]"
      "blocks-tests|$t/reduce/blocks/reduce_blocks_gpu_test|device@blocks@on@float*,production@kernels@and@CUB@propagate@NaN*"
      "heat2d-tests|$t/apps/heat2d/heat2d_gpu_test|cuda@stops@at@the@same@sweep*"
      "mcpi-tests|$t/apps/mcpi/mcpi_gpu_test|mcpi@GPU@every@fused@Philox@kernel*"
    )
    mc_runs=0 mc_errors=0 mc_failed=()
    for entry in "${memcheck_runs[@]}"; do
      IFS='|' read -r label exe args tool <<<"$entry"
      if [[ -n $memcheck_select ]]; then
        keep=0
        for want in $memcheck_select; do [[ $label == "$want"* ]] && keep=1; done
        ((keep)) || continue
      fi
      read -r -a argv <<<"$args"
      argv=("${argv[@]//@/ }")
      echo "==== $label: $exe ${argv[*]}" >>"$out/memcheck.log"
      if [[ ! -x $exe ]]; then
        echo "no executable" >>"$out/memcheck.log"; mc_failed+=("$label: no executable"); continue
      fi
      mc_runs=$((mc_runs + 1))
      timeout "${TALLY_MEMCHECK_TIMEOUT:-300}" "$sanitizer" --tool "${tool:-memcheck}" --error-exitcode 86 --print-limit 20 \
        "$exe" "${argv[@]}" >"$mc/$label.log" 2>&1
      rc=$?
      cat "$mc/$label.log" >>"$out/memcheck.log"
      # Its last word: "========= ERROR SUMMARY: N errors" (or "N error").
      n=$(sed -n 's/^========= ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$mc/$label.log" | tail -n1)
      # racecheck's: "========= RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
      [[ -z $n ]] && n=$(sed -n 's/^========= RACECHECK SUMMARY: .*(\([0-9][0-9]*\) error.*/\1/p' "$mc/$label.log" | tail -n1)
      if [[ -z $n ]]; then
        mc_failed+=("$label: $( ((rc == 124)) && echo "timed out" || echo "no summary, exit $rc")")
      elif ((n > 0)); then
        mc_errors=$((mc_errors + n)); mc_failed+=("$label: $n errors")
      elif ((rc != 0)); then
        mc_failed+=("$label: exit $rc")
      fi
    done
    memcheck_status="$mc_errors errors in $mc_runs runs"
    if ((${#mc_failed[@]})); then
      memcheck_status="FAILED: $memcheck_status ($(IFS=';'; echo "${mc_failed[*]}"))"
      grep -E "^(====|========= (Invalid|Program hit|ERROR SUMMARY))" "$out/memcheck.log" | head -40
    fi
  fi
  stage_row memcheck "memcheck (compute-sanitizer)" "$memcheck_status"
  keep memcheck "$memcheck_select"
fi

# ---- Python: the module's GPU tests (PyTorch, CuPy) -------------------------------------------------
: >"$out/python.log"
if want python; then
  python_status="not built (no nanobind or Python headers)"
  if [[ $build_status == ok* && -d $build/python/tally && $tests != none ]]; then
    TALLY_BUILD_DIR=$build python3 -m pytest -q -rs "$root/tests/python/test_python_reduce_gpu.py" \
      "$root/tests/python/test_python_reducers_gpu.py" >"$out/python.log" 2>&1
    rc=$?
    line=$(grep -E "[0-9]+ (passed|failed|skipped)" "$out/python.log" | tail -1)
    python_status="${line:-no summary (exit $rc)}"
    # Any skip on a GPU machine means a framework or the GPU was missing: as for ctest, a failure.
    if ((rc != 0)) || [[ -z $line || $line == *skipped* ]]; then python_status="FAILED: $python_status"; fi
  fi
  stage_row python "python (GPU tests)" "$python_status"
  keep python "$tests"
fi

# ---- benchmarks: each app's and reduce-bench's --bench, the Python table; across ranks on several GPUs
bench_list=${TALLY_GPU_BENCH:-reduce heat2d matmul mcpi}
: >"$out/bench.log"
if want bench && [[ $build_status == ok* && $bench_list != none ]]; then
  for b in $bench_list; do
    case $b in
      reduce) exe="$build/reduce/bench/reduce-bench" ;;
      *) exe="$build/apps/$b/$b" ;;
    esac
    [[ -x $exe ]] || { stage_row bench "bench $b" "FAILED: no executable"; continue; }
    extra_var="TALLY_BENCH_ARGS_$b"
    echo "==== $b" >>"$out/bench.log"
    if "$exe" --bench --backend cuda --out "$results/$b-bench.h5" ${!extra_var:-} >>"$out/bench.log" 2>&1; then
      stage_row bench "bench $b" "ok"
    else
      stage_row bench "bench $b" "FAILED (exit $?)"
    fi
  done
  if [[ -d $build/python/tally ]]; then
    echo "==== python" >>"$out/bench.log"
    if TALLY_BUILD_DIR=$build python3 "$root/scripts/python_bench.py" --json "$results/python_bench.json" >>"$out/bench.log" 2>&1; then
      stage_row bench "bench python" "ok"
    else
      stage_row bench "bench python" "FAILED (exit $?, see bench.log)"
    fi
  fi
  # Multi-GPU mode: the benchmarks again across ranks.
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")
  ranks=${TALLY_GPU_RANKS:-$((gpus >= 2 ? gpus : 0))}
  if ((ranks >= 2)); then
    launcher=(mpiexec -n "$ranks" --oversubscribe)
    [[ $(id -u) == 0 ]] && launcher+=(--allow-run-as-root)
    launcher+=(-x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST)
    echo "==== multi-GPU mode: $ranks ranks on $gpus GPU(s)" >>"$out/bench.log"
    for b in $bench_list; do
      case $b in
        reduce) exe="$build/reduce/bench/reduce-bench"; args=(--suite ranks) ;;
        *) exe="$build/apps/$b/$b"; args=(--bench) ;;
      esac
      [[ -x $exe ]] || continue
      extra_var="TALLY_RANK_BENCH_ARGS_$b"
      echo "==== $b on $ranks ranks" >>"$out/bench.log"
      if "${launcher[@]}" "$exe" "${args[@]}" --backend cuda --out "$results/$b-ranks.h5" ${!extra_var:-} >>"$out/bench.log" 2>&1; then
        stage_row bench "bench $b x$ranks ranks" "ok"
      else
        stage_row bench "bench $b x$ranks ranks" "FAILED (exit $?)"
      fi
    done
  fi
  keep bench "${TALLY_GPU_BENCH:-}${TALLY_GPU_RANKS:-}$(compgen -v TALLY_BENCH_ARGS_; compgen -v TALLY_RANK_BENCH_ARGS_)"
fi
(cd "$results" && tar czf "$out/results.tar.gz" .) 2>/dev/null

# ---- table: every stage, this run's rows or the record's for this tree ----------------------------
{
  echo
  echo "== tally GPU check: $(head -2 "$results/device.txt" | tail -1)"
  echo "== tree: $key"
} >>"$summary"
rm -rf "$results"
incomplete=0
for st in "${stages_all[@]}"; do
  if [[ -n ${stage_rows[$st]:-} ]]; then
    rows=${stage_rows[$st]} mark=""
  elif [[ -f $state/$st.rows ]]; then
    rows=$(cat "$state/$st.rows") mark=" [earlier run of this tree]"
  else
    rows="$st|NOT RUN for this tree (scripts/gpu-check.sh $st)" mark=""
    incomplete=1
  fi
  while IFS='|' read -r name status; do
    [[ -n $name ]] && row "$name" "$status$mark"
  done <<<"$rows"
  [[ $st == test ]] && row "build (for the GPU stages)" "$build_status"
done
# Each benchmark ends its output with lines starting "| " (its own short table): repeat them here.
grep -E "^\| " "$out/bench.log" | tail -60 >>"$summary"
cat "$summary"
((check_failed)) && exit 1
((incomplete)) && exit 4
exit 0
