"""Straight-line PTX translated for ROCm: vLLM-shaped lop3/prmt helpers and a predicated multi-register
load block compile with hipcc gfx942 and nvcc, the CUDA tokens are unchanged, the helpers compute what
the PTX ISA says, and anything outside the subset is still declined."""

from __future__ import annotations

import random
import shutil
import subprocess

from agent.proposers.rules.ptx_translate import BIT_HELPERS, translate
from tests.agent.rules.helpers import declines, failure, image_toolchains, propose, validate
from tests.conftest import require

# Shaped like vLLM's csrc/moe/moe_wna16_utils.h and csrc/topk_histogram_4096.cuh.
KERNEL = """#include <cstdint>

template <int lut>
__device__ inline int lop3(int a, int b, int c) {
  int res;
  asm volatile("lop3.b32 %0, %1, %2, %3, %4;\\n" : "=r"(res) : "r"(a), "r"(b), "r"(c), "n"(lut));
  return res;
}

template <int start_byte, int mask>
__device__ inline uint32_t prmt(uint32_t a) {
  uint32_t res;
  asm volatile("prmt.b32 %0, %1, %2, %3;\\n" : "=r"(res) : "r"(a), "n"(start_byte), "n"(mask));
  return res;
}

__device__ void load2(const float* ptr, int n, uint32_t& r0, uint32_t& r1) {
  const int p0 = 0 < n, p1 = 1 < n;
  asm volatile(
      "{\\n"
      "  .reg .pred pr0, pr1;\\n"
      "  setp.ne.u32 pr0, %2, 0;\\n"
      "  setp.ne.u32 pr1, %3, 0;\\n"
      "  mov.u32 %0, 0xFF800000;\\n"
      "  mov.u32 %1, 0xFF800000;\\n"
      "  @pr0 ld.global.cg.u32 %0, [%4];\\n"
      "  @pr1 ld.global.cg.u32 %1, [%4+4];\\n"
      "}\\n"
      : "=r"(r0), "=r"(r1)
      : "r"(p0), "r"(p1), "l"(ptr));
}

__global__ void k(const float* x, uint32_t* y, int n) {
  uint32_t a, b;
  load2(x, n, a, b);
  y[threadIdx.x] = lop3<0x96>(a, b, 7) + prmt<0x64, 0x4210>(a);
}
"""


def test_lop3_prmt_and_predicated_loads_are_translated_and_proven(git_repo, rocm_image, nvcc):
    root = git_repo({"csrc/moe/utils.cuh": KERNEL, "csrc/moe/unit.cu": '#include "utils.cuh"\n'})
    fail = failure("inline_ptx", "csrc/moe/utils.cuh", "prmt.b32", "invalid instruction")
    fail.facts["unit"] = "csrc/moe/unit.cu"
    prop = propose(root, fail)
    assert "+  res = rocm_compat_lop3(a, b, c, lut);" in prop.diff
    assert "+  res = rocm_compat_prmt(a, start_byte, mask);" in prop.diff
    assert "+    if (rocport_pr1) r1 = *reinterpret_cast<const uint32_t*>(" in prop.diff
    assert "+    r0 = 0xFF800000u;" in prop.diff
    assert prop.files == ["csrc/moe/utils.cuh", "csrc/rocm_compat.h"]  # helpers defined once, in the header
    assert "-  asm" not in prop.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]


def test_untranslatable_ptx_is_declined_not_half_rewritten(git_repo):
    relu = 'void f(short* y, short x) { asm("fma.rn.relu.f16 %0, %1, %1, %1;" : "=h"(*y) : "h"(x)); }\n'
    root = git_repo({"k.cu": relu})
    assert "no known mapping" in declines(root, failure("inline_ptx", "k.cu", "fma.rn.relu.f16"))[0]
    ins = [("r", "a")]
    assert translate("{ .reg .pred p; setp.lt.f32 p, %1, 0; mov.u32 %0, 1; }", [("r", "d")], ins) is None
    assert translate("prmt.b32.f4e %0, %1, %2, %3", [("r", "d")], ins * 3) is None  # a non-default mode


def _lop3_isa(a: int, b: int, c: int, lut: int) -> int:
    """PTX ISA: each result bit is lut[(a_bit << 2) | (b_bit << 1) | c_bit]."""
    bits = ((a >> i & 1) << 2 | (b >> i & 1) << 1 | (c >> i & 1) for i in range(32))
    return sum((lut >> idx & 1) << i for i, idx in enumerate(bits))


def _prmt_isa(a: int, b: int, sel: int) -> int:
    """PTX ISA: bytes {b, a} numbered 0-7 from a's low byte; per result byte a 4-bit selector whose msb
    replicates the chosen byte's sign bit."""
    src = [(a >> 8 * i) & 0xFF for i in range(4)] + [(b >> 8 * i) & 0xFF for i in range(4)]
    out = 0
    for i in range(4):
        s = sel >> 4 * i & 0xF
        byte = src[s & 7]
        out |= ((0xFF if byte & 0x80 else 0) if s & 8 else byte) << 8 * i
    return out


def test_helpers_compute_what_the_ptx_isa_defines(tmp_path):
    cxx = shutil.which("g++") or shutil.which("c++")
    require(cxx is not None, "a host C++ compiler (g++)")
    rng = random.Random(16)
    cases = [tuple(rng.getrandbits(32) for _ in range(4)) for _ in range(200)]
    cases += [(0x80402010, 0x01020304, 0x00FF00FF, lut) for lut in (0x96, 0xE8, 0xF0, 0xCC, 0xAA, 0xEA)]
    src = "#include <cstdint>\n#include <cstdio>\n#define __device__\n" + "".join(BIT_HELPERS.values())
    src += "int main() { uint32_t a, b, c, d;\n"
    src += ' while (scanf("%u %u %u %u", &a, &b, &c, &d) == 4)\n'
    src += (
        '  printf("%u %u\\n", rocm_compat_lop3(a, b, c, d & 0xff), rocm_compat_prmt(a, b, d & 0xffff));\n}\n'
    )
    (tmp_path / "h.cpp").write_text(src)
    subprocess.run([cxx, "-O1", "-o", str(tmp_path / "h"), str(tmp_path / "h.cpp")], check=True)
    stdin = "".join(" ".join(map(str, case)) + "\n" for case in cases)
    got = subprocess.run([str(tmp_path / "h")], input=stdin, capture_output=True, text=True, check=True)
    want = [f"{_lop3_isa(a, b, c, d & 0xFF)} {_prmt_isa(a, b, d & 0xFFFF)}" for a, b, c, d in cases]
    assert got.stdout.split("\n")[:-1] == want
