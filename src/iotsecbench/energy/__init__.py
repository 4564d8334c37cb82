"""Device energy model: device profiles with sourced numbers, activity -> current, battery life.

Modules: ``profile`` (load sourced device profiles), ``vocabulary`` (the priced primitives),
``model`` (activity → modelled current, cumulative charge), ``battery`` (battery life,
duty cycle). Pure functions over arrays; the only file access is reading profile TOML files.
This package imports nothing from the project except ``iotsecbench.errors``.
"""
