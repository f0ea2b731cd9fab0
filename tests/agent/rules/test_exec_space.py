"""Members of a class template declared `__host__ __device__` in the class and defined outside it without the
qualifiers: nvcc carries the declaration's execution space over, clang's HIP front end does not ("__host__
function 'get' cannot overload __host__ __device__ function 'get'", cusvna's AA<T, Is...>)."""

from __future__ import annotations

from agent.proposers.rules import Workspace, propose_for
from agent.proposers.rules.exec_space import qualified, qualify
from sandboxes.docker import DockerSandbox
from tests.agent.rules.helpers import image_toolchains, validate
from tools.diagnose import diagnose_text

BOX = """\
#pragma once
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

template <typename T, int N>
class Box {
 public:
  __host__ __device__ Box(const T& v);
  __host__ __device__ T get() const;
  template <int K> __host__ __device__ static int index();
  int host_only() const;

 private:
  T m_v;
};

/* implementation */
template <typename T, int N>
Box<T, N>::Box(const T& v) : m_v(v) {}

template <typename T, int N>
T Box<T, N>::get() const { return m_v * N; }

template <typename T, int N>
template <int K>
int Box<T, N>::index() { return K * N; }

template <typename T, int N>
int Box<T, N>::host_only() const { return N; }
"""
KERNEL = (
    '#include "box.cuh"\n'
    "__global__ void k(float* out) { Box<float, 2> b(out[0]); out[0] = b.get() + Box<float, 2>::index<3>(); }\n"
)


def test_every_definition_of_the_class_s_host_device_members_is_qualified_and_no_other():
    lines = BOX.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if "::get()" in ln)
    new = "".join(qualify(lines, at, "__host__ __device__", "ROCPORT_HOST_DEVICE", "get") or [])
    assert "ROCPORT_HOST_DEVICE Box<T, N>::Box(const T& v)" in new
    assert "ROCPORT_HOST_DEVICE T Box<T, N>::get() const" in new
    assert "ROCPORT_HOST_DEVICE int Box<T, N>::index()" in new
    assert "\nint Box<T, N>::host_only() const" in new  # declared host-only: left alone
    assert new.count("ROCPORT_HOST_DEVICE") == 3
    assert (
        qualify(new.splitlines(keepends=True), at, "__host__ __device__", "ROCPORT_HOST_DEVICE", "get")
        is None
    )


def test_the_class_is_read_past_a_qualified_return_type():
    assert qualified("Interval<T> AA<T, Is...>::interval() const {") == [("AA", "interval")]
    assert qualified("detail::tag_t& AA<T,Is...>::tag() {") == [("detail", "tag_t"), ("AA", "tag")]
    assert qualified("AA<T,Is...>::AA(const T& b): m_b(b) {}") == [("AA", "AA")]
    # a macro and an expression are no definitions
    assert qualified("#define new_aa(i) cusvna::AA<decltype(i)::type>::from_interval<__COUNTER__>(i)") == []
    assert qualified("    return AA<T, N>::index<3>();") == []


def test_the_definitions_compile_for_gfx942_and_cuda_reads_the_same(git_repo, rocm_image, nvcc):
    root = git_repo({"box.cuh": BOX, "k.cu": KERNEL})
    with DockerSandbox(rocm_image, str(root)) as box:
        out = box.run("hipcc -x hip -DUSE_ROCM --offload-arch=gfx942 -I. -c k.cu -o /tmp/u.o", cwd=str(root))
    assert not out.ok and "cannot overload __host__ __device__ function" in out.output
    fail = diagnose_text(out.output, repo_root=root, source="hipcc")[0]
    (prop,) = propose_for(fail, Workspace(root=root)).proposals
    assert "+#define ROCPORT_HOST_DEVICE __host__ __device__\n" in prop.diff
    outcome = validate(root, image_toolchains(root, rocm_image, "gfx942"), prop, fail)
    assert outcome.kept, outcome.reason
    assert all(c.ok for c in outcome.checks), [c.detail for c in outcome.checks]
    checks = {c.name: c.detail for c in outcome.checks}
    assert checks["hipcc gfx942 k.cu"] == "compiles"  # all three definitions in one edit
    assert "identical" in checks["cuda -E identity box.cuh"]
