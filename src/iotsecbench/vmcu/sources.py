"""Third-party C sources the virtual-MCU firmware builds from, fetched from a package registry
at build time and never committed (``iotsecbench.sources``): mbedTLS 2.28 as vendored by the
``mbedtls-sys-auto`` crate (the primitives' counts) and wolfSSL 5.9 as vendored by the
``wolfssl-sys`` crate (crates.io), pinned by version and SHA-256 (the pins are shared with the
host builds: ``iotsecbench.sources``), and the device client's own: mbedTLS 3.6 as vendored by
the ``mbedtls-rs-sys`` crate (its TLS 1.2 and 1.3: 2.28 has no TLS 1.3 client) and tiny-AES-c
from PyPI's ``tinyaes`` source distribution (the payload schemes' tinyaes128-ctr-hmac); each
unpacked once into ``$XDG_CACHE_HOME/iotsecbench/vmcu/sources``.
"""

from __future__ import annotations

from pathlib import Path

from iotsecbench import sources
from iotsecbench.sources import MBEDTLS, PYPI, WOLFSSL, Archive

MBEDTLS_3 = Archive(
    name="mbedtls3",
    crate="mbedtls-rs-sys",
    crate_version="0.3.1",
    sha256="ed3d6fe75492994df511a63da8de669a0c59938ada3345e3d4756aec095d2ffb",
    root="mbedtls",
    library="mbedTLS 3.6.5 (crates.io mbedtls-rs-sys 0.3.1)",
)
# tiny-AES-c as the host's ``tinyaes`` binding ships and compiles it: the device's
# tinyaes128-ctr-hmac runs the same C as the host's.
TINYAES = Archive(
    name="tinyaes",
    crate="tinyaes",
    crate_version="1.1.2",
    sha256="ac045558486ba1832183a41e807d7d8389439d6cfea237dbd70205d6fc6c63ce",
    root="tiny-AES-c",
    library="tiny-AES-c (PyPI tinyaes 1.1.2's source, the host binding's)",
    registry=PYPI,
)
ARCHIVES = {archive.name: archive for archive in (MBEDTLS, MBEDTLS_3, WOLFSSL, TINYAES)}


def cache_root() -> Path:
    return sources.cache_root() / "vmcu"


def source_dir(archive: Archive) -> Path:
    """The unpacked library (its ``include/`` and ``library/``), fetched now if missing."""
    return sources.unpack(archive, cache_root() / "sources", "the virtual-MCU builds")
