"""Exporting the results tables to Parquet for other tools (pandas, polars, R, Spark).

One file per table. Each is written under a temporary name and renamed when complete,
because a truncated Parquet file cannot be read at all (``docs/reliability.md``). The
file metadata carries ``iotsecbench_schema_version``; each column carries its unit and
description as field metadata.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pyarrow.parquet as pq

from iotsecbench import signals
from iotsecbench.errors import EnvironmentProblem
from iotsecbench.files import check_output_directory
from iotsecbench.store import schema
from iotsecbench.store.duckdb_store import ResultsStore

# Rows per Arrow batch streamed from DuckDB into the Parquet writer: bounded memory for
# tables of millions of message rows.
BATCH_ROWS = 256_000


def export_parquet(results_dir: Path | str, out_dir: Path | str) -> list[Path]:
    """Write ``<table>.parquet`` for every results table into ``out_dir``; return the paths."""
    out_dir = check_output_directory(Path(out_dir), "--out")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise EnvironmentProblem(f"cannot create {out_dir}: {error.strerror}") from error
    written = []
    # signals.kept: a Ctrl-C while DuckDB streams a table stops the export (read.py's reason)
    with ResultsStore.open(results_dir, read_only=True) as store, signals.kept():
        for name in schema.DATA_TABLES:
            definition = schema.TABLES[name]
            arrow_schema = definition.arrow_schema(schema.SCHEMA_VERSION)
            columns = ", ".join(definition.column_names)
            order = ", ".join(definition.order_by)
            reader = store.connection.sql(
                f"SELECT {columns} FROM {name} ORDER BY {order}"
            ).to_arrow_reader(BATCH_ROWS)
            path = out_dir / f"{name}.parquet"
            temporary = out_dir / f".{name}.parquet.{os.getpid()}.tmp"
            try:
                with pq.ParquetWriter(temporary, arrow_schema) as writer:
                    for batch in reader:
                        # Cast to the declared schema: DuckDB's Arrow output marks every field
                        # nullable and carries no units.
                        writer.write_batch(batch.cast(arrow_schema))
                os.replace(temporary, path)
            except OSError as error:
                with contextlib.suppress(FileNotFoundError):
                    temporary.unlink()
                raise EnvironmentProblem(f"cannot write {path}: {error.strerror}") from error
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    temporary.unlink()
                raise
            written.append(path)
    return written
