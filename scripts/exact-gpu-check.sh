#!/usr/bin/env bash
# The exact sum/dot GPU check (issue 17): build, the exact tests, the phase timing (exact_phases.cu),
# reduce-bench --suite exact on the GPU and the CPU, matmul Gram 64 x 64 x 2^24 float ordinary and --exact.
# Usage on the GPU machine: OUT=dir scripts/exact-gpu-check.sh (TALLY_BUILD_DIR: the build directory;
# TALLY_EXACT_PARTS: a subset of "tests phases gpu cpu matmul", default all).
set -uo pipefail
B=${TALLY_BUILD_DIR:-/tmp/b-exact}
O=${OUT:-/tmp/out-exact}
P=" ${TALLY_EXACT_PARTS:-tests phases gpu cpu matmul} "
has() { [[ $P == *" $1 "* ]]; }
mkdir -p "$O"
t0=$(date +%s)
targets="tally_reduce reduce-bench"
has tests && targets+=" reduce_gpu_test reduce_blocks_gpu_test matmul_gpu_test"
has matmul && targets+=" matmul matmul_gpu_test"
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTALLY_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DTALLY_MPI=OFF > "$O/cfg.log" 2>&1 || { tail -30 "$O/cfg.log"; exit 1; }
if has phases; then  # compiled beside the build (one core of sixteen)
  nvcc -arch=sm_90 -O3 -std=c++20 -Ireduce/include -Icommon/include -Xptxas -v -o $B/phases scripts/exact_phases.cu > "$O/phases-build.log" 2>&1 &
fi
ninja -C $B $targets > "$O/build.log" 2>&1 || { grep -E "error" "$O/build.log" | head -30; tail -20 "$O/build.log"; exit 1; }
wait
echo "build $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
if has tests; then
  for t in "reduce_gpu_test [exact]" "reduce_blocks_gpu_test [exact]" "matmul_gpu_test [exact]"; do
    set -- $t
    exe=$(find $B/tests -name "$1" -type f | head -1)
    [[ -z $exe ]] && continue
    timeout 150 "$exe" "$2" > "$O/test_$1.log" 2>&1; echo "test $1 $2: rc=$? $(tail -2 "$O/test_$1.log" | tr '\n' ' ')"
  done
fi
has phases && { [[ -x $B/phases ]] && timeout 120 $B/phases 2>&1 | tail -80 || tail -5 "$O/phases-build.log"; }
if has gpu; then
  timeout 150 $B/reduce/bench/reduce-bench --backend cuda --suite exact --out "$O/exact-gpu.h5" > "$O/bench-gpu.log" 2>&1; echo "bench gpu rc=$?"
  grep -E "^\| exact|MISMATCH" "$O/bench-gpu.log"
  grep -E "exact .*(2\^(16|20|24|28))" "$O/bench-gpu.log" | grep -vE "^\| exact" | head -40
fi
if has cpu; then
  OMP_PROC_BIND=close timeout 100 $B/reduce/bench/reduce-bench --backend cpu --suite exact --out "$O/exact-cpu.h5" > "$O/bench-cpu.log" 2>&1; echo "bench cpu rc=$?"
  grep -E "exact sum 2\^2[46]" "$O/bench-cpu.log"
fi
if has matmul; then
  for mode in "" "--exact"; do
    timeout 100 $B/apps/matmul/matmul --backend cuda --precision float --m 64 --n 64 --k 16777216 --level tiled,gang --no-eigen --repeats 3 --warmup 1 $mode --out "$O/gram$mode.h5" 2>&1 | tail -3
  done
fi
echo "total $(( $(date +%s) - t0 )) s"
