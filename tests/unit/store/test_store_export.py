"""Parquet export: one complete file per table, carrying the schema version."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from store_rows import experiment_row, run_row, run_tables

from iotsecbench.store import schema
from iotsecbench.store.duckdb_store import ResultsStore
from iotsecbench.store.export import export_parquet


def test_export_writes_every_table_with_version_metadata(results_dir: Path, tmp_path: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=False)
        store.write_run(run_row("r0", 0), run_tables(), results_dir / "runs" / "r0")
    out = tmp_path / "parquet"
    paths = export_parquet(results_dir, out)
    assert sorted(p.name for p in paths) == sorted(f"{n}.parquet" for n in schema.DATA_TABLES)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in paths)  # no temps
    for path in paths:
        table = pq.read_table(path)
        assert table.schema.metadata[b"iotsecbench_schema_version"] == b"10"
        assert table.column_names == schema.TABLES[path.stem].column_names
    messages = pq.read_table(out / "messages.parquet")
    assert messages.column("seq").to_pylist() == [0, 1, 2]
    assert messages.column("t_delivered_ns").to_pylist()[1] is None
    assert messages.schema.field("t_created_ns").metadata[b"unit"] == b"ns (monotonic)"
    # Exporting again replaces the files.
    assert export_parquet(results_dir, out) == paths
