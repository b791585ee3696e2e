# Finds torch (and decides CONVX_WITH_CUDA) for convx and for projects that use it.
#
# A CUDA build of torch asks its CMake config for the CUDA libraries even from a CXX-only
# consumer. A full CUDA toolkit satisfies that by itself. On machines with a partial toolkit
# (nvcc and cudart only), the libraries that are missing come with torch's pip wheels
# (site-packages/nvidia/...): point torch's config at them, found from torch's own location.

if(NOT Torch_DIR AND NOT CMAKE_PREFIX_PATH MATCHES "torch")
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import torch;print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _convx_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_convx_torch_prefix)
      list(APPEND CMAKE_PREFIX_PATH ${_convx_torch_prefix})
    endif()
  endif()
endif()

# Where torch lives decides where its wheel's CUDA pieces are.
find_path(_convx_torch_share NAMES Torch/TorchConfig.cmake PATHS ${CMAKE_PREFIX_PATH}
  PATH_SUFFIXES cmake NO_DEFAULT_PATH)
set(_convx_site "")
if(_convx_torch_share)
  get_filename_component(_convx_site "${_convx_torch_share}/../../.." ABSOLUTE)
endif()

if(NOT DEFINED CONVX_CUDA)
  set(CONVX_CUDA AUTO)
endif()
# torch's CUDA build announces itself with a torch_cuda target.
set(_convx_torch_cuda OFF)
if(_convx_torch_share AND EXISTS "${_convx_torch_share}/Caffe2/Caffe2Targets.cmake")
  file(STRINGS "${_convx_torch_share}/Caffe2/Caffe2Targets.cmake" _convx_cuda_hits REGEX "torch_cuda")
  if(_convx_cuda_hits)
    set(_convx_torch_cuda ON)
  endif()
endif()
set(CONVX_WITH_CUDA OFF)
if(NOT CONVX_CUDA STREQUAL "OFF")
  if(EXISTS /usr/local/cuda/bin/nvcc AND NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER AND _convx_torch_cuda)
    set(CONVX_WITH_CUDA ON)
  elseif(CONVX_CUDA STREQUAL "ON")
    message(FATAL_ERROR "CONVX_CUDA=ON but nvcc (${CMAKE_CUDA_COMPILER}) or a CUDA build of torch was not found")
  endif()
endif()

if(_convx_torch_cuda)
  # Needed by torch's config even when convx itself compiles no CUDA.
  if(NOT CUDA_TOOLKIT_ROOT_DIR AND EXISTS /usr/local/cuda)
    set(CUDA_TOOLKIT_ROOT_DIR /usr/local/cuda CACHE PATH "CUDA toolkit for torch's config")
  endif()
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  set(_convx_cu "${_convx_site}/nvidia/cu13")
  if(EXISTS "${_convx_cu}/lib/libnvrtc.so.13" AND NOT CUDA_nvrtc_LIBRARY)
    set(CUDA_nvrtc_LIBRARY "${_convx_cu}/lib/libnvrtc.so.13" CACHE FILEPATH "nvrtc from torch's wheel")
  endif()
  if(EXISTS "${_convx_cu}/include")
    list(APPEND CONVX_EXTRA_CUDA_INCLUDES "${_convx_cu}/include")
  endif()
endif()

if(CONVX_WITH_CUDA)
  if(NOT TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    # Unset, torch's CMake compiles eleven architectures when no GPU is visible.
    set(ENV{TORCH_CUDA_ARCH_LIST} "9.0")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  # Host code of the .cu files must come from the same C++ compiler as the .cpp files: both
  # emit the same inline library functions (std::ostringstream, c10::str, ...) and the linker
  # keeps one copy. A copy built against another libstdc++'s headers crashed every error message.
  if(NOT CMAKE_CUDA_HOST_COMPILER AND NOT DEFINED ENV{CUDAHOSTCXX})
    set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()

find_package(Torch REQUIRED)
