"""Third-party C sources the virtual-MCU firmware builds from, fetched from a package registry
at build time and never committed: mbedTLS 2.28 as vendored by the ``mbedtls-sys-auto`` crate
and wolfSSL 5.9 as vendored by the ``wolfssl-sys`` crate (crates.io). Each archive is pinned
by version and SHA-256 and unpacked once into the cache
(``$XDG_CACHE_HOME/iotsecbench/vmcu/sources``). Without network the first build stops with one
line naming the address (exit 3); once fetched, builds work offline.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.errors import DataError, EnvironmentProblem


@dataclass(frozen=True)
class Archive:
    name: str
    crate: str
    crate_version: str
    sha256: str
    root: str  # the library's directory inside the crate
    library: str  # what it is, for provenance

    @property
    def url(self) -> str:
        return (
            f"https://static.crates.io/crates/{self.crate}/{self.crate}-{self.crate_version}.crate"
        )


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
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iotsecbench" / "vmcu"


def source_dir(archive: Archive) -> Path:
    """The unpacked library (its ``include/`` and ``library/``), fetched now if missing."""
    unpacked = cache_root() / "sources" / f"{archive.crate}-{archive.crate_version}"
    if (unpacked / ".complete").exists():
        return unpacked / archive.root
    unpacked.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=unpacked.parent) as scratch:
        crate = Path(scratch) / "source.crate"
        try:
            with urllib.request.urlopen(archive.url, timeout=60) as response:
                crate.write_bytes(response.read())
        except OSError as error:
            raise EnvironmentProblem(
                f"cannot fetch {archive.library} from {archive.url}: {error} "
                "(the virtual-MCU builds need it once; then they work offline)"
            ) from None
        digest = hashlib.sha256(crate.read_bytes()).hexdigest()
        if digest != archive.sha256:
            raise DataError(
                f"{archive.url} has SHA-256 {digest}, expected {archive.sha256}: not unpacked"
            )
        with tarfile.open(crate) as bundle:
            bundle.extractall(scratch, filter="data")
        (Path(scratch) / f"{archive.crate}-{archive.crate_version}" / ".complete").touch()
        shutil.rmtree(unpacked, ignore_errors=True)
        os.replace(Path(scratch) / f"{archive.crate}-{archive.crate_version}", unpacked)
    return unpacked / archive.root
