#!/usr/bin/env bash
# Checks what tally's build needs the way the build needs it, and installs only what is missing:
#   tools by command and version: cmake >= 3.25, C and C++20 compilers, ninja (or make: the build
#     then uses CMake's Makefile generator);
#   libraries by what CMake finds (a throw-away project runs the build's find_package calls): OpenMP,
#     Eigen3, HDF5 (C), CLI11, Catch2, and MPI (C++ and mpiexec) for the rank level, with an
#     MPI-enabled HDF5 (h5pcc: libhdf5-openmpi-dev beside libhdf5-dev) for heat2d's parallel output;
#   Python modules by import: h5py numpy matplotlib pytest, and nanobind + scikit_build_core for the
#     Python module (apps/python; TALLY_PYTHON=AUTO builds it when nanobind imports);
#   clang-format, for scripts/format.sh and CI's format check.
# Tools and libraries installed from anywhere (Kitware, pip, conda, Spack, modules) count. What is
# missing is installed through apt-get only where apt-get exists and we are root; otherwise the one
# command to run is printed. Exit status 1 only when something the build needs is missing; MPI,
# parallel HDF5, nanobind and clang-format are wanted, not needed (without MPI the build has one
# rank; without parallel HDF5 multi-rank fields are gathered to rank 0 to be written; without
# nanobind there is no Python module and its tests report skipped). Quiet when everything is present.
# TALLY_SKIP_SETUP=1: do nothing (for environments managed by hand).
set -euo pipefail

if [[ -n ${TALLY_SKIP_SETUP:-} && ${TALLY_SKIP_SETUP} != 0 ]]; then
  exit 0
fi

python=${PYTHON:-python3}
python_needed=(h5py numpy matplotlib pytest)        # the scripts and the tests
python_wanted=(nanobind scikit_build_core)         # the Python module
cmake_min=3.25

need=()       # what is missing and needed, in words
need_pkgs=()  # ... and its Debian packages
want=()       # missing but optional (MPI, parallel HDF5)
want_pkgs=()
notes=()      # what apt cannot fix (a cmake too old)

version_at_least() {  # version_at_least HAVE MIN
  [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1) == "$2" ]]
}
first_command() {  # the first of the arguments that is a command here, or nothing
  local c
  for c in "$@"; do
    if command -v "$c" >/dev/null 2>&1; then echo "$c"; return 0; fi
  done
  return 1
}

# ---- tools: by command and version --------------------------------------------------------------
check_tools() {
  need=() need_pkgs=() notes=()
  if command -v cmake >/dev/null 2>&1; then
    local v
    v=$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p' | head -n1)
    if [[ -z $v ]] || ! version_at_least "$v" "$cmake_min"; then
      notes+=("cmake ${v:-of unknown version} is older than $cmake_min: install a newer one (pip install cmake, Kitware's apt repository, conda, Spack or a module) ahead of it on PATH")
    fi
  else
    need+=("cmake >= $cmake_min") need_pkgs+=(cmake)
  fi
  if ! first_command ninja make >/dev/null; then
    need+=("ninja (or make)") need_pkgs+=(ninja-build)
  fi
  if ! first_command ${CXX:-c++ g++ clang++} >/dev/null || ! first_command ${CC:-cc gcc clang} >/dev/null; then
    need+=("a C and C++20 compiler") need_pkgs+=(g++)
  fi
}

# ---- libraries: by what CMake finds ---------------------------------------------------------------
# The same find_package calls as the build's CMakeLists.txt; the answer is one line of the configure
# output: "-- tally-setup: missing: <names>" (and the compiler id, for OpenMP's package).
probe_log=""
check_libraries() {
  need=() need_pkgs=() want=() want_pkgs=()
  local dir names compiler n
  dir=$(mktemp -d "${TMPDIR:-/tmp}/tally-setup.XXXXXX")
  cat >"$dir/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(tally_setup_probe LANGUAGES C CXX)
set(missing "")
# CMake lists cxx_std_20 for compilers with only a draft of it (GCC 8 and 9 have no std::span):
# ask for GCC >= 10 or Clang >= 14.
if(NOT "cxx_std_20" IN_LIST CMAKE_CXX_COMPILE_FEATURES OR
   (CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 10) OR
   (CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 14))
  list(APPEND missing cxx20)
endif()
find_package(OpenMP COMPONENTS CXX)
if(NOT OpenMP_CXX_FOUND)
  list(APPEND missing OpenMP)
endif()
find_package(Eigen3 3.3 NO_MODULE)
if(NOT Eigen3_FOUND)
  list(APPEND missing Eigen3)
endif()
find_package(HDF5 COMPONENTS C)
if(NOT HDF5_FOUND)
  list(APPEND missing HDF5)
endif()
find_package(CLI11 2.1)
if(NOT CLI11_FOUND)
  list(APPEND missing CLI11)
endif()
find_package(Catch2)
if(NOT Catch2_FOUND)
  list(APPEND missing Catch2)
endif()
find_package(MPI COMPONENTS CXX)
if(NOT MPI_CXX_FOUND OR NOT MPIEXEC_EXECUTABLE)
  list(APPEND missing MPI)
endif()
# The build's TALLY_PARALLEL_HDF5=AUTO takes the MPI-enabled HDF5 through its h5pcc wrapper
# (FindHDF5 with HDF5_PREFER_PARALLEL); an HDF5 that is parallel itself counts too.
find_program(TALLY_SETUP_H5PCC NAMES h5pcc h5pcc.openmpi h5pcc.mpich)
if(NOT HDF5_IS_PARALLEL AND NOT TALLY_SETUP_H5PCC)
  list(APPEND missing PHDF5)
endif()
list(JOIN missing " " missing)
message(STATUS "tally-setup: compiler: ${CMAKE_CXX_COMPILER_ID}")
message(STATUS "tally-setup: missing: ${missing}")
EOF
  local gen=()
  if [[ -z ${CMAKE_GENERATOR:-} ]]; then
    if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); else gen=(-G "Unix Makefiles"); fi
  fi
  if ! cmake -S "$dir" -B "$dir/build" "${gen[@]}" >"$dir/log" 2>&1 ||
     ! grep -q '^-- tally-setup: missing:' "$dir/log"; then
    probe_log=$(tail -n 25 "$dir/log")
    rm -rf "$dir"
    return 1
  fi
  names=$(sed -n 's/^-- tally-setup: missing: *//p' "$dir/log" | head -n1)
  compiler=$(sed -n 's/^-- tally-setup: compiler: *//p' "$dir/log" | head -n1)
  rm -rf "$dir"
  for n in $names; do
    case $n in
      cxx20) need+=("a C++20 compiler (g++ >= 10 or clang++ >= 14)") need_pkgs+=(g++) ;;
      OpenMP)
        need+=("OpenMP (C++)")
        if [[ $compiler == *Clang* ]]; then need_pkgs+=(libomp-dev); else need_pkgs+=(g++); fi ;;
      Eigen3) need+=("Eigen3 >= 3.3") need_pkgs+=(libeigen3-dev) ;;
      HDF5) need+=("HDF5 (C)") need_pkgs+=(libhdf5-dev) ;;
      CLI11) need+=("CLI11 >= 2.1") need_pkgs+=(libcli11-dev) ;;
      Catch2) need+=("Catch2") need_pkgs+=(catch2) ;;
      MPI) want+=("MPI (C++ and mpiexec)") want_pkgs+=(libopenmpi-dev openmpi-bin) ;;
      PHDF5) want+=("parallel HDF5 (MPI-IO)") want_pkgs+=(libhdf5-openmpi-dev) ;;
      *) need+=("$n") ;;
    esac
  done
}

# ---- Python modules: by import --------------------------------------------------------------------
pymissing=()
check_python() {  # one interpreter for all: each start costs seconds on a loaded machine
  local out
  out=$("$python" - "${python_needed[@]}" "${python_wanted[@]}" 2>/dev/null <<'EOF'
import importlib, sys
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
    except Exception:
        print(m)
EOF
  ) || out="${python_needed[*]} ${python_wanted[*]}"
  read -r -a pymissing <<<"$(echo $out)"
}

unique() { printf '%s\n' "$@" | awk 'NF && !seen[$0]++' | tr '\n' ' ' | sed 's/ $//'; }
join_by() { local IFS=$1; shift; echo "$*"; }

can_apt() { command -v apt-get >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; }
apt_updated=0  # 1: updated; -1: the update failed (no network), not tried again
# Short network timeouts: on a machine without a network (GPU nodes often) apt fails in seconds.
apt_opts=(-o Acquire::Retries=0 -o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20)
apt_install() {  # apt_install PACKAGE...: apt-get update once per run, then install
  export DEBIAN_FRONTEND=noninteractive
  ((apt_updated >= 0)) || return 1
  if ((!apt_updated)); then
    apt-get "${apt_opts[@]}" update -qq >/dev/null || { apt_updated=-1; return 1; }
    apt_updated=1
  fi
  apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "$@" >/dev/null
}
# What the user runs to install PACKAGE... (printed when we may not).
advise() {
  if command -v apt-get >/dev/null 2>&1; then
    echo "setup: run:  sudo apt-get update && sudo apt-get install -y --no-install-recommends $*" >&2
  else
    echo "setup: no apt-get here: install these (the names of their Debian packages: $*) with your package manager, pip, conda, Spack or modules, or set TALLY_SKIP_SETUP=1 to manage the environment yourself" >&2
  fi
}

# 1. Tools; without them the libraries cannot be asked for.
check_tools
if ((${#need[@]})); then
  pkgs=$(unique "${need_pkgs[@]}")
  if can_apt; then
    echo "setup: installing $pkgs (for $(join_by , "${need[@]}"))"
    # shellcheck disable=SC2086
    apt_install $pkgs || { echo "setup: apt-get install $pkgs failed" >&2; exit 1; }
    check_tools
  fi
  if ((${#need[@]})); then
    echo "setup: missing: $(join_by , "${need[@]}")" >&2
    # shellcheck disable=SC2086
    advise $(unique "${need_pkgs[@]}")
    echo "setup: then run scripts/setup.sh again to check the libraries" >&2
    exit 1
  fi
fi
if ((${#notes[@]})); then
  printf 'setup: %s\n' "${notes[@]}" >&2
  exit 1
fi

# 2. Libraries, as CMake finds them.
if ! check_libraries; then
  echo "setup: CMake could not configure a test project with these tools:" >&2
  echo "$probe_log" >&2
  exit 1
fi
if ((${#need[@]} + ${#want[@]})); then
  pkgs=$(unique "${need_pkgs[@]}" "${want_pkgs[@]}")
  if can_apt; then
    echo "setup: installing $pkgs (for $(join_by , "${need[@]}" "${want[@]}"))"
    # shellcheck disable=SC2086
    if ! apt_install $pkgs; then
      echo "setup: apt-get install $pkgs failed" >&2
    fi
    check_libraries || { echo "setup: CMake could not configure a test project:" >&2; echo "$probe_log" >&2; exit 1; }
  fi
  if ((${#need[@]} + ${#want[@]})); then
    echo "setup: missing: $(join_by , "${need[@]}" "${want[@]}")" >&2
    # shellcheck disable=SC2086
    advise $(unique "${need_pkgs[@]}" "${want_pkgs[@]}")
    if ((${#need[@]})); then exit 1; fi
    if [[ " ${want[*]} " == *" MPI (C++ and mpiexec) "* ]]; then
      echo "setup: going on without MPI: the build will have one rank (TALLY_MPI=AUTO finds none)" >&2
    else
      echo "setup: going on without parallel HDF5: multi-rank fields will be gathered to rank 0 to be written" >&2
    fi
  fi
fi

# 3. Python modules (the scripts and the tests need these; the Python module wants nanobind), through
# pip, with short timeouts: without a network it gives up in seconds.
check_python
if ((${#pymissing[@]})); then
  echo "setup: installing Python packages ${pymissing[*]}"
  pip=("$python" -m pip install --quiet --disable-pip-version-check --retries 1 --timeout 20)
  if ! "${pip[@]}" "${pymissing[@]}" 2>/dev/null && ! "${pip[@]}" --break-system-packages "${pymissing[@]}" 2>/dev/null; then
    check_python  # what is still missing
    needed_missing=()
    for m in "${pymissing[@]}"; do
      [[ " ${python_needed[*]} " == *" $m "* ]] && needed_missing+=("$m")
    done
    if ((${#needed_missing[@]})); then
      echo "setup: pip could not install ${needed_missing[*]}; run:  ${pip[*]} ${pymissing[*]}" >&2
      exit 1
    fi
    echo "setup: pip could not install ${pymissing[*]}: going on without the Python module (its tests report skipped); run:  ${pip[*]} ${pymissing[*]}" >&2
  fi
fi

# 4. clang-format (scripts/format.sh, CI's format check): wanted, not needed to build or test.
if ! first_command clang-format-14 clang-format >/dev/null; then
  if can_apt; then
    echo "setup: installing clang-format (for scripts/format.sh)"
    apt_install clang-format || true
  fi
  if ! first_command clang-format-14 clang-format >/dev/null; then
    echo "setup: no clang-format: going on without it (scripts/format.sh and CI's format check need it)" >&2
    advise clang-format
  fi
fi

if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: no CUDA toolkit found: tally will build and run its CPU backend only"
fi
