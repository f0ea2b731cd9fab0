"""Runs share compiles through a cache copied in at start and published at the end; nothing but the
cache's own regular files crosses, and a link a sandbox planted is never followed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sandboxes.compile_service import CompileService
from sandboxes.compile_share import publish, seed
from sandboxes.local import LocalSandbox
from tests.conftest import require
from tests.sandboxes.conftest import CC


def _build(repo: Path, shared: Path, out: Path, *, share: bool) -> list[str]:
    """Compile a.c and b.c as a build does (depend mode) in a service seeded from `shared`; the ledger."""
    box = LocalSandbox(repo)
    service = CompileService.start(box, shared=shared)
    try:
        ids = [service.submit(CC.format(src=f"{u}.c", out=out / f"{u}.o"), mode="depend") for u in "ab"]
        assert all(service.wait(rid, "unit", 60).ok for rid in ids)
        ledger = [line.split("\t")[0] for line in (service.cache_dir / "ledger").read_text().splitlines()]
    finally:
        service.close(publish=shared if share else None)
        box.close()
    return ledger


def test_a_run_elsewhere_reuses_what_an_earlier_run_published_and_only_that(repo: Path, tmp_path: Path):
    require(shutil.which("cc") is not None, "a C compiler (cc)")
    shared, first, second = tmp_path / "shared", tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    assert _build(repo, shared, first, share=False) == ["miss", "miss"]
    assert not shared.exists()  # a run that may not publish leaves nothing
    assert _build(repo, shared, first, share=True) == ["miss", "miss"]
    other = tmp_path / "elsewhere" / "repo"  # another run's clone: same files, another folder
    shutil.copytree(repo, other)
    (other / "b.c").write_text("int thrice(int x) { return 3 * x; }\n")
    assert sorted(_build(other, shared, second, share=True)) == ["direct", "miss"]
    assert (second / "a.o").read_bytes() == (first / "a.o").read_bytes()


def test_only_the_caches_own_regular_files_cross_and_no_link_is_followed(tmp_path: Path):
    secret = tmp_path / "host-secret"
    secret.write_text("TOKEN=do-not-share\n")
    run_cache, shared = tmp_path / "run" / "cache", tmp_path / "shared"
    entry = "ab" * 32
    (run_cache / "e").mkdir(parents=True)
    (run_cache / "e" / f"{entry}.json").write_text('{"returncode": 0, "stdout": "", "stderr": ""}')
    os.symlink(secret, run_cache / "e" / f"{'cd' * 32}.o")  # a sandbox's link to a host file
    (run_cache / "e" / "notes.txt").write_text("not an entry")
    (run_cache / "m").mkdir()
    (run_cache / "m" / f"{'ef' * 32}.json").mkdir()  # a folder where a manifest goes
    assert publish(run_cache, shared) == 1
    assert sorted(p.relative_to(shared).as_posix() for p in shared.rglob("*") if p.is_file()) == [
        f"e/{entry}.json"
    ]
    # the shared side is read the same way when a run starts from it
    os.symlink(secret, shared / "e" / f"{'12' * 32}.o")
    fresh = tmp_path / "next" / "cache"
    assert seed(shared, fresh) == 1
    assert all("do-not-share" not in p.read_text() for p in fresh.rglob("*") if p.is_file())


def test_a_shared_cache_past_its_limit_drops_its_oldest_entries_whole(tmp_path: Path):
    run_cache, shared = tmp_path / "run" / "cache", tmp_path / "shared"
    (run_cache / "e").mkdir(parents=True)
    for i, key in enumerate(("a1", "b2", "c3")):
        name = key * 32
        (run_cache / "e" / f"{name}.o").write_bytes(b"\0" * 1000)
        (run_cache / "e" / f"{name}.json").write_text('{"returncode": 0, "stdout": "", "stderr": ""}')
        publish(run_cache, shared, limit=10_000)
        for suffix in (".o", ".json"):  # published one after another: a1 oldest
            os.utime(shared / "e" / f"{name}{suffix}", (1_000_000 + i, 1_000_000 + i))
    (run_cache / "e" / f"{'d4' * 32}.o").write_bytes(b"\0" * 1000)
    (run_cache / "e" / f"{'d4' * 32}.json").write_text("{}")
    publish(run_cache, shared, limit=2_500)
    kept = sorted(p.name[:2] + p.suffix for p in (shared / "e").iterdir())
    assert kept == ["c3.json", "c3.o", "d4.json", "d4.o"]


def test_a_cache_folder_replaced_by_a_link_publishes_nothing_from_where_it_points(tmp_path: Path):
    """The sandbox can write its spool: a link in place of a cache folder (here to a host folder whose
    files are named like entries) is not followed."""
    host = tmp_path / "host-keys"
    host.mkdir()
    (host / f"{'ab' * 32}.json").write_text("TOKEN=do-not-share\n")
    run_cache, shared = tmp_path / "spool" / "cache", tmp_path / "shared"
    run_cache.mkdir(parents=True)
    os.symlink(host, run_cache / "e")
    assert publish(run_cache, shared) == 0
    linked_cache = tmp_path / "spool2" / "cache"
    linked_cache.parent.mkdir()
    os.symlink(tmp_path / "spool" / "cache", linked_cache)
    assert publish(linked_cache, shared) == 0
    assert not [p for p in shared.rglob("*") if p.is_file()]
