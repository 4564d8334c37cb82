"""The building blocks of the results schema (store/schema.py): a column with its SQL type,
unit and meaning, and a table of them."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

# SQL types this schema uses and their Arrow equivalents (for fast bulk inserts and Parquet).
ARROW_TYPES: dict[str, pa.DataType] = {
    "VARCHAR": pa.string(),
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "DOUBLE": pa.float64(),
}


@dataclass(frozen=True)
class Column:
    """One column: its SQL type, unit (or "-" when unitless) and a one-line meaning."""

    name: str
    sql_type: str
    unit: str
    description: str
    # Allowed values for enumerated VARCHAR columns; None means any value.
    allowed: tuple[str, ...] | None = None
    # NOT NULL in the DDL and checked before writing.
    required: bool = False

    def __post_init__(self) -> None:
        if self.sql_type not in ARROW_TYPES:
            raise ValueError(f"column {self.name}: unsupported SQL type {self.sql_type!r}")

    @property
    def arrow_type(self) -> pa.DataType:
        return ARROW_TYPES[self.sql_type]

    @property
    def is_json(self) -> bool:
        """JSON documents are stored as text; the writer serialises dicts and lists."""
        return self.name.endswith("_json")


@dataclass(frozen=True)
class Table:
    """A table: ordered columns, optional primary key, and the natural reading order."""

    name: str
    description: str
    columns: tuple[Column, ...]
    primary_key: str | None = None
    # Rows are returned in this order by the readers so results are deterministic.
    order_by: tuple[str, ...] = field(default_factory=tuple)
    # Per-run tables hold rows keyed by run_id and are replaced as a whole by write_run.
    per_run: bool = True

    @property
    def column_names(self) -> list[str]:
        return [column.name for column in self.columns]

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)

    def ddl(self) -> str:
        """CREATE TABLE statement generated from the column definitions."""
        lines = []
        for column in self.columns:
            line = f"    {column.name} {column.sql_type}"
            if column.name == self.primary_key:
                line += " PRIMARY KEY"
            elif column.required:
                line += " NOT NULL"
            lines.append(line)
        return f"CREATE TABLE {self.name} (\n" + ",\n".join(lines) + "\n)"

    def arrow_schema(self, schema_version: int) -> pa.Schema:
        """Arrow schema with units and descriptions as field metadata (kept in Parquet), for
        ``schema_version`` (schema.SCHEMA_VERSION for this code's)."""
        fields = [
            pa.field(
                column.name,
                column.arrow_type,
                nullable=not column.required,
                metadata={"unit": column.unit, "description": column.description},
            )
            for column in self.columns
        ]
        return pa.schema(fields, metadata={"iotsecbench_schema_version": str(schema_version)})
