// type_compat.h: 16-bit float types under one name (bf16 needs HIP >= 6.0 headers on ROCm).
#pragma once

#ifdef USE_ROCM
#include <hip/hip_bf16.h>
typedef __hip_bfloat16 ts_bf16;
#else
#include <cuda_bf16.h>
typedef __nv_bfloat16 ts_bf16;
#endif
