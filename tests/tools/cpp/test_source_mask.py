"""Comment and literal masking: the C extension (tools/cpp/_lexmask.c) and the regex it replaces
give the same text, and a scan gives the same findings with either."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from tests.conftest import require
from tests.tools.scan.helpers import write
from tools.cpp.source import SourceText, compiled_mask, mask_with_regex

CASES = [
    "int a; // x = 32\nint b;",
    "a /* one\ntwo */ b /* never closed\nc",
    "a /*/ b */ c /**/ d /***/ e",
    'x = "esc \\" quote"; y = "bad\nz"; w = "\\\nq"',
    "c = 'a'; d = '\\''; e = ''; f = 'abcdefgh'; g = 'abcdefghi'; h = '\\n\\t';",
    'R"(raw "with" quotes)" R"delim(a )" b)delim" R"x(unclosed R"(',
    'R"0123456789abcdef(sixteen)0123456789abcdef" R"0123456789abcdefg(seventeen)0123456789abcdefg"',
    'R"a b(space)a b" R"\u00a0(nbsp)\u00a0" uR"(u)" LR"(l)"',
    "// caf\u00e9 \u2014 comment only\nint x;",
    "/* \U0001f600 */ int y = '\u00e9'; s = \"\u4e2d\"; // \u00ff",
    "int z = 1; \u00e9 stays // \u2014 goes",
    "trailing backslash \\",
    "",
    "/",
    "'",
    '"',
    'R"',
]


@pytest.fixture
def c_mask():
    require(compiled_mask is not None, "the _lexmask C extension (pip install -e . with a C compiler)")
    return compiled_mask


@pytest.mark.parametrize("text", CASES)
def test_c_mask_matches_the_regex(c_mask, text):
    assert c_mask(text) == mask_with_regex(text)


def test_c_mask_matches_the_regex_on_random_text(c_mask):
    alphabet = [
        "/",
        "*",
        '"',
        "'",
        "R",
        "(",
        ")",
        "\\",
        "\n",
        " ",
        "a",
        "d",
        "\u00e9",
        "\u2014",
        "\U0001f600",
    ]
    rng = random.Random(15)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40)))
        assert c_mask(text) == mask_with_regex(text), repr(text)


def test_masked_text_is_a_normal_str(c_mask):
    masked = c_mask("int x; // \u2014\n")
    expected = "int x;" + " " * 5 + "\n"
    assert masked == expected and masked.isascii() and masked.encode() == expected.encode()


TREE = {
    "csrc/k.cu": "#include <cuda_bf16.h>\n// __shfl_xor_sync(0xffffffff, v, 1) in a comment\n"
    'const char *s = "__ballot_sync(0xffffffff, p)"; const char *r = R"x(__activemask())x";\n'
    "/* caf\u00e9 */ __device__ float f(float v) { return __shfl_xor_sync(0xffffffff, v, 1); }\n"
    "__device__ int lane() { return threadIdx.x % 32; } /* never closed\n__syncwarp();\n",
    # what the word search feeds: lane masks and shifts, warp-size macros, inline PTX, cg algorithms,
    # function templates only CUDA code instantiates, continued directives
    "csrc/w.cu": "#include <cooperative_groups/reduce.h>\n#define WARP_SIZE 32\n"
    "template <typename T> __device__ T sum(T v) { return __shfl_down_sync(0xffffffff, v, 1); }\n"
    "#ifndef USE_ROCM\n__global__ void k(float *o) { o[0] = sum(o[0]); }\n#endif\n"
    "__device__ int w(int tid) { unsigned mask = 0xFFFFFFFF; return (tid & 0x1F) + (tid >> 5u) + mask; }\n"
    '__device__ void p() { asm volatile("mov.u32 %0, %%laneid;" : "=r"(x)); }\n'
    "__device__ int r(cg::thread_block_tile<32> g, int v) { return cg::reduce(g, v, cg::plus<int>()); }\n"
    "#if defined(__CUDA_ARCH__) \\\n  && __CUDA_ARCH__ >= 800\nint newer = __ballot_sync(0xffffffff, 1);\n#endif\n",
}


def _scan_json(root, **env: str) -> list[dict]:
    cmd = [sys.executable, "-c", "from agent.cli import main; main()", "scan", str(root), "--no-cache"]
    proc = subprocess.run(
        [*cmd, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )
    assert proc.returncode == 1, proc.stderr  # findings remain
    return json.loads(proc.stdout)


def test_scan_findings_are_the_same_without_the_extension(c_mask, tmp_path):
    root = write(tmp_path / "repo", TREE)
    with_c, pure = _scan_json(root), _scan_json(root, ROCPORT_PURE_PYTHON="1")
    probe = "from tools.cpp.source import compiled_mask; print(compiled_mask is None)"
    switched_off = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "ROCPORT_PURE_PYTHON": "1"},
    )
    assert switched_off.stdout.strip() == "True"  # the second scan really ran the regex
    assert with_c == pure
    symbols = [(f["line"], f["symbol"]) for f in with_c]
    assert (1, "cuda_bf16.h") in symbols and (4, "__shfl_xor_sync") in symbols and (5, "% 32") in symbols
    k_cu = [f for f in with_c if f["file"] == "csrc/k.cu"]
    assert all(f["line"] not in (2, 3, 6) for f in k_cu)  # comments, literals, an unclosed comment
    w_cu = {(f["line"], f["symbol"]) for f in with_c if f["file"] == "csrc/w.cu"}
    assert {
        (2, "WARP_SIZE"),
        (7, "& 0x1F"),
        (7, ">> 5"),
        (7, "0xffffffff"),
        (8, "mov.u32"),
        (9, "cg::reduce"),
    } <= w_cu
    assert (3, "__shfl_down_sync") not in w_cu  # only the CUDA-only kernel instantiates it


def test_lines_at_agrees_with_line_col_from_any_earlier_query():
    """The identifier detector numbers all its uses in one sweep (lines_at) between other
    detectors' line_col queries: both must give the line an editor shows."""
    rng = random.Random(7)
    for _ in range(200):
        text = "".join(rng.choice(["a", "\n", " ", "\u00e9", "\n\n"]) for _ in range(rng.randrange(0, 60)))
        expected = [text.count("\n", 0, i) + 1 for i in range(len(text) + 1)]
        src = SourceText("k.cu", text)
        for _ in range(3):
            if rng.random() < 0.5 and text:
                at = rng.randrange(len(text))
                assert src.line_col(at)[0] == expected[at]
                assert src.place(at) == (*src.line_col(at), src.line_text(at))
            offsets = sorted(rng.sample(range(len(text) + 1), rng.randrange(0, len(text) + 1)))
            assert src.lines_at(offsets) == [expected[i] for i in offsets]
