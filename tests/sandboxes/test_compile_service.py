"""The warm compile service: compiles on request without a command per unit, cached by preprocessed input."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from sandboxes.compile_service import CompileService
from sandboxes.local import LocalSandbox
from tests.conftest import require
from tests.sandboxes.conftest import CC, HEADER


def test_same_preprocessed_input_is_compiled_once(service: CompileService, tmp_path: Path):
    first = service.run_many(
        [CC.format(src="a.c", out=tmp_path / "a1.o"), CC.format(src="b.c", out=tmp_path / "b.o")]
    )
    assert [r.returncode for r in first] == [0, 0] and service.stats.cache_hits == 0
    again = service.run(CC.format(src="a.c", out=tmp_path / "a2.o"))
    assert again.ok and service.stats.cache_hits == 1
    assert (tmp_path / "a2.o").read_bytes() == (tmp_path / "a1.o").read_bytes()
    ledger = (service.cache_dir / "ledger").read_text().splitlines()
    assert ledger[-1].startswith("direct\t")  # its inputs read the same: not even preprocessed again


def test_moved_lines_reuse_a_clean_compile_but_changed_code_does_not(
    service: CompileService, repo: Path, tmp_path: Path
):
    assert service.run(CC.format(src="a.c", out=tmp_path / "a.o")).ok
    (repo / "inc" / "common.h").write_text("// a guard added above moves every line below\n\n" + HEADER)
    assert service.run(CC.format(src="a.c", out=tmp_path / "a.o")).ok and service.stats.cache_hits == 1
    (repo / "inc" / "common.h").write_text("#define SCALE 3\n")
    assert service.run(CC.format(src="a.c", out=tmp_path / "a.o")).ok and service.stats.cache_hits == 1


def test_a_cached_failure_reports_the_same_error(service: CompileService, repo: Path, tmp_path: Path):
    (repo / "bad.c").write_text('#include "common.h"\nint f(void) { return undeclared_name; }\n')
    first = service.run(CC.format(src="bad.c", out=tmp_path / "bad.o"))
    second = service.run(CC.format(src="bad.c", out=tmp_path / "bad.o"))
    assert not first.ok and not second.ok and service.stats.cache_hits == 1
    assert "undeclared_name" in first.output and first.output == second.output


def test_a_depend_mode_request_compiles_at_once_and_is_found_by_what_it_read(
    service: CompileService, repo: Path, tmp_path: Path
):
    """`--until unit` asks in depend mode, as a build does: no -E first; the next identical compile finds
    it by the files it read, but without a preprocessed key moved lines are a miss (the trade-off)."""
    rid = service.submit(CC.format(src="a.c", out=tmp_path / "a.o"), mode="depend")
    assert service.wait(rid, "a.c", 60).ok
    assert service.run(CC.format(src="a.c", out=tmp_path / "again.o")).ok
    (repo / "inc" / "common.h").write_text("// a guard added above moves every line below\n\n" + HEADER)
    assert service.run(CC.format(src="a.c", out=tmp_path / "moved.o")).ok
    ledger = (service.cache_dir / "ledger").read_text().splitlines()
    assert [line.split("\t")[0] for line in ledger] == ["miss", "direct", "miss"]
    assert (tmp_path / "again.o").read_bytes() == (tmp_path / "a.o").read_bytes()


def test_an_indexed_build_compile_is_reused_when_only_line_markers_move(
    service: CompileService, repo: Path, tmp_path: Path
):
    """Before a header patch its includers' build compiles get a preprocessed key: an includer the
    patch leaves alone is then a hit, not a recompile."""
    built = service.submit(CC.format(src="a.c", out=tmp_path / "a.o"), mode="depend")  # as a build
    assert service.wait(built, "a.c", 60).ok
    indexed = service.submit(CC.format(src="a.c", out=tmp_path / "unused.o"), mode="index")
    assert service.wait(indexed, "a.c", 60).ok and not (tmp_path / "unused.o").exists()  # compiles nothing
    (repo / "inc" / "common.h").write_text("#ifdef USE_ROCM\n#define WARP 64\n#endif\n" + HEADER)
    assert service.run(CC.format(src="a.c", out=tmp_path / "check.o")).ok
    ledger = (service.cache_dir / "ledger").read_text().splitlines()
    assert [line.split("\t")[0] for line in ledger] == ["miss", "line markers only"]
    assert (tmp_path / "check.o").read_bytes() == (tmp_path / "a.o").read_bytes()


WARNS = '#include "common.h"\nint unused_result(int x) { int y; return SCALE * x; }\n'
WALL = "cc -O2 -Wall -Iinc -c {src} -o {out}"


def test_a_compile_with_warnings_is_reused_and_its_warnings_follow_their_lines(
    service: CompileService, repo: Path, tmp_path: Path
):
    """A unit that compiles with a warning (e.g. a deprecated cub type) is reused when a header patch only
    moves line markers, with its warning as printed; when a guard moves the warned line itself, it is
    reused with the warning's numbers moved, exactly as a fresh compile prints it; when the warned
    source line reads otherwise (even to the same preprocessed text), it compiles again."""
    (repo / "w.c").write_text(WARNS)
    built = service.submit(WALL.format(src="w.c", out=tmp_path / "w.o"), mode="edited")  # a patched unit
    first = service.wait(built, "w.c", 60)
    assert first.ok and "unused variable" in first.output and "w.c:2:" in first.output
    indexed = service.submit(WALL.format(src="w.c", out=tmp_path / "unused.o"), mode="index")
    assert service.wait(indexed, "w.c", 60).ok
    (repo / "inc" / "common.h").write_text("#ifdef USE_ROCM\n#define WARP 64\n#endif\n" + HEADER)
    again = service.run(WALL.format(src="w.c", out=tmp_path / "again.o"))
    assert again.ok and again.output == first.output
    (repo / "w.c").write_text("#ifdef USE_ROCM\n#define WARP 64\n#endif\n" + WARNS)
    moved = service.run(WALL.format(src="w.c", out=tmp_path / "moved.o"))
    assert moved.ok and "w.c:5:" in moved.output and moved.output == _fresh(repo, WALL, tmp_path)
    assert service.run(WALL.format(src="w.c", out=tmp_path / "direct.o")).output == moved.output
    (repo / "w.c").write_text("#define TWICE SCALE * x\n" + WARNS.replace("SCALE * x", "TWICE"))
    respelled = service.run(WALL.format(src="w.c", out=tmp_path / "respelled.o"))
    assert respelled.ok and "TWICE" in respelled.output  # the source line as it reads now
    ledger = [line.split("\t")[0] for line in (service.cache_dir / "ledger").read_text().splitlines()]
    assert ledger == ["miss", "line markers only", "lines moved", "direct", "miss"]


def _fresh(repo: Path, command: str, tmp_path: Path) -> str:
    """What the compiler itself prints for the unit as it is now (no cache)."""
    proc = subprocess.run(
        command.format(src="w.c", out=tmp_path / "fresh.o").split(),
        cwd=repo,
        capture_output=True,
        text=True,
    )
    return proc.stdout + proc.stderr


def test_shell_commands_run_without_the_cache(service: CompileService, repo: Path):
    result = service.run("echo one && echo two > out.txt")
    assert result.ok and result.stdout == "one\n" and (repo / "out.txt").read_text() == "two\n"
    assert service.stats.cache_hits == 0


def test_a_wait_on_a_service_that_died_ends_at_once_with_why(service: CompileService):
    """The service's liveness is asked a few times a second, not at every poll: a worker killed while a
    compile runs still ends the wait within about that, not at the request's timeout."""
    import signal

    rid = service.submit("sleep 30", timeout=60)
    time.sleep(0.3)  # taken and running
    os.kill(int((service.spool / "ready").read_text()), signal.SIGKILL)
    started = time.monotonic()
    result = service.wait(rid, "sleep 30", timeout=60)
    assert result.returncode == 124 and "the compile service died" in result.stderr
    assert time.monotonic() - started < 5


def test_service_sees_only_the_sandbox_allow_list(repo: Path, monkeypatch):
    monkeypatch.setenv("ROCPORT_TEST_GITHUB_TOKEN", "canary-7f3a")
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")
    with LocalSandbox(repo) as box:
        svc = CompileService.start(box)
        try:
            env = svc.run("env").stdout
        finally:
            svc.close()
    assert "canary-7f3a" not in env and "HIP_VISIBLE_DEVICES=0" in env


def test_on_the_host_the_service_and_its_shims_run_on_rocports_interpreter(repo: Path, tmp_path: Path):
    """Not whatever `python3` the PATH names: here one that cannot run anything (an old Python, or a
    version manager's shim that costs ~75 ms per compile of a build)."""
    require(shutil.which("cc") is not None, "a C compiler (cc)")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\necho 'python3 from PATH ran' >&2\nexit 3\n")
    (fake / "python3").chmod(0o755)
    (fake / "nvcc").write_text('#!/bin/sh\nexec cc "$@"\n')  # a compiler a build reaches through a shim
    (fake / "nvcc").chmod(0o755)
    with LocalSandbox(repo, env={"PATH": f"{fake}:{os.environ['PATH']}"}) as box:
        assert box.run("python3 -c pass").returncode == 3  # the sandbox's own commands do get it
        svc = CompileService.start(box)
        try:
            unit = svc.run(CC.format(src="a.c", out=tmp_path / "a.o"))
            build = box.run(svc.build_prefix() + "nvcc -O2 -Iinc -c b.c -o b.o")
            ledger = (svc.cache_dir / "ledger").read_text().splitlines()
        finally:
            svc.close()
    assert unit.ok and build.ok, unit.stderr + build.stderr
    assert "python3 from PATH ran" not in unit.stderr + build.stderr
    assert ledger[-1].startswith("miss\t") and ledger[-1].endswith("-o b.o")  # the shim compiled it


KERNEL = '#include <hip/hip_runtime.h>\n#include "k.h"\n__global__ void k(float* x) { x[0] = ONE; }\n'
HIP_UNIT = "hipcc -x hip --offload-arch=gfx90a -O2 -c k.hip -o {out}"


@pytest.fixture
def hip_service(hipcc, tmp_path: Path):
    """A compile service over a one-kernel repo on the host's hipcc: (repo, sandbox, service)."""
    root = tmp_path / "kern"
    root.mkdir()
    (root / "k.h").write_text("#define ONE 1.0f\n")
    (root / "k.hip").write_text(KERNEL)
    with LocalSandbox(root, env={"HIP_PLATFORM": "amd"}) as box:
        svc = CompileService.start(box)
        yield root, box, svc
        svc.close()


def _ledger(svc: CompileService) -> list[str]:
    return (svc.cache_dir / "ledger").read_text().splitlines()


def test_a_build_through_the_shim_reuses_a_unit_checks_object(hip_service, tmp_path: Path):
    root, box, svc = hip_service
    assert svc.run(HIP_UNIT.format(out=tmp_path / "check.o")).ok
    build = box.run(svc.build_prefix() + HIP_UNIT.format(out="k.o") + " && echo built", timeout=600)
    ledger = _ledger(svc)
    assert build.ok and build.stdout.strip() == "built"
    assert [line.split("\t")[0] for line in ledger] == ["miss", "direct"]  # no preprocessor run: same inputs
    assert ledger[1].endswith("-o k.o")
    assert (root / "k.o").read_bytes() == (tmp_path / "check.o").read_bytes()


def test_a_cold_build_records_what_it_read_and_the_next_build_reuses_it(hip_service):
    root, box, svc = hip_service
    build = svc.build_prefix() + HIP_UNIT.format(out="k.o")
    runs = [box.run(build, timeout=600), box.run(build, timeout=600)]
    (root / "k.h").write_text("#define ONE 2.0f\n")  # a header the unit reads changes
    runs.append(box.run(build, timeout=600))
    assert all(r.ok for r in runs)
    assert [line.split("\t")[0] for line in _ledger(svc)] == ["miss", "direct", "miss"]


def test_a_failing_build_compile_reports_the_compilers_error(hip_service):
    """A compile that fails in a build gives the compiler's own error and exit status (what diagnose
    reads), not a traceback of the cache: clang deletes the dependency file with its other outputs."""
    root, box, svc = hip_service
    (root / "k.h").write_text("#include <cuda_runtime.h>\n")
    result = box.run(svc.build_prefix() + HIP_UNIT.format(out="k.o"), timeout=600)
    assert not result.ok
    assert "cuda_runtime.h' file not found" in result.output
    assert "Traceback" not in result.output


def test_an_edited_units_failure_is_answered_again_from_the_cache(hip_service, tmp_path: Path):
    """The ROCm check of a file a patch edited compiles at once ("edited": no preprocessor pass first);
    when it fails, the error sorting's second ask is answered from the cache with the same messages (the
    ROCm image's clang deletes the dependency file of a failed compile: the failure is then keyed by its
    preprocessed input; a compiler that keeps the file, like this host's hipcc, is found by it)."""
    root, _box, svc = hip_service
    (root / "k.hip").write_text(KERNEL.replace("ONE", "undeclared_name"))
    first = svc.wait(svc.submit(HIP_UNIT.format(out=tmp_path / "k.o"), mode="edited"), "k.hip", 600)
    again = svc.run(HIP_UNIT.format(out=tmp_path / "k.o"))
    assert not first.ok and not again.ok and "undeclared_name" in first.output
    assert again.output == first.output
    assert [line.split("\t")[0] for line in _ledger(svc)] == ["miss", "direct"]
    (root / "k.hip").write_text(KERNEL)  # the next patch fixes it: compiled, not answered
    assert svc.wait(svc.submit(HIP_UNIT.format(out=tmp_path / "k.o"), mode="edited"), "k.hip", 600).ok
    assert [line.split("\t")[0] for line in _ledger(svc)] == ["miss", "direct", "miss"]


OWNER = """
import sys, time
from pathlib import Path
from sandboxes.compile_service import CompileService
from sandboxes.local import LocalSandbox
svc = CompileService.start(LocalSandbox(Path(sys.argv[1])))
print((svc.spool / "ready").read_text(), flush=True)
time.sleep(600)
"""


def test_the_service_ends_when_its_owner_is_killed(repo: Path):
    """A run killed with -9 cannot close its service: the worker must not poll on for ever, even when
    the sandbox's watchdog went down with the run."""
    import signal
    import subprocess
    import sys

    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(repo)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert owner.stdout is not None
    worker = int(owner.stdout.readline())
    os.kill(worker, 0)  # running while its owner is
    # Everything of the run goes at once (a `pkill -9 -f` of its venv, an OOM kill of the group): the
    # sandbox's watchdog too, so the worker has only itself to notice its owner is gone.
    children = Path(f"/proc/{owner.pid}/task/{owner.pid}/children").read_text().split()
    for pid in map(int, children):
        if pid != worker:
            os.kill(pid, signal.SIGKILL)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        if Path(f"/proc/{worker}/stat").read_text().split()[2] == "Z":
            return  # exited; only its zombie waits for init to reap it
        time.sleep(0.1)
    os.kill(worker, signal.SIGKILL)
    pytest.fail("the compile service outlived its killed owner by 30 s")


def test_a_header_spelled_two_ways_is_one_file_when_judging_stored_warnings():
    """The -MD list and the line markers may name a header differently (`rocprim/device/../detail`): a
    warning in it is still true when its content did not change, and stale once it did."""
    from sandboxes.compile_deps import messages_still_true

    warned = {
        "stdout": "",
        "stderr": "/usr/include/lib/device/../detail/various.hpp:192:8: note: deprecated here\n",
        "deps": [["/usr/include/lib/detail/various.hpp", "100:1"], ["csrc/compat.h", "aaa"]],
    }
    now = [["/usr/include/lib/device/../detail/various.hpp", "100:1"], ["csrc/compat.h", "bbb"]]
    assert messages_still_true(warned, now)  # only compat.h changed, and no message names it
    assert not messages_still_true(warned, [[now[0][0], "200:1"], now[1]])
    assert not messages_still_true({**warned, "stderr": "csrc/compat.h:3:1: warning: x\n"}, now)


def test_a_shim_compiles_without_loading_the_services_pool_or_typing(tmp_path: Path):
    """A build runs one shim process per compile: it needs the cache, not the service's thread pools
    (concurrent.futures brings logging and traceback; on Python 3.14 `dataclasses` too) nor `typing`.
    Only what the worker imported counts (this machine's python3 may load more at start-up)."""
    from sandboxes.compile_service import write_spool

    build_prefix = write_spool(tmp_path / "spool")  # what a build sources: the cache's env, the shims
    worker = str(tmp_path / "spool" / "compile_worker.py")
    (tmp_path / "a.c").write_text("int f(void) { return 2; }\n")
    probe = (
        "import runpy, sys\nbefore = set(sys.modules)\n"
        f"sys.argv = [{worker!r}, 'shim', 'cc', '-c', 'a.c', '-o', 'a.o']\n"
        f"try:\n    runpy.run_path({worker!r}, run_name='__main__')\nexcept SystemExit as end:\n"
        "    print(end.code, *sorted(set(sys.modules) - before))\n"
    )
    proc = subprocess.run(
        ["bash", "-c", f"{build_prefix}python3 -c {shlex.quote(probe)}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    status, *imported = proc.stdout.split()
    assert status == "0" and (tmp_path / "a.o").is_file(), proc.stderr[-2000:]
    assert "sandboxes.compile_cache" in imported  # it did go through the cache
    assert not set(imported) & {"concurrent.futures", "logging", "typing", "dataclasses"}, imported
