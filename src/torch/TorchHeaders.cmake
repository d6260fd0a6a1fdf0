# What c10d's headers include besides torch's own, found for the target ezpz_torch
# (src/torch/CMakeLists.txt includes this file after find_package(Torch)).

# c10d's ProcessGroupGloo.hpp includes gloo's headers: Debian's libtorch has them in libgloo-dev; a pip
# wheel (torch 2.11) ships none, and there the few gloo names that header mentions are declared by
# gloo_decls/ (the library never calls gloo itself).
find_path(EZPZ_GLOO_INCLUDE_DIR gloo/algorithm.h HINTS ${TORCH_INCLUDE_DIRS})
if(EZPZ_GLOO_INCLUDE_DIR)
  target_include_directories(ezpz_torch SYSTEM PRIVATE ${EZPZ_GLOO_INCLUDE_DIR})
else()
  message(STATUS "libezpz_torch: no gloo headers beside torch's: using gloo_decls/")
  target_include_directories(ezpz_torch SYSTEM PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gloo_decls)
endif()
# A CUDA torch defines USE_C10D_NCCL, and c10d's ProcessGroupNCCL.hpp includes nccl.h: a pip wheel
# has it in its nvidia-nccl package (site-packages/nvidia/nccl/include, beside torch), a site in its
# NCCL module (NCCL_HOME). Without it the library is built with gloo alone, and says so.
set(_ezpz_torch_defs "")
foreach(_target torch torch_cpu torch_cuda)
  if(TARGET ${_target})
    get_target_property(_defs ${_target} INTERFACE_COMPILE_DEFINITIONS)
    if(_defs)
      list(APPEND _ezpz_torch_defs ${_defs})
    endif()
  endif()
endforeach()
if("USE_C10D_NCCL" IN_LIST _ezpz_torch_defs)
  find_path(EZPZ_NCCL_INCLUDE_DIR nccl.h
    HINTS ${TORCH_INCLUDE_DIRS} ${Torch_DIR}/../../../../nvidia/nccl/include $ENV{NCCL_HOME}/include
          $ENV{NCCL_ROOT}/include $ENV{CUDA_HOME}/include)
  if(EZPZ_NCCL_INCLUDE_DIR)
    target_include_directories(ezpz_torch SYSTEM PRIVATE ${EZPZ_NCCL_INCLUDE_DIR})
    message(STATUS "libezpz_torch: nccl and gloo (nccl.h in ${EZPZ_NCCL_INCLUDE_DIR})")
  else()
    message(WARNING "libezpz_torch: this torch has NCCL but no nccl.h was found (set NCCL_HOME to the NCCL "
                    "that torch uses): building with gloo alone")
    target_compile_options(ezpz_torch PRIVATE -UUSE_C10D_NCCL)
  endif()
endif()
