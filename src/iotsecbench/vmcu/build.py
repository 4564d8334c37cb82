"""Building the virtual-MCU firmware: the harness (firmware/harness.c), one primitive's
operations and what they call, cross-compiled for a target with its Debian toolchain and
picolibc, linked with ``--gc-sections`` so only the code a primitive reaches is in its image.

Third-party libraries are compiled once per target into an archive; every image is cached
under ``$XDG_CACHE_HOME/iotsecbench/vmcu/<target>/<hash>/``, the hash (*the build's hash*,
recorded with every count) covering the sources, the flags, the library archive and the
compiler's version, so an edit rebuilds and a count always names the code it counted.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iotsecbench.errors import EnvironmentProblem
from iotsecbench.files import exclusive
from iotsecbench.security import schemes
from iotsecbench.sources import Archive
from iotsecbench.vmcu.primitives import Primitive, primitive
from iotsecbench.vmcu.sources import ARCHIVES, cache_root, source_dir
from iotsecbench.vmcu.targets import COMMON_CFLAGS, Target

PACKAGE_DIR = Path(__file__).resolve().parents[1]
FIRMWARE_DIR = Path(__file__).resolve().parent / "firmware"
LWC_DIR = Path(schemes.__file__).resolve().parent / "lwc"
NATIVE_DIR = PACKAGE_DIR / "agents" / "native"  # the device client's C a primitive shares
HARNESS = ("harness.c", "counted_heap.c")
# The part of mbedTLS the primitives reach (its config: firmware/mbedtls_vmcu_config.h).
MBEDTLS_SOURCES = (
    "aes.c", "gcm.c", "ccm.c", "chacha20.c", "poly1305.c", "chachapoly.c", "cipher.c",
    "cipher_wrap.c", "sha256.c", "md.c", "platform.c", "platform_util.c", "constant_time.c",
    "bignum.c", "ecp.c", "ecp_curves.c", "ecdh.c", "ecdsa.c", "asn1parse.c", "asn1write.c",
    "rsa.c", "rsa_internal.c", "oid.c",
)  # fmt: skip
# wolfCrypt's: the post-quantum primitives, Ed25519 and what they call (firmware/user_settings.h).
WOLFSSL_SOURCES = tuple(
    f"wolfcrypt/src/{name}.c"
    for name in (
        "wc_mlkem", "wc_mlkem_poly", "wc_mldsa", "sha3", "sha256", "sha512", "ed25519",
        "ge_operations", "fe_operations", "hash", "memory", "wc_port", "random", "logging",
        "error",
    )
)  # fmt: skip


@dataclass(frozen=True)
class Library:
    sources: tuple[str, ...]  # relative to the archive's root
    includes: tuple[str, ...]  # relative to the archive's root
    flags: tuple[str, ...]
    config: str  # the firmware/ file that configures it


LIBRARIES = {
    "mbedtls": Library(
        tuple(f"library/{name}" for name in MBEDTLS_SOURCES),
        ("include",),
        ('-DMBEDTLS_CONFIG_FILE="mbedtls_vmcu_config.h"',),
        "mbedtls_vmcu_config.h",
    ),
    "wolfssl": Library(WOLFSSL_SOURCES, ("",), ("-DWOLFSSL_USER_SETTINGS",), "user_settings.h"),
}


@dataclass(frozen=True)
class LinkedLibrary:
    """Another build of the library a primitive links, in place of its own (``bench crypto
    --target --device-library``: the device client's mbedTLS 3.6.5, vmcu.client): its
    archive, the flags its headers need, and what tells it apart in the image's build hash."""

    archive: Path
    flags: tuple[str, ...]
    fingerprint: str  # of its sources, flags and configuration (its archive's cache key)
    provenance: str  # whose code it is, for the counts' provenance


@dataclass(frozen=True)
class Firmware:
    target: str
    primitive: str
    path: Path
    build_hash: str
    text_bytes: int  # code and read-only data (flash)
    data_bytes: int  # initialised data (flash and RAM)
    bss_bytes: int  # zeroed RAM


def missing_tools(target: Target) -> list[str]:
    """The programs this target needs that are not installed."""
    needed = (target.compiler, f"{target.prefix}-ar", f"{target.prefix}-size", target.qemu[0])
    return [tool for tool in needed if shutil.which(tool) is None]


def require_tools(target: Target) -> None:
    missing = missing_tools(target)
    if missing:
        raise EnvironmentProblem(
            f"the {target.name} target needs {', '.join(missing)} "
            f"(apt-get install {' '.join(target.packages)}, or scripts/setup.sh --dev)"
        )


def run_tool(command: list[str], what: str, cwd: Path | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        error = next((line for line in lines if "error" in line), lines[-1] if lines else "?")
        raise EnvironmentProblem(f"building {what} failed: {error.strip()}")


@functools.cache
def compiler_version(target: Target) -> str:
    result = subprocess.run(
        [target.compiler, "--version"], capture_output=True, text=True, check=False
    )
    return result.stdout.splitlines()[0] if result.stdout else "?"


def build_digest(target: Target, *parts: object) -> Any:
    """A hash of what every build for ``target`` depends on, and ``parts``."""
    toolchain = (target.prefix, target.compile_flags, target.link_flags, COMMON_CFLAGS)
    return hashlib.sha256(repr((toolchain, compiler_version(target), parts)).encode())


def harness_includes(library: str | None) -> list[str]:
    """The flags a primitive's files compile with against ``library`` (its configuration
    header's directory, its includes and defines)."""
    flags = [f"-I{FIRMWARE_DIR}", f"-I{LWC_DIR}"]
    if library is not None:
        root, parts = source_dir(ARCHIVES[library]), LIBRARIES[library]
        flags += [*(f"-I{root / include}" for include in parts.includes), *parts.flags]
    return flags


def compile_all(target: Target, sources: list[Path], flags: list[str], into: Path) -> list[Path]:
    """Objects of ``sources`` in ``into``, compiled two at a time (the machine's cores)."""

    def one(source: Path) -> Path:
        obj = into / (source.stem + ".o")
        run_tool(
            [target.compiler, *COMMON_CFLAGS, *target.compile_flags, *flags, "-c", str(source),
             "-o", str(obj)],
            f"{source.name} for {target.name}",
        )  # fmt: skip
        return obj

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(one, sources))


def harness_library(target: Target, name: str) -> Path:
    """The third-party archive ``name`` as the primitives are built with it, for ``target``
    (cached): the device client's payload-schemes build links the wolfCrypt one for ML-KEM."""
    parts = LIBRARIES[name]
    return library_archive(
        target,
        f"lib{name}",
        ARCHIVES[name],
        parts.sources,
        harness_includes(name),
        [FIRMWARE_DIR / parts.config],
    )


def library_archive(
    target: Target,
    label: str,
    archive: Archive,
    sources: tuple[str, ...],
    flags: list[str],
    configs: list[Path],
) -> Path:
    """The static library ``label`` of ``archive``'s ``sources`` (relative to its root),
    compiled for ``target`` with ``flags``, cached under a hash of both and of the
    configuration headers ``configs`` (the device configurations: an edit rebuilds)."""
    root = source_dir(archive)
    # The flags name directories of this checkout (-I…/vmcu/client/wolfssl): hashed without
    # them, so every checkout of the same sources shares one build (the setup's images are
    # keyed without paths too; a test asking for the library must not rebuild it, minutes).
    portable = [flag.replace(str(PACKAGE_DIR), "<iotsecbench>") for flag in flags]
    digest = build_digest(target, archive.sha256, sources, portable)
    for config in configs:
        digest.update(config.read_bytes())
    directory = cache_root() / target.name / f"{label}-{digest.hexdigest()[:16]}"
    library = directory / f"{label}.a"
    if library.exists():
        return library
    with exclusive(directory / ".lock"):  # a concurrent first use builds it once
        if library.exists():
            return library
        with tempfile.TemporaryDirectory(dir=directory) as scratch:
            objects = compile_all(target, [root / f for f in sources], flags, Path(scratch))
            partial = Path(scratch) / library.name
            run_tool([f"{target.prefix}-ar", "rcs", str(partial), *map(str, objects)], library.name)
            os.replace(partial, library)
    return library


def _sources(p: Primitive) -> list[Path]:
    files = [*HARNESS, p.source, *p.extra]
    folders = {"lwc": LWC_DIR, "native": NATIVE_DIR}
    return [
        folders[f.split("/")[0]] / f.split("/", 1)[1] if "/" in f else FIRMWARE_DIR / f
        for f in files
    ]


@functools.cache  # a process runs one checkout: its sources stay as they were
def build_hash(target: Target, p: Primitive, linked: str = "") -> str:
    # What is built (not how it is described): sources, defines, library, memory map; linked:
    # another build of the library (LinkedLibrary.fingerprint), "" for the primitive's own.
    parts = (p.source, p.defines, p.extra, p.library, target.linker_script())
    digest = build_digest(target, *parts, *((linked,) if linked else ()))
    headers = {*FIRMWARE_DIR.glob("*.h"), *LWC_DIR.glob("*.[ch]"), NATIVE_DIR / "crypto_kem.h"}
    for path in sorted({*_sources(p), *headers}):
        digest.update(path.name.encode() + path.read_bytes())
    if p.library is not None:
        digest.update(ARCHIVES[p.library].sha256.encode())
    return digest.hexdigest()[:16]


def firmware(target: Target, name: str, linked: LinkedLibrary | None = None) -> Firmware:
    """The image of primitive ``name`` for ``target``, built now if not cached; ``linked``:
    with that build of its library instead of its own (a primitive without one ignores it)."""
    require_tools(target)
    p = primitive(name)
    linked = linked if p.library is not None else None
    fingerprint = build_hash(target, p, linked.fingerprint if linked else "")
    directory = cache_root() / target.name / fingerprint
    image = directory / f"vmcu-{name}.elf"
    if not image.exists():
        if linked is not None:
            library, flags = [str(linked.archive)], [*harness_includes(None), *linked.flags]
        else:
            library = [str(harness_library(target, p.library))] if p.library else []
            flags = harness_includes(p.library)
        with exclusive(directory / ".lock"):  # a concurrent first use builds it once
            if not image.exists():
                _compile_and_link(target, p, library, flags, image)
    return Firmware(target.name, name, image, fingerprint, *footprint(target, image))


def _compile_and_link(
    target: Target, p: Primitive, library: list[str], includes: list[str], image: Path
) -> None:
    with tempfile.TemporaryDirectory(dir=image.parent) as scratch:
        defines = [f"-D{define}" for define in p.defines]
        objects = compile_all(target, _sources(p), [*includes, *defines], Path(scratch))
        link(target, objects, library, image, f"the {p.name} firmware for {target.name}")


def link(
    target: Target,
    objects: list[Path],
    libraries: list[str],
    image: Path,
    what: str,
    flags: tuple[str, ...] = (),
) -> None:
    """Link ``objects`` and ``libraries`` into ``image`` (atomically) with the board's memory
    map, picolibc and its semihosting start-up."""
    with tempfile.TemporaryDirectory(dir=image.parent) as scratch:
        partial, script = Path(scratch) / image.name, Path(scratch) / "board.ld"
        script.write_text(target.linker_script())
        run_tool(
            [target.compiler, *COMMON_CFLAGS, *target.link_flags, "--oslib=semihost",
             "--crt0=semihost", f"-T{script}", *flags, *map(str, objects), *libraries,
             "-o", str(partial)],
            what,
        )  # fmt: skip
        os.replace(partial, image)


@functools.cache
def footprint(target: Target, image: Path) -> tuple[int, int, int]:
    result = subprocess.run(
        [f"{target.prefix}-size", str(image)], capture_output=True, text=True, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or len(lines) < 2:
        raise EnvironmentProblem(f"size {image} failed: {result.stderr.strip() or '?'}")
    text, data, bss = (int(value) for value in lines[1].split()[:3])
    return text, data, bss
