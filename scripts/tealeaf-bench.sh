#!/usr/bin/env bash
# TeaLeaf's CUDA model and heat2d's implicit mode on the same decks and the same GPU, one table.
#
#   TEALEAF_DIR=/path/to/TeaLeaf scripts/tealeaf-bench.sh [deck ...]
#
# TEALEAF_DIR is a checkout of UoB-HPC/TeaLeaf (none of its source enters this tree); its CUDA model
# is built with its own CMake (MODEL=cuda, sm_90) in $TEALEAF_BUILD (default $TEALEAF_DIR/build-cuda).
# Decks default to data/tealeaf/tea_bm_5.in; solvers to "cg cheby ppcg" (TEALEAF_SOLVERS); a run of
# either program past TEALEAF_TIMEOUT seconds (default 240) is reported as such. tally runs from
# $TALLY_BUILD_DIR (default build/default). Logs go to $OUT (default build/tealeaf-bench).
set -uo pipefail
source "$(dirname "$0")/common.sh"
: "${TEALEAF_DIR:?set TEALEAF_DIR to a TeaLeaf checkout (UoB-HPC/TeaLeaf)}"
# Absolute: TeaLeaf runs from a folder of its own.
TEALEAF_DIR=$(cd "$TEALEAF_DIR" && pwd) || { echo "tealeaf-bench: no folder $TEALEAF_DIR" >&2; exit 2; }
tl_build=${TEALEAF_BUILD:-$TEALEAF_DIR/build-cuda}
out=${OUT:-$root/build/tealeaf-bench}
solvers=${TEALEAF_SOLVERS:-cg cheby ppcg}
limit=${TEALEAF_TIMEOUT:-240}
heat2d=$build/apps/heat2d/heat2d
decks=("$@")
((${#decks[@]})) || decks=("$root/data/tealeaf/tea_bm_5.in")
mkdir -p "$out"
[[ -x $heat2d ]] || { echo "tealeaf-bench: no $heat2d (build tally first)" >&2; exit 2; }

if [[ ! -x $tl_build/cuda-tealeaf ]]; then
  cmake -S "$TEALEAF_DIR" -B "$tl_build" -DMODEL=cuda -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
    -DCUDA_ARCH=sm_90 >"$out/tealeaf-build.log" 2>&1 && cmake --build "$tl_build" -j "$jobs" >>"$out/tealeaf-build.log" 2>&1 ||
    { tail -20 "$out/tealeaf-build.log"; echo "tealeaf-bench: TeaLeaf's CUDA model did not build" >&2; exit 1; }
fi
tealeaf=$tl_build/cuda-tealeaf
rev=${TEALEAF_REV:-$(git -C "$TEALEAF_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)}

json_field() {  # json_field FILE EXPR: a value of heat2d's --json line, by a Python expression on `j`
  python3 -c "import json,sys; j=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print($2)" "$1" 2>/dev/null || echo nan
}

rows=()
for deck in "${decks[@]}"; do
  name=$(basename "$deck" .in)
  for s in $solvers; do
    # TeaLeaf: in a folder of its own (it writes tea.out beside it); iterations summed over the steps.
    d=$out/tealeaf-$name-$s
    mkdir -p "$d"
    # TeaLeaf's kernels are chosen in the deck, and its CUDA model faults at the first step of a
    # deck that names none: its own decks say use_c_kernels, which tally accepts and ignores.
    if grep -qE "^[[:space:]]*(tl_)?use_(c|fortran)_kernels" "$deck"; then cp "$deck" "$d/tea.in"
    else sed 's/^\([[:space:]]*\)\*endtea/\1use_c_kernels\n&/' "$deck" >"$d/tea.in"; fi
    cp "$TEALEAF_DIR/tea.problems" "$d/" 2>/dev/null
    t0=$(date +%s.%N)
    (cd "$d" && timeout "$limit" "$tealeaf" --file tea.in --problems tea.problems --solver "$s" >stdout.log 2>&1)
    rc=$?
    t1=$(date +%s.%N)
    if ((rc == 0)); then
      tl_its=$(grep -E "^ *(CG|Cheby|PPCG|Jacobi):" "$d/stdout.log" | awk '{s += $2} END {print s + 0}')
      tl_wall=$(grep -E "Wallclock:" "$d/stdout.log" | tail -1 | awk '{print $2}' | tr -d s)
      tl_temp=$(grep -E "^ *Actual" "$d/stdout.log" | tail -1 | awk '{print $2}')
      tl_ok=$(grep -q "This run PASSED" "$d/stdout.log" && echo PASSED || echo FAILED)
    else
      tl_its=-; tl_wall=$(python3 -c "print(f'>{$t1 - $t0:.0f}')"); tl_temp=-; tl_ok="exit $rc"
    fi
    # tally: the same deck, the same solver, reproducible (the default) and not.
    for rep in on off; do
      j=$out/tally-$name-$s-$rep.json
      timeout "$limit" "$heat2d" --deck "$deck" --solver "$s" --reproducible "$rep" --backend cuda --json --quiet \
        --out "$out/tally-$name-$s-$rep.h5" >"$j" 2>"$out/tally-$name-$s-$rep.err"
      trc=$?
      if ((trc == 0)); then
        its=$(json_field "$j" "j['iterations']['total']")
        solve=$(json_field "$j" "j['timings']['solve_s']")
        temp=$(json_field "$j" "'%.15e' % j['summary']['temperature']")
      else
        its=-; solve=-; temp="exit $trc"
      fi
      rows+=("$(python3 - "$name" "$s" "$rep" "$tl_its" "$tl_wall" "$tl_ok" "$its" "$solve" "$temp" <<'EOF'
import sys
name, s, rep, tl_its, tl_wall, tl_ok, its, solve, temp = sys.argv[1:]
def f(x):
    try: return float(x.lstrip('>'))
    except ValueError: return None
a, b, ia, ib = f(tl_wall), f(solve), f(tl_its), f(its)
per_tl = f"{1e3 * a / ia:.3f}" if a and ia else "-"
per_t = f"{1e3 * b / ib:.3f}" if b and ib else "-"
ratio = f"{a / b:.2f}x" if a and b else "-"
print(f"| {name} | {s} | {rep} | {tl_its} | {tl_wall} | {per_tl} | {tl_ok} | {its} | {solve} | {per_t} | {ratio} | {temp} |")
EOF
)")
    done
  done
done
echo
echo "TeaLeaf $rev (CUDA model) against heat2d --deck; TeaLeaf's time is its wall clock over the steps, tally's its solve time"
echo "| deck | solver | reproducible | TeaLeaf its | TeaLeaf s | ms/it | TeaLeaf check | tally its | tally s | ms/it | speed-up | tally temperature |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
