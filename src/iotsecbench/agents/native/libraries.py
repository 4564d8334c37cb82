"""TLS libraries the native agent links that are built here from registry source, not taken
from Debian: the stack ``wolfssl-5.9``, wolfSSL 5.9.4 as the crates.io crate ``wolfssl-sys``
5.3.0 vendors it (pinned by SHA-256 in ``iotsecbench.sources``, the source the virtual-MCU
firmware builds from), configured by ``configs/wolfssl-5.9.h`` (docs/native-agents.md lists
its settings) — a TLS 1.2/1.3 client with ML-KEM groups and ML-DSA certificates.

A build is the library's sources compiled with that configuration into one static archive,
installed with the library's headers and the configuration under
``$XDG_CACHE_HOME/iotsecbench/<stack>-<hash>/`` (``include/``, ``lib/``). The hash covers the
pinned archive, the configuration file, the source list, the flags and the compiler, so
editing the configuration builds a new library beside the old one (a cache is never
rewritten) and every agent program names the library it linked. ``scripts/setup.sh`` builds
it once (``python -m iotsecbench.agents.native.libraries``, about a minute on two cores); a
run never builds it: a missing build is one line and exit 3 (``problem``).
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from iotsecbench import sources
from iotsecbench.errors import DataError, EnvironmentProblem
from iotsecbench.files import exclusive
from iotsecbench.sources import Archive

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
CFLAGS = ("-O2", "-std=gnu11", "-w")  # the library's own warnings are not ours to read


@dataclass(frozen=True)
class SourceLibrary:
    """One TLS library built from a pinned registry archive for the host."""

    stack: str  # the stack factor's name, e.g. "wolfssl-5.9"
    family: str  # whose glue the agent compiles: tls_<family>.c, crypto_<family>.c, …
    archive: Archive
    version: str  # the library's own version, e.g. "5.9.4"
    config: str  # the file in configs/ that configures it
    config_as: str  # the name the library's headers include it by
    defines: tuple[str, ...]  # for the library and for the agent that includes its headers
    headers: tuple[str, ...]  # header directories (relative to the archive's root) installed
    sources: tuple[str, ...]  # relative to the archive's root
    archive_name: str  # the static archive installed in lib/

    @property
    def description(self) -> str:
        return f"{self.archive.library}, configured by {self.config}"


# What configs/wolfssl-5.9.h reaches: the TLS client (src/) and the wolfCrypt algorithms it
# names. misc.c is inlined; the ssl_*.c and x509*.c files are #included by ssl.c.
_WOLFSSL_TLS = ("internal", "keys", "ssl", "tls", "tls13", "wolfio")
_WOLFCRYPT = (
    "aes", "asn", "chacha", "chacha20_poly1305", "coding", "curve25519", "curve448", "dh",
    "ecc", "ed25519", "ed448", "error", "fe_448", "fe_operations", "ge_448", "ge_operations",
    "hash", "hmac", "kdf", "logging", "md5", "memory", "poly1305", "random", "rsa", "sha",
    "sha256", "sha3", "sha512", "signature", "sp_c32", "sp_int", "wc_encrypt", "wc_port",
    "wolfmath", "wc_mlkem", "wc_mlkem_poly", "wc_mldsa",
)  # fmt: skip
WOLFSSL_59 = SourceLibrary(
    stack="wolfssl-5.9",
    family="wolfssl",
    archive=sources.WOLFSSL,
    version="5.9.4",
    config="wolfssl-5.9.h",
    config_as="user_settings.h",
    defines=("WOLFSSL_USER_SETTINGS",),
    headers=("wolfssl",),
    sources=(
        *(f"src/{name}.c" for name in _WOLFSSL_TLS),
        *(f"wolfcrypt/src/{name}.c" for name in _WOLFCRYPT),
    ),
    archive_name="libwolfssl.a",
)
LIBRARIES = {library.stack: library for library in (WOLFSSL_59,)}


@functools.cache
def _compiler() -> str:
    found = subprocess.run(["gcc", "--version"], capture_output=True, text=True, check=False)
    return found.stdout.splitlines()[0] if found.stdout else "?"


@functools.cache  # a process runs one checkout: its configuration stays as it was
def fingerprint(library: SourceLibrary) -> str:
    """What the build depends on, hashed: the cache directory's name carries it."""
    digest = hashlib.sha256(library.archive.sha256.encode())
    digest.update((CONFIG_DIR / library.config).read_bytes())
    digest.update(repr((library.sources, library.defines, CFLAGS, _compiler())).encode())
    return digest.hexdigest()[:16]


def prefix(library: SourceLibrary) -> Path:
    """Where the build is installed (``include/``, ``lib/``)."""
    return sources.cache_root() / f"{library.stack}-{fingerprint(library)}"


def archive_path(library: SourceLibrary) -> Path:
    return prefix(library) / "lib" / library.archive_name


def problem(library: SourceLibrary) -> str | None:
    """Why ``library`` cannot be linked here (one line naming the fix), or None."""
    if shutil.which("gcc") is None:
        return f"{library.stack} needs gcc (apt-get install gcc, or run scripts/setup.sh)"
    if not archive_path(library).is_file():
        return (
            f"{library.archive.library} is not built in {prefix(library)}: run scripts/setup.sh "
            "or python -m iotsecbench.agents.native.libraries"
        )
    return None


def _compile(library: SourceLibrary, source: Path, include: Path, root: Path, out: Path) -> None:
    command = [
        "gcc", *CFLAGS, *(f"-D{d}" for d in library.defines), f"-I{include}", f"-I{root}",
        "-c", str(source), "-o", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if "error" in line]
        raise EnvironmentProblem(
            f"building {library.stack} failed at {source.name}: "
            f"{lines[0].strip() if lines else '?'}"
        )


def build(library: SourceLibrary, echo: bool = True) -> Path:
    """Fetch (once), configure, compile and install ``library``; its install prefix."""
    target = prefix(library)
    if archive_path(library).is_file():
        return target
    if shutil.which("gcc") is None or shutil.which("ar") is None:
        raise EnvironmentProblem(
            f"building {library.stack} needs gcc and ar (apt-get install gcc binutils)"
        )
    root = sources.source_dir(library.archive, f"the {library.stack} builds")
    with exclusive(target.with_name(f".{target.name}.lock")):  # a concurrent use builds once
        if not archive_path(library).is_file():
            _compile_and_install(library, root, target, echo)
    return target


def _compile_and_install(library: SourceLibrary, root: Path, target: Path, echo: bool) -> None:
    with tempfile.TemporaryDirectory(prefix=f"{library.stack}-", dir=target.parent) as scratch:
        staged = Path(scratch) / "prefix"
        include, objects = staged / "include", Path(scratch) / "objects"
        for directory in library.headers:
            shutil.copytree(root / directory, include / directory)
        shutil.copyfile(CONFIG_DIR / library.config, include / library.config_as)
        objects.mkdir()
        if echo:
            print(
                f"{library.stack}: compiling {len(library.sources)} files of "
                f"{library.archive.library} …",
                file=sys.stderr,
                flush=True,
            )
        outputs = [objects / f"{index:02d}-{Path(name).stem}.o" for index, name in
                   enumerate(library.sources)]  # fmt: skip
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            list(
                pool.map(
                    lambda pair: _compile(library, root / pair[0], include, root, pair[1]),
                    zip(library.sources, outputs, strict=True),
                )
            )
        (staged / "lib").mkdir()
        archived = subprocess.run(
            ["ar", "rcs", str(staged / "lib" / library.archive_name), *map(str, outputs)],
            capture_output=True,
            text=True,
            check=False,
        )
        if archived.returncode != 0:
            raise EnvironmentProblem(f"ar {library.archive_name} failed: {archived.stderr.strip()}")
        try:  # atomic; a build that holds no lock (an older checkout) may have finished first
            os.rename(staged, target)
        except OSError:
            if not archive_path(library).is_file():
                raise


def main() -> int:
    """Build every source library (scripts/setup.sh); exit 3 when one cannot be built."""
    status = 0
    for library in LIBRARIES.values():
        try:
            print(f"setup: {library.stack}: {build(library)}")
        except (EnvironmentProblem, DataError, OSError) as error:
            print(f"setup: warning: {library.stack}: {error}", file=sys.stderr)
            status = 3
    return status


if __name__ == "__main__":
    sys.exit(main())
