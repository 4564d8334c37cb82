"""Reports: figures, tables and the self-contained HTML report."""
