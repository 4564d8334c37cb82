"""Third-party sources fetched from a package registry at build time, never committed.

An ``Archive`` is one crates.io crate, or one PyPI source distribution (fetched with pip, the
registry's own client), pinned by version and SHA-256 (the registry's own checksum);
``unpack`` fetches it once into a cache directory and unpacks it there. Without network the
first use stops with one line naming the address (exit 3); a wrong checksum is corrupt data
(exit 4) and nothing is unpacked. The pins shared by several builds live here:
mbedTLS 2.28 and wolfSSL 5.9.4, which the virtual-MCU firmware (``vmcu.sources``) and the
native agent's ``wolfssl-5.9`` stack (``agents.native.libraries``) build from; the
post-quantum OpenSSL's pin is its build's own (``security.pq_openssl``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.errors import DataError, EnvironmentProblem
from iotsecbench.files import exclusive


@dataclass(frozen=True)
class Archive:
    name: str
    crate: str  # the package's name on its registry
    crate_version: str
    sha256: str
    root: str  # the library's directory inside the crate
    library: str  # what it is, for provenance
    registry: str = "crates.io"  # or PYPI: a source distribution, ``<name>-<version>/`` inside

    @property
    def url(self) -> str:
        if self.registry == PYPI:
            return f"PyPI {self.crate}=={self.crate_version} (source distribution)"
        return (
            f"https://static.crates.io/crates/{self.crate}/{self.crate}-{self.crate_version}.crate"
        )


PYPI = "pypi"


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


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/iotsecbench`` (``~/.cache/iotsecbench``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iotsecbench"


def unpack(archive: Archive, into: Path, purpose: str) -> Path:
    """The archive's library directory under ``into``, fetched and unpacked now if missing;
    ``purpose`` completes the offline error ("the … builds need it once")."""
    unpacked = into / f"{archive.crate}-{archive.crate_version}"
    if (unpacked / ".complete").exists():
        return unpacked / archive.root
    # Another process may be unpacking it now: the rmtree below would pull the files from
    # under a build that already uses them.
    with exclusive(into / f".{unpacked.name}.lock"):
        if not (unpacked / ".complete").exists():
            _fetch_and_unpack(archive, unpacked, purpose)
    return unpacked / archive.root


def _fetch_and_unpack(archive: Archive, unpacked: Path, purpose: str) -> None:
    unpacked.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=unpacked.parent) as scratch:
        try:
            crate = _download(archive, Path(scratch))
        except OSError as error:
            raise EnvironmentProblem(
                f"cannot fetch {archive.library} from {archive.url}: {error} "
                f"({purpose} need it once; then they work offline)"
            ) from None
        digest = hashlib.sha256(crate.read_bytes()).hexdigest()
        if digest != archive.sha256:
            raise DataError(
                f"{archive.url} has SHA-256 {digest}, expected {archive.sha256}: not unpacked"
            )
        with tarfile.open(crate) as bundle:
            bundle.extractall(scratch, filter="data")
        (Path(scratch) / f"{archive.crate}-{archive.crate_version}" / ".complete").touch()
        shutil.rmtree(unpacked, ignore_errors=True)  # an incomplete one (no .complete)
        os.replace(Path(scratch) / f"{archive.crate}-{archive.crate_version}", unpacked)


def _download(archive: Archive, scratch: Path) -> Path:
    """The archive's file in ``scratch``: crates.io over HTTPS, PyPI with ``pip download``."""
    if archive.registry != PYPI:
        crate = scratch / "source.crate"
        with urllib.request.urlopen(archive.url, timeout=60) as response:
            crate.write_bytes(response.read())
        return crate
    name = f"{archive.crate}=={archive.crate_version}"
    try:  # pip prepares the sdist's metadata too (its build requirements, as wheels)
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", name, "--no-binary", archive.crate,
             "--no-deps", "--quiet", "-d", str(scratch / "pip")],
            capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise OSError(f"pip download {name}: no answer in 300 s") from None
    found = sorted((scratch / "pip").glob(f"{archive.crate}-{archive.crate_version}.tar.gz"))
    if result.returncode != 0 or not found:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["no file"]
        raise OSError(f"pip download {name}: {lines[-1]}")
    return found[0]


def source_dir(archive: Archive, purpose: str) -> Path:
    """The archive's library directory in the shared cache (``sources/``), unpacked now if
    missing; ``purpose`` completes the offline error."""
    return unpack(archive, cache_root() / "sources", purpose)
