"""Search/replace matching: exact, whitespace-tolerant, ambiguous, and did-you-mean feedback."""

from agent.proposers.llm.editblocks import apply_edit

SRC = """__global__ void k(float* x) {
    int lane = threadIdx.x % 32;
    float v = x[lane];
    v += __shfl_xor_sync(0xffffffff, v, 16);
    x[lane] = v;
}
"""


def test_exact_match_replaces_once():
    r = apply_edit(SRC, "    v += __shfl_xor_sync(0xffffffff, v, 16);\n", "    v += WARP_SHFL_XOR(v, 16);\n")
    assert r.ok and "WARP_SHFL_XOR(v, 16)" in r.text and "__shfl_xor_sync" not in r.text


def test_whitespace_tolerant_match_keeps_file_indentation():
    r = apply_edit(
        SRC,
        "float v = x[lane];\nv += __shfl_xor_sync(0xffffffff, v, 16);",
        "float v = x[lane];\nv += WARP_SHFL_XOR(v, 16);",
    )
    assert r.ok and "    v += WARP_SHFL_XOR(v, 16);\n" in r.text and "ignoring indentation" in r.message


def test_ambiguous_search_asks_for_more_context():
    r = apply_edit("a;\nb;\na;\n", "a;\n", "c;\n")
    assert not r.ok and "matches 2 places" in r.message


def test_miss_feeds_back_the_closest_lines():
    r = apply_edit(SRC, "v += __shfl_xor_sync(0xffffffff, v, 8);\nx[lane] = v;", "nothing")
    assert not r.ok and "did you mean" in r.message
    assert "__shfl_xor_sync(0xffffffff, v, 16);" in r.message
