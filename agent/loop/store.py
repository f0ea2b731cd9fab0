"""Runs table and LangGraph checkpointer, both SQLite files under $ROCPORT_HOME.

runs.sqlite holds one row per `rocport port` run (what `rocport runs` lists); checkpoints.sqlite
is LangGraph's SqliteSaver, one thread per run id, which is what `--resume RUN_ID` continues.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.loop.rundir import rocport_home
from agent.loop.state import RECORDS

if TYPE_CHECKING:
    from langgraph.checkpoint.sqlite import SqliteSaver

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  framework TEXT NOT NULL,
  repo TEXT NOT NULL,
  ref TEXT,
  status TEXT NOT NULL,
  phase TEXT,
  reason TEXT,
  counters TEXT,
  created REAL NOT NULL,
  updated REAL NOT NULL
)
"""


class StoreError(RuntimeError):
    """A SQLite file under $ROCPORT_HOME is damaged; the message says what to do."""


def _damaged(path: Path, exc: sqlite3.DatabaseError, loses: str) -> StoreError:
    return StoreError(
        f"{path} is not a readable SQLite database ({exc}): move it aside "
        f"(mv {path} {path}.bad) and rocport starts a new one; {loses}"
    )


@dataclass
class RunRow:
    """One line of `rocport runs`."""

    run_id: str
    framework: str
    repo: str
    ref: str | None
    status: str
    phase: str | None
    reason: str | None
    counters: dict
    created: float
    updated: float


class RunStore:
    """The runs table. Opens a connection per call: runs are few, processes come and go (kill -9)."""

    def __init__(self, home: Path | None = None):
        self.path = (home or rocport_home()) / "runs.sqlite"
        try:
            with closing(self._connect()) as db, db:
                db.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise _damaged(
                self.path, exc, "run directories under runs/ are kept, but `rocport runs` lists only new runs"
            ) from exc

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def create(self, run_id: str, framework: str, repo: str, ref: str | None) -> None:
        now = time.time()
        with closing(self._connect()) as db, db:
            db.execute(
                "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, framework, repo, ref, "running", "checkout", None, "{}", now, now),
            )

    def update(
        self,
        run_id: str,
        *,
        status: str | None = None,
        phase: str | None = None,
        reason: str | None = None,
        counters: dict | None = None,
    ) -> None:
        sets: list[str] = ["updated=?"]
        args: list[object] = [time.time()]
        for column, value in (("status", status), ("phase", phase), ("reason", reason)):
            if value is not None:
                sets.append(f"{column}=?")
                args.append(value)
        if counters is not None:
            sets.append("counters=?")
            args.append(json.dumps(counters))
        with closing(self._connect()) as db, db:
            # the SET clauses are fixed column names chosen above; every value is a bound parameter
            db.execute(f"UPDATE runs SET {', '.join(sets)} WHERE run_id=?", (*args, run_id))  # noqa: S608

    def get(self, run_id: str) -> RunRow | None:
        with closing(self._connect()) as db:
            row = db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return _row(row) if row else None

    def list(self, limit: int = 50) -> list[RunRow]:
        with closing(self._connect()) as db:
            rows = db.execute("SELECT * FROM runs ORDER BY created DESC LIMIT ?", (limit,)).fetchall()
        return [_row(r) for r in rows]


def _row(row: tuple) -> RunRow:
    data = list(row)
    data[7] = json.loads(data[7] or "{}")
    return RunRow(*data)


def open_checkpointer(home: Path | None = None) -> SqliteSaver:
    """LangGraph's SQLite checkpointer on $ROCPORT_HOME/checkpoints.sqlite (caller closes .conn).
    LangGraph is imported here, not with the module: `rocport runs` and every other reader of the runs
    table would otherwise pay its import (langchain_core, a tenth of a second of CPU) for nothing."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = (home or rocport_home()) / "checkpoints.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
    # only the run state's own record types are rebuilt from a checkpoint (besides LangGraph's safe ones)
    saver = SqliteSaver(conn, serde=JsonPlusSerializer(allowed_msgpack_modules=RECORDS))
    try:
        saver.setup()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise _damaged(path, exc, "earlier runs can then no longer be resumed") from exc
    return saver
