"""Results store: versioned schema, DuckDB store, run lifecycle, Parquet export."""
