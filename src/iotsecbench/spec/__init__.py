"""Experiment specifications: pydantic models, TOML loading, presets and matrix expansion."""
