"""Command-line interface: one module per subcommand, thin."""
