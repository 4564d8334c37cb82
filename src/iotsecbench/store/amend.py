"""Adding to a stored run after it ended: one agent's rows of some per-run tables replaced
(``iotsecbench attach`` puts a power-meter trace beside the run this way).

The run's record file stays the source of truth, so the change goes there first (written
atomically, under the directory's writer lock) and then into the database in one
transaction — exactly how ``write_run`` stores a run, and what ``db rebuild`` reads back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from iotsecbench.errors import SpecError
from iotsecbench.store import schema
from iotsecbench.store.directory import DirectoryLock
from iotsecbench.store.duckdb_store import RECORD_FILENAME, RUNS_DIRNAME, ResultsStore, to_arrow
from iotsecbench.store.rebuild import read_record


def replace_agent_rows(
    results_dir: Path, run_id: str, agent: str, rows: dict[str, list[dict[str, Any]]]
) -> None:
    """Replace ``agent``'s rows of each table in ``rows`` for run ``run_id`` (other agents'
    rows and every other table stay as they are). ValueError for a table that is not per
    run or has no agent column (a bug in the caller)."""
    for name in rows:
        table = schema.TABLES.get(name)
        if table is None or not table.per_run or "agent" not in table.column_names:
            raise ValueError(f"{name} is not a per-run table with an agent column")
    record_path = Path(results_dir) / RUNS_DIRNAME / run_id / RECORD_FILENAME
    if not record_path.is_file():
        raise SpecError(f"run {run_id} has no record file {record_path}")
    with DirectoryLock(results_dir), ResultsStore.open(results_dir) as store:
        record = read_record(record_path)
        tables = dict(record["tables"])
        for name, new_rows in rows.items():
            table = schema.TABLES[name]
            same = pc.fill_null(pc.equal(tables[name]["agent"], agent), False)
            kept = tables[name].filter(pc.invert(same))
            added = to_arrow(table, new_rows, defaults={"run_id": run_id, "agent": agent})
            tables[name] = pa.concat_tables([kept, added.cast(kept.schema)])
        store.replace_run(record_path.parent, run_id, record["run"], tables)
