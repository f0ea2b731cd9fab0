"""Results store (real SQLite, append-only), regressions, clusters, since-tracking, reports."""

import sqlite3

import pytest

from agent.sweep.analysis import clusters, histories, regressions
from agent.sweep.report import dashboard_html, markdown
from agent.sweep.results import STAGES, CellResult, ResultStore
from tests.browser import render

ALL = dict.fromkeys(STAGES, True)
HEADER = {
    "kind": "cuda_header",
    "signature": "cuda_header:csrc/fused.cu:cuda_bf16.h",
    "message": "'cuda_bf16.h' file not found",
}


def _r(key, night, tok=100.0, stages=ALL, failures=()):
    passed = all(stages.values())
    return CellResult(
        cell_key=key,
        night=night,
        sweep="s",
        status="passed" if passed else "failed",
        stages=dict(stages),
        output_tok_s=tok if passed else None,
        failures=list(failures),
        provenance={"framework_commit": "abc", "target": "gfx942"},
    )


def _history(store):
    for night in ("2026-11-28", "2026-11-29", "2026-11-30"):
        store.record(_r("a", night, 100.0 + (night[-1] == "9")))
        store.record(_r("b", night, 50.0))
    store.record(_r("a", "2026-12-01", 80.0))  # slower server
    store.record(
        _r(
            "b",
            "2026-12-01",
            stages={**ALL, "built": False, "loaded": False, "served": False, "benchmarked": False},
            failures=[HEADER],
        )
    )
    return store.results()


def test_store_is_append_only_with_natural_key(tmp_path):
    store = ResultStore(tmp_path / "sweep.sqlite")
    assert store.record(_r("a", "n1", failures=[HEADER]))
    assert not store.record(_r("a", "n1", tok=1.0))  # same cell + night: kept as first written
    assert store.has("a", "n1") and not store.has("a", "n2")
    [back] = store.results()
    assert back.output_tok_s == 100.0 and back.failures[0]["signature"] == HEADER["signature"]
    with (
        sqlite3.connect(tmp_path / "sweep.sqlite") as db,
        pytest.raises(sqlite3.DatabaseError, match="append-only"),
    ):
        db.execute("UPDATE cell_results SET status='passed'")


def test_regressions_flag_lost_stages_and_slow_throughput(tmp_path):
    results = _history(ResultStore(tmp_path / "db.sqlite"))
    found = {(g.cell_key, g.what) for g in regressions(results)}
    assert found == {("a", "throughput"), ("b", "stage_lost")}


def test_small_noise_is_not_a_regression(tmp_path):
    store = ResultStore(tmp_path / "db.sqlite")
    for i, tok in enumerate([100, 98, 101, 97]):
        store.record(_r("a", f"2026-11-2{i}", tok))
    assert regressions(store.results()) == []


def test_clusters_and_since(tmp_path):
    store = ResultStore(tmp_path / "db.sqlite")
    results = _history(store)
    store.record(_r("c", "2026-12-01", stages={**ALL, "built": False}, failures=[HEADER]))
    [cluster] = clusters(store.results())
    assert (cluster.signature, len(cluster.cells), cluster.first_seen, cluster.streak) == (
        HEADER["signature"],
        2,
        "2026-12-01",
        1,
    )
    by_key = {h.cell_key: h for h in histories(results)}
    assert by_key["b"].broken_since == "2026-12-01" and by_key["a"].passing_since == "2026-11-28"


def test_markdown_and_dashboard_render_in_chromium(tmp_path):
    results = _history(ResultStore(tmp_path / "db.sqlite"))
    md = markdown(results, "nightly")
    assert "## Regressions (2)" in md and "broken since 2026-12-01" in md
    page = tmp_path / "dashboard.html"
    page.write_text(dashboard_html(results, "nightly"))
    dom, errors, shot = render(page, tmp_path)
    assert errors == []
    assert 'id="grid"' in dom and "Regressions (2)" in dom and "Failure clusters (1)" in dom
    assert dom.count("<polyline") == 2 and shot.stat().st_size > 10_000


def test_dashboard_never_greens_a_regression_and_links_pivots_and_plots(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCPORT_HOME", str(tmp_path / "home"))
    store = ResultStore(tmp_path / "db.sqlite")
    keys = {"fast": "tiny@main/tiny-a/mi300x/smoke", "slow": "tiny@main/tiny-b/mi355x/smoke"}
    for night, tok in (
        ("2026-11-29", 1000.0),
        ("2026-11-30", 1010.0),
        ("2026-12-01", 120.0),
    ):  # -88% on the 1st
        for name, key in keys.items():
            r = _r(key, night, tok if name == "slow" else 900.0)
            r.provenance = {"framework_commit": "0123456789abcdef", "run_id": f"run-{name}-{night}"}
            r.bench = {"median_tpot_ms": 4.0 if name == "fast" else 30.0}
            store.record(r)
    results = store.results()
    page = tmp_path / "dashboard.html"
    page.write_text(dashboard_html(results, "nightly"))
    dom, errors, shot = render(page, tmp_path)
    assert errors == [] and shot.stat().st_size > 10_000
    row = dom.split("<code>tiny@main/tiny-b/mi355x/smoke</code>")[1].split("</tr>")[0]
    last = row.split("<td")[3]
    assert 'class="regress"' in last and 'class="pass"' not in last and "throughput regression" in last
    assert (
        "0123456789" in last
        and f'href="{(tmp_path / "home/runs/run-slow-2026-12-01/report.html").as_uri()}"' in last
    )
    spark = row.split("<svg")[1]
    assert (
        ">0</text>" in spark and ">1250</text>" in spark and ">120</text>" in spark
    )  # axis, top tick, last value
    pivot = dom.split('id="pivot"')[1].split("</table>")[0]
    assert "<th>mi300x</th><th>mi355x</th>" in pivot and "best 900.0 tok/s" in pivot
    assert '<td class="regress">1/1 passed, 1 regressed' in pivot
    plot = dom.split('id="throughput-latency"')[1].split("</svg>")[0]
    assert plot.count("<circle") == 2 and "median TPOT (ms)" in plot and "output tok/s" in plot
