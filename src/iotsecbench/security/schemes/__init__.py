"""Payload schemes: one module per family, all built on ``base.PayloadScheme``."""
