"""Third-party C sources the virtual-MCU firmware builds from, fetched from a package registry
at build time and never committed (``iotsecbench.sources``): mbedTLS 2.28 as vendored by the
``mbedtls-sys-auto`` crate and wolfSSL 5.9 as vendored by the ``wolfssl-sys`` crate
(crates.io), each pinned by version and SHA-256 (the pins are shared with the host builds:
``iotsecbench.sources``) and unpacked once into ``$XDG_CACHE_HOME/iotsecbench/vmcu/sources``.
"""

from __future__ import annotations

from pathlib import Path

from iotsecbench import sources
from iotsecbench.sources import MBEDTLS, WOLFSSL, Archive

ARCHIVES = {archive.name: archive for archive in (MBEDTLS, WOLFSSL)}


def cache_root() -> Path:
    return sources.cache_root() / "vmcu"


def source_dir(archive: Archive) -> Path:
    """The unpacked library (its ``include/`` and ``library/``), fetched now if missing."""
    return sources.unpack(archive, cache_root() / "sources", "the virtual-MCU builds")
