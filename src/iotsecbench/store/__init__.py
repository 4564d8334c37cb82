"""Results store: versioned schema, DuckDB store, run lifecycle, Parquet export, rebuild.

The runner writes through :class:`ResultsStore`; the analysis and report read through
``iotsecbench.store.read``. Tables and columns are defined once in ``store/schema.py``.
"""

from iotsecbench.store.duckdb_store import ResultsStore
from iotsecbench.store.schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "ResultsStore"]
