"""Focused microbenchmarks of iotsecbench's own parts: ``crypto`` (payload schemes) and
``handshake`` (TLS handshakes against the embedded broker, docs/tls.md)."""

from iotsecbench.bench.handshake import (
    HandshakeBenchmark,
    ProfileResult,
    Statistic,
    run_handshake_benchmark,
)
from iotsecbench.bench.handshake_store import store_results

__all__ = [
    "HandshakeBenchmark",
    "ProfileResult",
    "Statistic",
    "run_handshake_benchmark",
    "store_results",
]
