"""Upgrading results databases made by older schema versions, one step at a time.

``MIGRATIONS[N]`` turns a version N-1 database into version N (pyperf and asv upgrade old
result files on load the same way). There are no steps yet: version 1 is the first release.
When the schema changes, add ``migrate_to_N(connection)`` here and register it.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from iotsecbench.errors import DataError
from iotsecbench.store import schema

Migration = Callable[[duckdb.DuckDBPyConnection], None]

MIGRATIONS: dict[int, Migration] = {}


def check_readable(version: int, where: str) -> None:
    """Refuse results made by a newer iotsecbench: we cannot know what their columns mean."""
    if version > schema.SCHEMA_VERSION:
        raise DataError(
            f"{where} uses results schema version {version}, newer than this iotsecbench "
            f"understands (version {schema.SCHEMA_VERSION}); upgrade iotsecbench to read it"
        )
    if version < 0:
        raise DataError(f"{where} records an invalid results schema version {version}")


def steps_from(version: int, where: str) -> list[tuple[int, Migration]]:
    """The migrations that take ``version`` to the current version, in order."""
    check_readable(version, where)
    steps = []
    for target in range(version + 1, schema.SCHEMA_VERSION + 1):
        step = MIGRATIONS.get(target)
        if step is None:
            raise DataError(
                f"{where} uses results schema version {version}, which this iotsecbench "
                f"cannot upgrade (no migration to version {target})"
            )
        steps.append((target, step))
    return steps


def upgrade(connection: duckdb.DuckDBPyConnection, version: int, where: str) -> int:
    """Apply every step from ``version`` to the current one in one transaction; return it."""
    steps = steps_from(version, where)
    if not steps:
        return version
    connection.execute("BEGIN TRANSACTION")
    try:
        for target, step in steps:
            step(connection)
            connection.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(target)]
            )
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("CHECKPOINT")
    return schema.SCHEMA_VERSION
