#!/usr/bin/env bash
# Prepares a checkout: the virtual environment (.venv), the system packages the C++ tests need,
# and the build (build/, with the tests and the C++ example). Idempotent and quick to rerun;
# never prompts (CI runs it with no stdin). CONVX_CUDA=AUTO/ON/OFF in the environment
# reconfigures with that choice of CUDA kernels.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
py=$repo/.venv/bin/python

# One setup at a time may touch the venv and the system packages.
(
  flock 8

  if [[ ! -x $py ]]; then
    python3 -m venv .venv
  fi

  # torch is pinned: libconvx.so only loads into the torch it was built against. cmake comes
  # from PyPI: Debian's cmake 3.25 cannot compile CUDA as C++20 with nvcc 13.
  if ! "$py" - 2>/dev/null <<'PY'
import importlib.util, sys
import torch, torchvision
assert torch.__version__.split("+")[0] == "2.14.1" and torchvision.__version__.split("+")[0] == "0.29.1"
mods = ["pytest", "cmake", "ninja", "expecttest", "numpy", "scikit_build_core", "onnx",
        "onnxscript", "onnxruntime"]
sys.exit(any(importlib.util.find_spec(m) is None for m in mods))
PY
  then
    "$py" -m pip install --disable-pip-version-check --no-input \
      torch==2.14.1 torchvision==0.29.1 pytest cmake ninja expecttest numpy scikit-build-core \
      onnx onnxscript onnxruntime
  fi

  if [[ ! -f /usr/include/gtest/gtest.h ]] || ! command -v ccache >/dev/null; then
    sudo=""
    [[ $(id -u) == 0 ]] || sudo="sudo -n"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y libgtest-dev ccache
  fi

  # Development install: the venv finds python/convx, which loads build/libconvx.so.
  site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$repo/python" > "$site/convx-dev.pth"
) 8>/tmp/convx-env.lock

# Configure and build under the lock every build of this checkout takes
# (flock /tmp/convx-build.lock cmake --build build), so concurrent runs do not collide.
export PATH=$repo/.venv/bin:$PATH   # the venv's cmake and ninja
(
  flock 9
  # Configure once; later builds rerun CMake by themselves when a CMakeLists.txt changes.
  if [[ -n ${CONVX_CUDA:-} ]] || ! grep -qs '^CONVX_BUILD_TESTS:BOOL=ON$' build/CMakeCache.txt; then
    prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')
    cmake -S . -B build -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCONVX_BUILD_TESTS=ON \
      -DCONVX_PYTHON="$py" ${CONVX_CUDA:+-DCONVX_CUDA=$CONVX_CUDA} >/dev/null
  fi
  cmake --build build -j2
) 9>/tmp/convx-build.lock

"$py" -c "import convx"
