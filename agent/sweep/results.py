"""Sweep results in SQLite: append-only, one row per (cell key, night), failures beside it."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path

STAGES = ("built", "loaded", "served", "benchmarked")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cell_results (
  night TEXT NOT NULL,
  cell_key TEXT NOT NULL,
  sweep TEXT NOT NULL,
  status TEXT NOT NULL,
  built INTEGER NOT NULL, loaded INTEGER NOT NULL, served INTEGER NOT NULL, benchmarked INTEGER NOT NULL,
  output_tok_s REAL,
  bench_json TEXT,
  patches_json TEXT,
  provenance_json TEXT NOT NULL,
  reason TEXT,
  started REAL, finished REAL,
  PRIMARY KEY (cell_key, night)
);
CREATE TABLE IF NOT EXISTS cell_failures (
  night TEXT NOT NULL,
  cell_key TEXT NOT NULL,
  kind TEXT NOT NULL,
  signature TEXT NOT NULL,
  message TEXT,
  file TEXT
);
CREATE INDEX IF NOT EXISTS failures_by_signature ON cell_failures(signature);
CREATE TRIGGER IF NOT EXISTS results_append_only BEFORE UPDATE ON cell_results
BEGIN SELECT RAISE(ABORT, 'cell_results is append-only'); END;
"""


@dataclass
class CellResult:
    """What one cell reached on one night, and why it stopped where it did."""

    cell_key: str
    night: str
    sweep: str
    status: str
    """passed (every stage reached), failed, or error (rocport itself could not run the cell)."""
    stages: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(STAGES, False))
    output_tok_s: float | None = None
    """Output tokens per second of the measured window (tools.bench output_throughput)."""
    bench: dict | None = None
    patches: list[dict] = field(default_factory=list)
    failures: list[dict] = field(default_factory=list)
    """Failure dicts (kind, signature, message, file)."""
    provenance: dict = field(default_factory=dict)
    """framework commit, image id, compiler/ROCm version, target, rocport version."""
    reason: str = ""
    started: float = 0.0
    finished: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


class ResultStore:
    """The sweep database. A connection per call keeps it safe across pool and Ray workers."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db, db:
            db.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60)
        db.row_factory = sqlite3.Row
        return db

    def has(self, cell_key: str, night: str) -> bool:
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT 1 FROM cell_results WHERE cell_key=? AND night=?", (cell_key, night)
            ).fetchone()
        return row is not None

    def record(self, result: CellResult) -> bool:
        """Insert a cell's result; False (and nothing written) when that cell and night exist already."""
        with closing(self._connect()) as db, db:
            cur = db.execute(
                "INSERT OR IGNORE INTO cell_results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    result.night,
                    result.cell_key,
                    result.sweep,
                    result.status,
                    *(int(bool(result.stages.get(s))) for s in STAGES),
                    result.output_tok_s,
                    json.dumps(result.bench) if result.bench is not None else None,
                    json.dumps(result.patches),
                    json.dumps(result.provenance),
                    result.reason,
                    result.started,
                    result.finished,
                ),
            )
            if cur.rowcount == 0:
                return False
            db.executemany(
                "INSERT INTO cell_failures VALUES (?,?,?,?,?,?)",
                [
                    (
                        result.night,
                        result.cell_key,
                        f.get("kind", "unknown"),
                        f.get("signature", ""),
                        f.get("message", ""),
                        f.get("file"),
                    )
                    for f in result.failures
                ],
            )
        return True

    def nights(self, sweep: str | None = None) -> list[str]:
        where = " WHERE sweep=?" if sweep else ""  # the sweep itself is a bound parameter
        q = f"SELECT DISTINCT night FROM cell_results{where} ORDER BY night"  # noqa: S608  # noqa: S608
        with closing(self._connect()) as db:  # q is built from fixed strings; the sweep is a bound parameter
            return [r[0] for r in db.execute(q, (sweep,) if sweep else ())]

    def results(self, sweep: str | None = None) -> list[CellResult]:
        """Every stored result, oldest night first, with its failures."""
        where = " WHERE sweep=?" if sweep else ""  # the sweep itself is a bound parameter
        q = f"SELECT * FROM cell_results{where} ORDER BY night, cell_key"  # noqa: S608
        with closing(self._connect()) as db:
            rows = db.execute(q, (sweep,) if sweep else ()).fetchall()
            fails: dict[tuple[str, str], list[dict]] = {}
            for f in db.execute("SELECT * FROM cell_failures"):
                fails.setdefault((f["cell_key"], f["night"]), []).append(
                    {
                        "kind": f["kind"],
                        "signature": f["signature"],
                        "message": f["message"],
                        "file": f["file"],
                    }
                )
        return [
            CellResult(
                cell_key=r["cell_key"],
                night=r["night"],
                sweep=r["sweep"],
                status=r["status"],
                stages={s: bool(r[s]) for s in STAGES},
                output_tok_s=r["output_tok_s"],
                bench=json.loads(r["bench_json"]) if r["bench_json"] else None,
                patches=json.loads(r["patches_json"] or "[]"),
                failures=fails.get((r["cell_key"], r["night"]), []),
                provenance=json.loads(r["provenance_json"]),
                reason=r["reason"] or "",
                started=r["started"] or 0.0,
                finished=r["finished"] or 0.0,
            )
            for r in rows
        ]
