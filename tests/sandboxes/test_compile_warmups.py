"""Warm-up compiles: the build's units compiled ahead of it at idle priority, dropped when a patch changes
what they read, and waited for (not redone) by the build that reaches them."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sandboxes.compile_service import CompileService
from tests.sandboxes.conftest import CC


def _compiler(repo: Path, name: str, before: str, after: str = ":") -> str:
    """A compiler of our own on the repo's path: runs `before`, says its nice value, is cc, runs `after`."""
    script = repo / name
    nice = "echo \"nice $(cut -d' ' -f19 /proc/$$/stat)\" >&2"
    script.write_text(f'#!/bin/sh\n{before}\n{nice}\ncc "$@"\nrc=$?\n{after}\nexit $rc\n')
    script.chmod(0o755)
    return f"./{name} -O2 -Iinc -c {{src}} -o {{out}}"


def test_a_warm_up_runs_at_idle_priority_and_the_build_reuses_it(
    service: CompileService, repo: Path, tmp_path: Path
):
    cmd = _compiler(repo, "ccw", ":")
    rid = service.submit(cmd.format(src="a.c", out=tmp_path / "warm.o"), mode="warmup")
    warm = service.wait(rid, "warm-up", 60)
    assert warm.ok and "nice 19" in warm.stderr  # only the cores nothing else wants
    build = service.wait(service.submit(cmd.format(src="a.c", out=tmp_path / "a.o"), mode="depend"), "b", 60)
    assert build.ok and (service.cache_dir / "ledger").read_text().splitlines()[-1].startswith("direct\t")
    other = service.wait(service.submit(cmd.format(src="b.c", out=tmp_path / "b.o"), mode="depend"), "b", 60)
    assert other.ok and f"nice {os.nice(0)}" in other.stderr  # a build's own compile keeps its priority
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "warm.o").read_bytes()


def test_a_warm_up_whose_input_changed_under_it_is_not_kept(
    service: CompileService, repo: Path, tmp_path: Path
):
    cmd = _compiler(repo, "ccslow", ":", after="sleep 1")  # the header read, then still busy
    rid = service.submit(cmd.format(src="a.c", out=tmp_path / "warm.o"), mode="warmup")
    time.sleep(0.5)
    (repo / "inc" / "common.h").write_text("#define SCALE 3\n")  # a patch lands while it compiles
    assert service.wait(rid, "warm-up", 60).ok
    after = service.wait(service.submit(cmd.format(src="a.c", out=tmp_path / "a.o"), mode="depend"), "b", 60)
    assert after.ok and (service.cache_dir / "ledger").read_text().splitlines()[-1].startswith("miss\t")
    assert (tmp_path / "a.o").read_bytes() != (tmp_path / "warm.o").read_bytes()  # compiled from SCALE 3


def test_cancelling_every_warm_up_kills_the_running_and_drops_the_queued(
    service: CompileService, repo: Path, tmp_path: Path
):
    cmd = _compiler(repo, "cchang", "sleep 60")
    many = (os.cpu_count() or 2) + 2  # some running (half as many as cores, two at least), some queued
    for i in range(many):
        service.submit(cmd.format(src="a.c", out=tmp_path / f"w{i}.o"), mode="warmup")
    deadline = time.monotonic() + 30
    while not _idle_sleepers(repo) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _idle_sleepers(repo), "no warm-up started"
    service.cancel_warmups()
    deadline = time.monotonic() + 10
    while _idle_sleepers(repo) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _idle_sleepers(repo)  # killed, not left to hold a core or memory after the run
    time.sleep(1)
    assert not list((service.spool / "req").glob("*.json"))  # the queued ones were dropped, not run
    assert service.run(CC.format(src="b.c", out=tmp_path / "b.o")).ok  # the service itself carries on


def test_a_starting_build_waits_for_a_running_warm_up_instead_of_compiling_it_again(
    service: CompileService, repo: Path, tmp_path: Path
):
    cmd = _compiler(repo, "ccslow", 'echo "$*" >> runs; sleep 2')
    rid = service.submit(cmd.format(src="a.c", out=tmp_path / "warm.o"), mode="warmup", unit="a.c")
    for i in range(max(2, (os.cpu_count() or 2) // 2) + 1):  # more than run at once: some are queued
        service.submit(cmd.format(src="b.c", out=tmp_path / f"b{i}.o"), mode="warmup", unit="b.c")
    deadline = time.monotonic() + 30
    while not _idle_sleepers(repo) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _idle_sleepers(repo), "no warm-up started"
    service.promote_warmups()
    build = service.wait(service.submit(cmd.format(src="a.c", out=tmp_path / "a.o"), mode="depend"), "b", 60)
    warm = service.wait(rid, "warm-up", 30)
    assert build.ok and warm.ok and build.stderr == warm.stderr  # the warm-up's own answer, reused
    assert (repo / "runs").read_text().count("-c a.c ") == 1  # a.c compiled once, not again
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "warm.o").read_bytes()
    ledger = (service.cache_dir / "ledger").read_text()
    assert "direct\t./ccslow -O2 -Iinc -c a.c -o " + str(tmp_path / "a.o") in ledger


def test_a_patch_drops_only_the_warm_ups_of_the_units_it_changes(
    service: CompileService, repo: Path, tmp_path: Path
):
    cmd = _compiler(repo, "cchang", "sleep 60")
    for src in ("a.c", "b.c"):
        service.submit(cmd.format(src=src, out=tmp_path / f"{src}.o"), mode="warmup", unit=src)
    deadline = time.monotonic() + 30
    while len(_idle_sleepers(repo)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(_idle_sleepers(repo)) == 2, "the two warm-ups did not start"
    service.cancel_warmups(["a.c"])
    deadline = time.monotonic() + 10
    while len(_idle_sleepers(repo)) > 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    assert len(_idle_sleepers(repo)) == 1  # b.c's warm-up still compiles the tree the build will see
    service.cancel_warmups()


def test_a_warm_up_killed_after_it_read_its_input_leaves_no_answer(
    service: CompileService, repo: Path, tmp_path: Path
):
    # cc has written the object and its dependency file, then the compiler hangs and the build's start
    # kills it: once that was kept as a failure with no message, and the build was answered from it
    cmd = _compiler(repo, "cclate", ":", after="[ -e hang ] && sleep 60")
    (repo / "hang").write_text("")
    rid = service.submit(cmd.format(src="a.c", out=tmp_path / "warm.o"), mode="warmup")
    deadline = time.monotonic() + 30
    while not _idle_sleepers(repo) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _idle_sleepers(repo), "the warm-up never reached its hang"
    service.cancel_warmups()
    assert not service.wait(rid, "warm-up", 30).ok
    (repo / "hang").unlink()
    build = service.wait(service.submit(cmd.format(src="a.c", out=tmp_path / "a.o"), mode="depend"), "b", 60)
    assert build.ok, build.stderr
    assert (service.cache_dir / "ledger").read_text().splitlines()[-1].startswith("miss\t")


def _idle_sleepers(repo: Path) -> list[str]:
    """PIDs of `sleep` processes at nice 19 working in `repo` (this test's hanging warm-up compilers, not
    another test's running beside it)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            cwd = os.readlink(stat.parent / "cwd")
        except OSError:
            continue
        if "(sleep)" in text and text.rsplit(")", 1)[1].split()[16] == "19" and Path(cwd) == repo.resolve():
            found.append(stat.parent.name)
    return found
