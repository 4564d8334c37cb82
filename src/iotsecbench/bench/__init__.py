"""Focused microbenchmarks (crypto, handshakes)."""
