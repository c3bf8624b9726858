#!/usr/bin/env bash
# Regenerates heat2d_expected.csv with the CPU backend: heat2d_expected_gen.sh <heat2d executable>.
# Each row is a problem (the parameters given to heat2d) and what it gave: status, sweeps, final
# residual, analytic errors (empty where no analytic solution applies). The tests re-run every row
# on the CPU backend (tests/apps/heat2d/test_heat2d.cpp) and on the GPU (test_heat2d_gpu.cpp).
set -euo pipefail
exe=${1:?usage: $0 path/to/heat2d}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "name,mode,nx,ny,precision,tol,max_iter,check_every,alpha,dt,t_end,bc_top,bc_bottom,bc_left,bc_right,init,status,iterations,final_residual,analytic_max,analytic_l2"
# name mode nx ny precision tol max_iter check_every alpha dt t_end top bottom left right init
while read -r name mode nx ny prec tol maxit ce alpha dt tend top bottom left right init; do
  [[ -z $name || $name == \#* ]] && continue
  json=$("$exe" --backend cpu --json --out "$tmp/x.h5" --mode "$mode" --nx "$nx" --ny "$ny" --precision "$prec" \
         --tol "$tol" --max-iter "$maxit" --check-every "$ce" --alpha "$alpha" --dt "$dt" --t-end "$tend" \
         --bc-top "$top" --bc-bottom "$bottom" --bc-left "$left" --bc-right "$right" --init "$init" || true)
  python3 - "$json" <<PY
import json, sys
j = json.loads(sys.argv[1])
f = lambda k: repr(j[k]) if k in j and j[k] is not None else ""
print(",".join(["$name","$mode","$nx","$ny","$prec","$tol","$maxit","$ce","$alpha","$dt","$tend","$top","$bottom","$left","$right","$init",
                j["status"], str(j["iterations"]), f("final_residual"), f("analytic_max"), f("analytic_l2")]))
PY
done <<'ROWS'
steady_sin_33_double      steady    33 33 double 1e-10 100000 1  1 0 0     sin 0 0 0     0
steady_sin_65_double      steady    65 65 double 1e-10 100000 1  1 0 0     sin 0 0 0     0
steady_sin_48x40_ce5      steady    48 40 double 1e-9  100000 5  1 0 0     sin 0 0 0     0.5
steady_sin_33_float       steady    33 33 float  1e-5  100000 1  1 0 0     sin 0 0 0     0
steady_edges_40x50        steady    40 50 double 1e-8  100000 3  1 0 0     1   0 0.5 -0.25 0.1
steady_max_iter_33        steady    33 33 double 1e-12 500    1  1 0 0     sin 0 0 0     0
transient_sin_33_double   transient 33 33 double 1e-12 100000 10 1 0 0.05  0   0 0 0     sin
transient_sin_65_double   transient 65 65 double 1e-12 100000 10 1 0 0.05  0   0 0 0     sin
transient_sin_33_float    transient 33 33 float  1e-7  100000 1  2 0 0.02  0   0 0 0     sin
transient_steady_33       transient 33 33 double 1e-9  200000 10 1 0 0     sin 0 sin 0   0
ROWS
