"""``python -m iotsecbench`` runs the command-line interface."""

from iotsecbench.cli.app import main

main()
