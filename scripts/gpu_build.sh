#!/usr/bin/env bash
# Configures and builds convx with CUDA into build-gpu/ on the device machine (torch 2.11 in the
# default python3). Source it (`. scripts/gpu_build.sh`) to keep its environment: CONVX_LIBRARY
# and PYTHONPATH then point python3 at this build. scripts/gpu_check.sh starts with it.
export TORCH_CUDA_ARCH_LIST=9.0          # one architecture (H100/H200): short build
# The device sets CXX=/opt/gcc/bin/g++, another GCC with its own libstdc++ headers; code built
# with it crashes in std::ostream (every error message) against the system libstdc++ that
# torch 2.11 (built with the system GCC 13) loads. Use the system GCC for C++ and CUDA host code.
if [[ -x /usr/bin/g++ ]]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++; fi
# A compiler cache carried into .carry-ccache/ (bin/ccache with its libraries, and cache/ from an
# earlier build of main) turns a fresh machine's full build (~100 s) into a rebuild of what
# changed: CMakeLists.txt picks up the ccache it finds on PATH. Absent, the build is from scratch.
if [[ -x .carry-ccache/bin/ccache ]]; then
  export PATH=$PWD/.carry-ccache/bin:$PATH CCACHE_DIR=$PWD/.carry-ccache/cache \
    CCACHE_COMPILERCHECK=content CCACHE_MAXSIZE=4G
fi
export CUBLAS_WORKSPACE_CONFIG=:4096:8   # the tests run cuBLAS under use_deterministic_algorithms
export CONVX_LIBRARY=$PWD/build-gpu/libconvx.so
export PYTHONPATH=$PWD/python
cmake -S . -B build-gpu -G Ninja \
  -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
  -DCONVX_CUDA=ON -DCONVX_BUILD_TESTS=${CONVX_BUILD_TESTS:-OFF} \
  ${CXX:+-DCMAKE_CXX_COMPILER=$CXX -DCMAKE_CUDA_HOST_COMPILER=$CXX} >/dev/null &&
  cmake --build build-gpu -j"$(nproc)"
