#!/usr/bin/env bash
# Formats the tree's C++ and CUDA sources (every tracked *.cpp *.hpp *.cc *.h *.cu *.cuh) with
# clang-format and the root's .clang-format.
#   scripts/format.sh                format them in place
#   scripts/format.sh --check        list the files that are not formatted, exit 1 if there are any
#   scripts/format.sh [--check] F..  only the files F..
# The tree is formatted with clang-format 14; another major version may lay out a few constructs
# differently, so it is used with a note. CLANG_FORMAT=<program> picks the program (default:
# clang-format-14, else clang-format). Exit status 2 when there is no clang-format.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
check=0
if [[ ${1:-} == --check ]]; then
  check=1
  shift
fi
cf=${CLANG_FORMAT:-}
if [[ -z $cf ]]; then
  for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null 2>&1; then cf=$c; break; fi
  done
fi
if [[ -z $cf ]] || ! command -v "$cf" >/dev/null 2>&1; then
  echo "format: no clang-format${cf:+ ($cf)}: scripts/setup.sh installs it (apt-get install clang-format)" >&2
  exit 2
fi
major=$("$cf" --version | sed -n 's/.*clang-format version \([0-9]*\).*/\1/p')
[[ $major == 14 ]] || echo "format: $cf is version ${major:-unknown}; the tree is formatted with 14, so some lines may differ" >&2

if (($#)); then
  files=("$@")
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.cc' '*.h' '*.cu' '*.cuh')
else  # a tree without git: every source outside the build folders
  mapfile -t files < <(find . -path ./build -prune -o -path './build-*' -prune -o -type f \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print | sed 's|^\./||' | sort)
fi
((${#files[@]})) || { echo "format: no C++ or CUDA sources" >&2; exit 0; }

if ((check)); then
  # One diagnostic per unformatted file (--ferror-limit=1), its name first.
  bad=$("$cf" --style=file --dry-run --ferror-limit=1 "${files[@]}" 2>&1 |
        sed -n 's/^\(.*\):[0-9]*:[0-9]*: \(error\|warning\): code should be clang-formatted.*/\1/p' | sort -u)
  if [[ -n $bad ]]; then
    echo "$bad"
    echo "format: $(wc -l <<<"$bad") of ${#files[@]} files are not formatted: run scripts/format.sh" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files checked, all formatted"
else
  "$cf" --style=file -i "${files[@]}"
fi
