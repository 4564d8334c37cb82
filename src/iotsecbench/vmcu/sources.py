"""Third-party C sources the virtual-MCU firmware builds from, fetched from a package registry
at build time and never committed (``iotsecbench.sources``): mbedTLS 2.28 as vendored by the
``mbedtls-sys-auto`` crate and wolfSSL 5.9 as vendored by the ``wolfssl-sys`` crate
(crates.io), each pinned by version and SHA-256 and unpacked once into
``$XDG_CACHE_HOME/iotsecbench/vmcu/sources``.
"""

from __future__ import annotations

from pathlib import Path

from iotsecbench import sources
from iotsecbench.sources import Archive

MBEDTLS = Archive(
    name="mbedtls",
    crate="mbedtls-sys-auto",
    crate_version="2.28.15",
    sha256="2fdbd15978db1dec7592cf8864094bcf6f7a101d7f84af15c2423967079982c1",
    root="vendor",
    library="mbedTLS 2.28.10 (crates.io mbedtls-sys-auto 2.28.15)",
)
WOLFSSL = Archive(
    name="wolfssl",
    crate="wolfssl-sys",
    crate_version="5.3.0",
    sha256="e04fb531435ec8ba1852ee9df66ab351cdb1e3aec1da4013787ae93efa3adac6",
    root="wolfssl-src",
    library="wolfSSL 5.9.4 (crates.io wolfssl-sys 5.3.0)",
)
ARCHIVES = {archive.name: archive for archive in (MBEDTLS, WOLFSSL)}


def cache_root() -> Path:
    return sources.cache_root() / "vmcu"


def source_dir(archive: Archive) -> Path:
    """The unpacked library (its ``include/`` and ``library/``), fetched now if missing."""
    return sources.unpack(archive, cache_root() / "sources", "the virtual-MCU builds")
