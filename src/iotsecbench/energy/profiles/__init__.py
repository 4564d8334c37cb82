"""Packaged device profiles (TOML data files read by iotsecbench.energy.profile)."""
