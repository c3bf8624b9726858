# Sourced by the scripts: the repository root, the build directory and a CUDA toolkit on PATH.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TALLY_BUILD_DIR:-$root/build/default}
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
jobs=$(nproc 2>/dev/null || echo 2)

# generator_args DIR: sets the array `generator` for configuring DIR: Ninja when there is one, else
# Unix Makefiles; nothing when DIR is already configured (its generator is fixed) or CMAKE_GENERATOR
# names one. Explicit, so that it also overrides a preset's Ninja.
generator_args() {
  generator=()
  [[ -f $1/CMakeCache.txt || -n ${CMAKE_GENERATOR:-} ]] && return 0
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); else generator=(-G "Unix Makefiles"); fi
}

# configure_and_build [extra cmake args...]: configure once (again when args change), then build.
configure_and_build() {
  generator_args "$build"
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; echo "configure failed" >&2; return 1; }
  grep -E "^-- tally:" "$build.configure.log" || true
  cmake --build "$build" -j "$jobs"
}
