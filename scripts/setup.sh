#!/usr/bin/env bash
# Installs what tally needs and is missing: Debian/Ubuntu packages (apt-get, as root; otherwise the
# command to run is printed) and the Python packages of the experiment scripts (pip).
# Idempotent and quiet when everything is present. A missing CUDA toolkit is not an error: the CPU
# backend is built instead.
set -euo pipefail

packages=(cmake ninja-build g++ pkg-config libeigen3-dev libhdf5-dev libcli11-dev catch2 git)
python_modules=(h5py numpy matplotlib pytest)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null; then
    echo "setup: missing ${missing[*]} and no apt-get here: install the equivalents of these Debian packages" >&2
    exit 1
  fi
  cmd=(apt-get install -y -qq --no-install-recommends "${missing[@]}")
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing packages; run:  sudo apt-get update && sudo ${cmd[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  "${cmd[@]}" >/dev/null
fi

python=${PYTHON:-python3}
pymissing=()
for m in "${python_modules[@]}"; do
  "$python" -c "import $m" 2>/dev/null || pymissing+=("$m")
done
if ((${#pymissing[@]})); then
  echo "setup: installing Python packages ${pymissing[*]}"
  "$python" -m pip install --quiet --disable-pip-version-check "${pymissing[@]}" ||
    "$python" -m pip install --quiet --disable-pip-version-check --break-system-packages "${pymissing[@]}"
fi

if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: no CUDA toolkit found: tally will build and run its CPU backend only"
fi
