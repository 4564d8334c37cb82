"""iotsecbench: measure what securing IoT messages costs, on a real broker."""

__version__ = "0.1.0"
__all__ = ["__version__"]
