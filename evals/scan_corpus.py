"""A large, real-shaped kernel tree for the scan benchmark: sgl-kernel/vLLM-like csrc plus Python.

Deterministic (seeded). Kernels mix unguarded CUDA headers with `#ifdef USE_ROCM` branches, warp
reductions with and without a compat header, lane arithmetic, inline PTX, license headers and
comments that mention CUDA constructs; Python model files mostly clean, some with CUDA-only
imports (guarded and not) and e4m3fn use.
"""

from __future__ import annotations

import random
from pathlib import Path

LICENSE = "".join(
    f"// {line}\n"
    for line in (
        "Copyright 2025 The serving framework authors.",
        "Licensed under the Apache License, Version 2.0.",
        "Adapted for __shfl_xor_sync-based reductions; see cuda_bf16.h for the types.",
        "",
        "Notes:",
        "  threadIdx.x % 32 is the lane; 0xffffffff is the full mask on NVIDIA.",
        "",
    )
)

GUARDED_INCLUDES = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#include <hip/hip_bf16.h>
#include <hipcub/hipcub.hpp>
#else
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cub/cub.cuh>
#endif
"""
UNGUARDED_INCLUDES = "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
TORCH_INCLUDES = '#include <torch/all.h>\n#include <ATen/cuda/CUDAContext.h>\n#include "compat.h"\n'

WARP_REDUCE_UNGUARDED = """
template <typename T>
__device__ __forceinline__ T warp_reduce_sum(T val) {
  for (int offset = 16; offset > 0; offset /= 2) val += __shfl_xor_sync(0xffffffff, val, offset);
  return val;
}
"""
WARP_REDUCE_GUARDED = """
template <typename T>
__device__ __forceinline__ T warp_reduce_sum(T val) {
#ifndef USE_ROCM
  for (int offset = 16; offset > 0; offset /= 2) val += __shfl_xor_sync(0xffffffff, val, offset);
#else
  for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) val += __shfl_xor(val, offset, WARP_SIZE);
#endif
  return val;
}
"""
PTX = """
__device__ __forceinline__ uint32_t lop3_xor(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r;
  asm volatile("lop3.b32 %0, %1, %2, %3, 0x96;\\n" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}
"""
STATEMENTS = (
    "  float v{i} = static_cast<float>(input[row * hidden + idx + {i}]);\n",
    "  acc += v{j} * weight[idx % hidden];  // fused multiply-add\n",
    "  if (idx < num_tokens) {{ out[idx] = scale * acc; }}\n",
    "  for (int k = threadIdx.x; k < hidden; k += blockDim.x) {{ sum_sq += x[k] * x[k]; }}\n",
    "  /* block-level reduction through shared memory, one slot per warp */\n",
    "  __syncthreads();\n",
    "  const int64_t token = blockIdx.x * static_cast<int64_t>(stride) + {i};\n",
    "  float2 pair{i} = reinterpret_cast<const float2*>(input)[idx / 2 + {i}];\n",
    "  acc = fmaxf(acc, __expf(v{j} - max_val));\n",
    "  // TODO: vectorise this loop with 128-bit loads (asm volatile ld.global.v4 on sm90)\n",
    '  const char* name{i} = "__nv_bfloat16 kernel #{i}";\n',
)
# Lane arithmetic is a few lines per kernel, not a third of it.
WARP_STATEMENTS = (
    "  const int lane = threadIdx.x % 32;\n",
    "  const int warp_id = threadIdx.x >> 5;\n",
)


def _kernel_body(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        pool = WARP_STATEMENTS if rng.random() < 0.03 else STATEMENTS
        out.append(rng.choice(pool).format(i=i, j=max(0, i - 1)))
    return "".join(out)


def cu_source(rng: random.Random, n: int) -> str:
    """One kernel file: guarded or unguarded headers, reductions, kernels, a launcher."""
    parts = [LICENSE, "#pragma once\n" if n % 7 == 0 else ""]
    parts.append(GUARDED_INCLUDES if rng.random() < 0.6 else UNGUARDED_INCLUDES)
    parts.append(TORCH_INCLUDES)
    parts.append(WARP_REDUCE_GUARDED if rng.random() < 0.5 else WARP_REDUCE_UNGUARDED)
    if rng.random() < 0.15:
        parts.append(PTX)
    for k in range(rng.randint(2, 6)):
        dtype = "__nv_bfloat16" if rng.random() < 0.3 else "scalar_t"
        parts.append(
            f"\ntemplate <typename scalar_t>\n__global__ void kernel_{n}_{k}({dtype}* __restrict__ out, "
            f"const {dtype}* __restrict__ input, const float* weight, int hidden, int num_tokens, "
            f"int stride, float scale) {{\n  const int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"  float acc = 0.f, sum_sq = 0.f, max_val = -1e30f;\n  __shared__ float red[32];\n"
            f"{_kernel_body(rng, rng.randint(20, 90))}}}\n"
        )
    parts.append(
        f"\nvoid launch_{n}(torch::Tensor& out, torch::Tensor& in) {{\n"
        f"  cudaStream_t stream = at::cuda::getCurrentCUDAStream();\n"
        f"  dim3 grid(in.size(0)), block(256);\n}}\n"
    )
    return "".join(parts)


COMPAT_H = """#pragma once
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#define WARP_SIZE 64
#define cudaStream_t hipStream_t
typedef __hip_bfloat16 __nv_bfloat16;
#else
#define WARP_SIZE 32
#endif
"""

PY_HEADER = (
    '"""Model definition."""\nfrom __future__ import annotations\n\nimport torch\nfrom torch import nn\n\n'
)
PY_IMPORTS = (
    "import deep_gemm\n",
    "try:\n    import flashinfer\nexcept ImportError:\n    flashinfer = None\n",
    "from sglang.srt.utils import is_hip\nif not is_hip():\n    from deep_gemm import fp8_gemm_nt\n",
    "FP8 = torch.float8_e4m3fn\n",
    "FP8 = torch.float8_e4m3fnuz if torch.version.hip else torch.float8_e4m3fn\n",
)
PY_BLOCK = '''

class Layer{n}(nn.Module):
    """A decoder layer; on CUDA it used to call deep_gemm directly."""

    def __init__(self, hidden: int, inter: int) -> None:
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden, 2 * inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(torch.nn.functional.silu(gate) * up)
'''


def py_source(rng: random.Random, n: int) -> str:
    parts = [PY_HEADER]
    if rng.random() < 0.1:
        parts.append(rng.choice(PY_IMPORTS))
    parts += [PY_BLOCK.format(n=f"{n}_{k}") for k in range(rng.randint(3, 12))]
    return "".join(parts)


def cpp_source(rng: random.Random, n: int) -> str:
    decls = "".join(f"void launch_{n}_{k}(torch::Tensor& out, torch::Tensor& in);\n" for k in range(20))
    defs = "".join(f'  m.def("op_{n}_{k}", &launch_{n}_{k});\n' for k in range(20))
    return f"{LICENSE}#include <torch/extension.h>\n\n{decls}\nTORCH_LIBRARY(ops_{n}, m) {{\n{defs}}}\n"


def write_tree(
    root: Path,
    *,
    kernels: int = 2000,
    headers: int = 500,
    bindings: int = 300,
    python: int = 1500,
    seed: int = 0,
) -> int:
    """Write the tree under root; returns the number of bytes written."""
    rng = random.Random(seed)
    total = 0
    jobs = (
        [("csrc/{d}/k{n}.cu", cu_source, n) for n in range(kernels)]
        + [("csrc/{d}/h{n}.cuh", cu_source, n) for n in range(headers)]
        + [("csrc/{d}/b{n}.cpp", cpp_source, n) for n in range(bindings)]
        + [("python/pkg/{d}/m{n}.py", py_source, n) for n in range(python)]
    )
    for pattern, make, n in jobs:
        path = root / pattern.format(d=f"g{n % 40}", n=n)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = make(rng, n)
        path.write_text(text)
        total += len(text)
    (root / "csrc" / "compat.h").write_text(COMPAT_H)
    return total
