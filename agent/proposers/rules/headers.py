"""cuda_header: CUDA runtime headers get an `#ifdef USE_ROCM` branch with their HIP equivalents."""

from __future__ import annotations

import re

from agent.proposers.rules.base import Decline, Workspace, make_proposal, register
from agent.proposers.rules.cpp import include_of, line_platforms
from agent.proposers.rules.driver_api import driver_lines, driver_names, unmapped_reason
from agent.proposers.rules.guard import guard_includes
from agent.proposers.rules.libraries import LIBRARIES, library_lines, package_of
from tools.records import Failure, Proposal

# CUDA header -> the HIP header(s) that declare the same API.
HIP_HEADERS: dict[str, list[str]] = {
    "cuda_runtime.h": ["hip/hip_runtime.h"],
    "cuda_runtime_api.h": ["hip/hip_runtime_api.h"],
    "device_launch_parameters.h": ["hip/hip_runtime.h"],
    "cuda_bf16.h": ["hip/hip_bf16.h"],
    "cuda_fp16.h": ["hip/hip_fp16.h"],
    "cuda_fp8.h": ["hip/hip_fp8.h"],
    "cooperative_groups.h": ["hip/hip_cooperative_groups.h"],
    "cooperative_groups/reduce.h": ["hip/hip_cooperative_groups.h"],  # reduce itself: rule coop_groups
    # hip_vector_types.h alone has the types and make_float3 & co, but a unit's kernels then lack the launch
    # declarations clang needs (`Can't find declaration for hipLaunchKernel`); the runtime has all of it
    "vector_types.h": ["hip/hip_runtime.h"],
    "vector_functions.h": ["hip/hip_runtime.h"],
    "cuda_profiler_api.h": ["hip/hip_runtime_api.h"],
    "cuda_texture_types.h": ["hip/hip_texture_types.h"],
    "texture_types.h": ["hip/texture_types.h"],
    "surface_types.h": ["hip/surface_types.h"],
    "driver_types.h": ["hip/driver_types.h"],
    "device_functions.h": ["hip/hip_runtime.h"],
}
# CUDA's own parts of cuda_runtime.h (atomics, sm_XX intrinsics, built-in types, host macros): HIP has no file
# for each, hip/hip_runtime.h declares what they do. A repo's own file of such a name is never mapped.
CUDA_INTERNAL = {
    *(f"{h}.{ext}" for h in ("device_atomic_functions", "device_double_functions") for ext in ("h", "hpp")),
    *(f"sm_{n}_atomic_functions.{ext}" for n in (20, 32, 35, 60) for ext in ("h", "hpp")),
    *(f"sm_{n}_intrinsics.{ext}" for n in (20, 30, 32, 35, 61) for ext in ("h", "hpp")),
    *("builtin_types.h", "device_types.h", "host_defines.h", "host_config.h", "common_functions.h"),
}
HIP_HEADERS.update({h: ["hip/hip_runtime.h"] for h in CUDA_INTERNAL})
# Headers with no 1:1 HIP header: the code using them needs a human (or the LLM).
NO_EQUIVALENT = {
    "cudaTypedefs.h": "cudaTypedefs.h declares driver-API entry-point typedefs with no HIP counterpart",
    "mma.h": "mma.h is the tensor-core WMMA API; ROCm needs rocWMMA or an MFMA rewrite",
    "cuda_pipeline.h": "cuda_pipeline.h (cp.async pipelines) has no HIP equivalent",
    "cuda_gl_interop.h": (
        "cuda_gl_interop.h (OpenGL interop) is not mapped: HIP's hip_gl_interop.h covers only buffer "
        "registration and needs a GL context on ROCm; port the interop code by hand"
    ),
    "cuda_occupancy.h": "cuda_occupancy.h (the header-only occupancy calculator) has no HIP counterpart; "
    "use hipOccupancyMaxActiveBlocksPerMultiprocessor at run time",
}
ROCM_PREFIXES = (
    *("hip/", "hipcub/", "rocprim/", "hiprand/", "rocrand/", "hipblas", "rocblas", "hip_"),
    *("hipsparse/", "hipfft/", "hipsolver/", "roctracer/", "rccl/"),
)


def hip_lines(headers: list[str]) -> list[str]:
    return [f"#include <{h}>" for h in headers]


CUDART_NAME = re.compile(r"\bCUDART_(\w+)")


def math_constant_lines(used: set[str]) -> list[str]:
    """hip_math_constants.h spells CUDA's `CUDART_<X>` constants `HIP_<X>`: one alias per name in use."""
    return ["#include <hip/hip_math_constants.h>", *(f"#define CUDART_{x} HIP_{x}" for x in sorted(used))]


def block_replacements(
    text: str, constants: set[str] | None = None, driver: set[str] | None = None
) -> dict[str, list[str]]:
    """ROCm lines for every CUDA header the text includes that has a mapping (runtime/type headers, cub,
    host-compatible cuda/std, math constants: `constants` are the CUDART_ names the repo uses, else the
    text's; cuda.h when every driver name in use, `driver` else the text's, has a HIP spelling), so one
    guard covers a whole block of includes."""
    from agent.proposers.rules.cub import CUB_ROCM, STD_ALIAS, STD_HEADERS  # cub imports this module

    out = {h: hip_lines(hips) for h, hips in HIP_HEADERS.items()}
    out["math_constants.h"] = math_constant_lines(
        constants if constants is not None else set(CUDART_NAME.findall(text))
    )
    if driver is None and "cuda.h" in text:  # the scan walks the platforms: only where it may be needed
        driver = driver_names(text)
    if driver is not None and unmapped_reason(driver) is None:
        out["cuda.h"] = driver_lines(driver)
    for line in text.splitlines():
        header = include_of(line) or ""
        if header in LIBRARIES:
            out[header] = library_lines(header, text)
        elif header.startswith("cub/"):
            out[header] = CUB_ROCM
        elif header in STD_HEADERS:
            out[header] = [f"#include <{STD_HEADERS[header]}>", STD_ALIAS]
    return out


def target_file(failure: Failure) -> str:
    """The repo-relative file whose #include must change (the header, else the unit)."""
    rel = failure.file or failure.facts.get("unit")
    if not rel:
        raise Decline("the failure names no file to patch")
    return rel


def unguarded(text: str, header: str) -> bool:
    """True when `header` is #included somewhere both toolchains compile."""
    lines = text.splitlines()
    where = line_platforms(lines)
    return any(include_of(ln) == header and where[i] == "both" for i, ln in enumerate(lines))


def including_file(ws: Workspace, failure: Failure, header: str) -> str | None:
    """The file that includes `header` where both toolchains compile it: the failure's file, else a file
    its unit reaches (a log can name the unit for an error in one of its headers); None when none does."""
    rel = target_file(failure)
    if unguarded(ws.read(rel) or "", header):
        return rel
    from agent.patch.units import include_graph

    graph = include_graph(ws.root)
    todo, seen = [u for u in [failure.facts.get("unit"), rel] if u], set()
    while todo:
        cur = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        if unguarded(ws.read(cur) or "", header):
            return cur
        todo += sorted(graph.get(cur, ()))
    return None


def _constants_used(ws: Workspace, text: str) -> set[str] | None:
    """The CUDART_ names of every repo source file, when `text` includes math_constants.h (its includers
    use them too); None otherwise."""
    if not any(include_of(ln) == "math_constants.h" for ln in text.splitlines()):
        return None
    from agent.patch.units import source_files

    return {x for rel in source_files(ws.root) for x in CUDART_NAME.findall(ws.read(rel) or "")}


def _near_text(ws: Workspace, rel: str) -> str:
    """The text of `rel`, of every repo file it includes and of every file that includes it (transitively):
    where the names a header's API brings in may be used, directly or through macros."""
    from agent.patch.units import include_graph

    graph = include_graph(ws.root)
    near = {rel}
    for step in (lambda f: graph.get(f, set()), lambda f: {g for g, deps in graph.items() if f in deps}):
        todo = [rel]
        while todo:
            new = step(todo.pop()) - near
            near |= new
            todo += sorted(new)
    return "\n".join(ws.read(f) or "" for f in sorted(near))


def _driver_used(ws: Workspace, rel: str, text: str) -> set[str] | None:
    """The driver-API names near `rel` when `text` (rel's) includes cuda.h; else None."""
    if not any(include_of(ln) == "cuda.h" for ln in text.splitlines()):
        return None
    return driver_names(_near_text(ws, rel))


def guard_include_block(
    ws: Workspace, failure: Failure, header: str, family: str, why: str
) -> Proposal | None:
    """The include block of the file that includes `header` rewritten as a USE_ROCM/CUDA pair (every
    CUDA include of the block in one edit); `why` follows the file name in the proposal's rationale."""
    rel = including_file(ws, failure, header)
    if rel is None:
        return None
    text = ws.read(rel) or ""
    replacements = block_replacements(text, _constants_used(ws, text), _driver_used(ws, rel, text))
    parent = ws.root / rel.rsplit("/", 1)[0] if "/" in rel else ws.root
    for own in [h for h in CUDA_INTERNAL if (parent / h).is_file() or (ws.root / h).is_file()]:
        del replacements[own]  # the repo's own host_config.h & co: not CUDA's
    libraries = [h for h in map(include_of, text.splitlines()) if h in LIBRARIES]
    near = _near_text(ws, rel) if libraries else ""
    replacements.update({h: library_lines(h, near) for h in libraries})
    new = guard_includes(text, replacements)
    return make_proposal(failure, family, {rel: (text, new)}, f"{rel}: {why}", ws=ws)


class CudaHeaderFixer:
    """Guard CUDA runtime/type headers with their HIP equivalents under USE_ROCM."""

    family = "headers"
    kinds: tuple[str, ...] = ("cuda_header",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        header = (failure.symbol or "").strip()
        if header.startswith(ROCM_PREFIXES):
            pkg = package_of(header)
            raise Decline(
                f"{header} is a HIP/ROCm header: the ROCm toolchain or image lacks it "
                f"({'install the ROCm package ' + pkg if pkg else 'update ROCm or the image'}); "
                f"the code is not wrong",
                environment=True,
            )
        if header in NO_EQUIVALENT:
            raise Decline(NO_EQUIVALENT[header])
        if header == "cuda.h":
            rel = including_file(ws, failure, header)
            why = unmapped_reason(_driver_used(ws, rel, ws.read(rel) or "") or set()) if rel else None
            if why:
                raise Decline(why)
        if (
            header not in HIP_HEADERS
            and header not in LIBRARIES
            and header not in ("math_constants.h", "cuda.h")
        ):
            return None
        return guard_include_block(
            ws,
            failure,
            header,
            self.family,
            "include the HIP equivalents of the CUDA headers under `#ifdef USE_ROCM`; "
            "the CUDA branch keeps the original #include lines unchanged.",
        )


IMPLICIT = {
    *("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3"),
    *("__forceinline__", "__noinline__", "__launch_bounds__", "__managed__"),
    *("__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"),
    *("__threadfence", "__threadfence_block", "__threadfence_system", "clock64"),
    *(f"atomic{op}" for op in ("Add", "Sub", "Exch", "Min", "Max", "Inc", "Dec", "CAS", "And", "Or", "Xor")),
    *("__float_as_uint", "__uint_as_float", "__float_as_int", "__int_as_float"),
    *("__double_as_longlong", "__longlong_as_double", "__popc", "__popcll", "__clz", "__clzll"),
    *("__ffs", "__ffsll", "__brev", "__brevll", "__umulhi", "__mulhi", "__umul64hi", "__mul64hi"),
    *("__fdividef", "__expf", "__logf", "__powf", "__sinf", "__cosf", "__saturatef", "__align__"),
    *("__byte_perm", "__funnelshift_l", "__funnelshift_r", "__rhadd", "__uhadd", "__sad", "__usad"),
    *("__mul24", "__umul24", "__vabsdiffu4", "__vabsdiffs4", "__vabsdiffu2", "__vabsdiffs2"),
}
"""What nvcc declares in every .cu without an include (its implicit cuda_runtime.h): built-in variables,
qualifier macros, vector types, device functions; HIP declares them in hip/hip_runtime.h."""
IMPLICIT_PATTERN = re.compile(
    r"(?:make_)?(?:u?(?:char|short|int|long|longlong)|float|double)[1-4]"
    r"|__(?:float|double|u?int|u?ll)2(?:float|double|u?int|u?ll)_r[nzud]"  # rounding conversions
)
UNKNOWN = re.compile(r"undeclared identifier|unknown type name|undeclared function|no template named")


def implicit_runtime_name(symbol: str) -> bool:
    """True for a name nvcc's implicit cuda_runtime.h declares (`__forceinline__`, `uint4`, `threadIdx`)."""
    return symbol in IMPLICIT or IMPLICIT_PATTERN.fullmatch(symbol) is not None


class ImplicitRuntimeFixer:
    """`threadIdx`, `__forceinline__`, `uint4` & co unknown on ROCm: nvcc includes the CUDA runtime in every
    unit implicitly, hipcc does not; a file that includes no CUDA header relies on that."""

    family = "implicit_runtime"
    kinds: tuple[str, ...] = ("compile_error",)

    def propose(self, failure: Failure, ws: Workspace) -> Proposal | None:
        named = implicit_runtime_name(failure.symbol or "") and UNKNOWN.search(failure.message or "")
        # `struct __align__(16) T` with __align__ undefined reads as a parse error, naming nothing
        aligned = "__align__(" in (failure.excerpt or "") and (failure.message or "").startswith("expected")
        # a unit with a kernel and no runtime include: clang cannot lower the launch
        launch = "Can't find declaration for hipLaunchKernel" in (failure.message or "")
        if not (named or aligned or launch):
            return None
        what = failure.symbol if named else "__align__" if aligned else "a __global__ kernel's launch"
        from agent.proposers.rules.warp import add_lines  # warp imports this module

        rel = target_file(failure)
        text = ws.read(rel)
        if text is None or "hip/hip_runtime.h" in text:
            return None
        new = add_lines(text, ["#ifdef USE_ROCM\n", "#include <hip/hip_runtime.h>\n", "#endif\n"])
        return make_proposal(
            failure,
            self.family,
            {rel: (text, new)},
            (
                f"{rel}: uses {what}, which nvcc declares implicitly in "
                f"every .cu (its implicit cuda_runtime.h); on ROCm it comes from hip/hip_runtime.h, included "
                f"under `#ifdef USE_ROCM` with the file's other includes, after its license and include guard "
                f"(nothing changes on CUDA)."
            ),
            ws=ws,
        )


register(CudaHeaderFixer())
register(ImplicitRuntimeFixer())
