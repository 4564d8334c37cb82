"""The device client firmware (docs/device-client.md): the MQTT client of a microcontroller, in
C, bare metal on a virtual target, in the clear or over TLS 1.2 / 1.3 on a device build of a TLS
library. This module builds it; ``vmcu.device`` runs it and reads what it counted.

One image per *device build* and target:

* ``plain`` — the client without a TLS library (plain MQTT);
* ``mbedtls`` — mbedTLS 3.6 (crates.io ``mbedtls-rs-sys``) with ``client/mbedtls/device_config.h``;
* ``wolfssl`` — wolfSSL 5.9 (crates.io ``wolfssl-sys``) with ``client/wolfssl/user_settings.h``;
* ``wolfssl-pq`` — the same with ML-KEM and ML-DSA (``IOTSB_DEVICE_PQ``): a product that speaks
  post-quantum TLS carries them, one that does not is smaller, so each has its footprint.

The library is compiled once per target and configuration (``build.library_archive``); the
client's own files (``client/*.c``) and the native agent's MQTT codec
(``agents/native/mqtt.c``, compiled unchanged: one codec for both) are linked with it, every
primitive of ``client/wrap_<stack>.c`` wrapped at link time (``-Wl,--wrap``). Images are cached
by a hash of everything they are built from, so an edit rebuilds and a count names its build.
"""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.errors import SpecError
from iotsecbench.files import exclusive
from iotsecbench.security.tls import TlsProfile, parse_profile
from iotsecbench.security.tls.profile import PQ_CERTIFICATES, expand_tls12_ciphers
from iotsecbench.vmcu.build import (
    FIRMWARE_DIR,
    LWC_DIR,
    LinkedLibrary,
    build_digest,
    compile_all,
    footprint,
    harness_includes,
    harness_library,
    library_archive,
    link,
    missing_tools,
    require_tools,
)
from iotsecbench.vmcu.sources import ARCHIVES, TINYAES, cache_root, source_dir
from iotsecbench.vmcu.targets import Target

CLIENT_DIR = Path(__file__).resolve().parent / "client"
# The native agent's MQTT 3.1.1 codec (agents/native/mqtt.c): portable C, built unchanged here
# (a file the build reads, not a Python import: vmcu does not import agents).
CODEC_DIR = Path(__file__).resolve().parents[1] / "agents" / "native"
# of the native agent's files, the headers the firmware compiles
CODEC_HEADERS = ("mqtt.h", "filler.h", "frame.h", "scheme.h", "crypto.h", "crypto_lwc.h",
                 "crypto_kem.h", "stack.h", "agent.h", "tls.h", "heap.h")  # fmt: skip
PQ_DEFINE = "IOTSB_DEVICE_PQ"  # the post-quantum build (wolfssl-pq)
SCHEMES_DEFINE = "IOTSB_DEVICE_SCHEMES"  # the payload schemes' build (mbedtls-scheme)
# The payload schemes' build also has the lightweight ciphers (agents/native/crypto_lwc.c on
# security/schemes/lwc and tiny-AES-c): scheme.c's device-only entries, the same names.
LIGHTWEIGHT_CIPHERS = (
    "aes128-eax",
    "aes256-eax",
    "tinyaes128-ctr-hmac",
    "salsa20-128-blake2b",
    "salsa20-256-blake2b",
    "ascon128v12",
    "speck128-128-ctr-hmac",
    "speck128-256-ctr-hmac",
    "simon128-128-ctr-hmac",
    "simon128-256-ctr-hmac",
)
LWC_SOURCES = ("ascon.c", "salsa20_blake2b.c", "speck_simon.c")
# ... and the block-sizes study's key establishments (scheme.c's device-only AGREEMENTS, on
# mbedTLS 3.6's DHM and RSA-OAEP): finite-field DH in RFC 7919's ffdhe2048, with Z or SHA-256(Z)
# into HKDF, and RSA-OAEP key transport to the receiver's fresh RSA-2048 key.
BLOCK_SIZES_KEY_ESTABLISHMENTS = ("ffdhe2048", "dh-sha256", "rsa-oaep")
# ... and ML-KEM key establishment (the emitter's encapsulation: agents/native/crypto_mlkem.c),
# on wolfSSL 5.9.4's ML-KEM as the primitives' harness builds it (vmcu/firmware/user_settings.h):
# the scheme build links that very archive, which test_virtual_mcu.py checks against NIST's
# ACVP vectors (FIPS 203) on both targets, and it is the ML-KEM the wolfssl-pq TLS build
# counts in its X25519MLKEM768 handshakes. No new source: the wolfssl-sys pin serves both.
MLKEM_KEY_ESTABLISHMENTS = ("mlkem512", "mlkem768", "mlkem1024", "x25519mlkem768")
MLKEM_SOURCE = "crypto_mlkem.c"
MLKEM_LIBRARY = "wolfssl"  # vmcu.build.LIBRARIES: the harness's wolfCrypt
CLIENT_SOURCES = (
    "main.c",
    "config.c",
    "ledger.c",
    "net.c",
    "record.c",
    "board.c",
    "heap.c",
    "clock.c",
    "emitter.c",
    "publish.c",
    "frames.c",
)

# What each library's device configuration compiles to anything (the rest are empty objects).
MBEDTLS_SOURCES = tuple(
    f"library/{name}.c"
    for name in (
        "aes", "asn1parse", "asn1write", "base64", "bignum", "bignum_core", "chacha20",
        "chachapoly", "cipher", "cipher_wrap", "constant_time", "ctr_drbg", "ecdh", "ecdsa",
        "ecp", "ecp_curves", "entropy", "gcm", "hkdf", "md", "oid", "pem", "pk", "pk_ecc",
        "pk_wrap", "pkparse", "platform", "platform_util", "poly1305", "psa_crypto",
        "psa_crypto_aead", "psa_crypto_cipher", "psa_crypto_client",
        "psa_crypto_driver_wrappers_no_static", "psa_crypto_ecp", "psa_crypto_hash",
        "psa_crypto_mac", "psa_crypto_rsa", "psa_crypto_slot_management", "psa_util", "rsa",
        "rsa_alt_helpers", "sha256", "sha512", "ssl_ciphersuites", "ssl_client", "ssl_msg",
        "ssl_tls", "ssl_tls12_client", "ssl_tls13_client", "ssl_tls13_generic",
        "ssl_tls13_keys", "x509", "x509_crt",
    )
)  # fmt: skip
WOLFSSL_SOURCES = (
    *(f"src/{name}.c" for name in ("internal", "keys", "ssl", "tls", "tls13", "wolfio")),
    *(
        f"wolfcrypt/src/{name}.c"
        for name in (
            "aes", "asn", "chacha", "chacha20_poly1305", "coding", "curve25519", "ecc", "error",
            "fe_operations", "hash", "hmac", "kdf", "logging", "memory", "poly1305", "random",
            "rsa", "sha256", "sha512", "signature", "sp_c32", "sp_int", "wc_port", "wolfmath",
        )
    ),
)  # fmt: skip
WOLFSSL_PQ_SOURCES = (
    *WOLFSSL_SOURCES,
    *(f"wolfcrypt/src/{name}.c" for name in ("sha3", "wc_mlkem", "wc_mlkem_poly", "wc_mldsa")),
)


@dataclass(frozen=True)
class DeviceLibrary:
    """A TLS library compiled with a device configuration."""

    label: str  # the archive's name in the cache
    archive: str  # vmcu.sources ARCHIVES key
    sources: tuple[str, ...]  # relative to the archive's root
    includes: tuple[str, ...]  # relative to the archive's root
    config_dir: str  # client/<dir>: the configuration header
    defines: tuple[str, ...]

    def flags(self) -> list[str]:
        root = source_dir(ARCHIVES[self.archive])
        return [
            f"-I{CLIENT_DIR / self.config_dir}",
            *(f"-I{root / include}" for include in self.includes),
            *(f"-D{define}" for define in self.defines),
        ]

    def configs(self) -> list[Path]:
        return sorted((CLIENT_DIR / self.config_dir).glob("*.h"))


MBEDTLS = DeviceLibrary(
    "libmbedtls-device", "mbedtls3", MBEDTLS_SOURCES, ("include", "library"), "mbedtls",
    ('MBEDTLS_CONFIG_FILE="device_config.h"',),
)  # fmt: skip
MBEDTLS_SCHEMES = DeviceLibrary(
    "libmbedtls-device-schemes", "mbedtls3",
    (*MBEDTLS_SOURCES, "library/ccm.c", "library/dhm.c", "library/psa_crypto_ffdh.c"),
    ("include", "library"), "mbedtls", ('MBEDTLS_CONFIG_FILE="device_config.h"', SCHEMES_DEFINE),
)  # fmt: skip
WOLFSSL = DeviceLibrary(
    "libwolfssl-device", "wolfssl", WOLFSSL_SOURCES, ("",), "wolfssl", ("WOLFSSL_USER_SETTINGS",)
)
WOLFSSL_PQ = DeviceLibrary(
    "libwolfssl-device-pq", "wolfssl", WOLFSSL_PQ_SOURCES, ("",), "wolfssl",
    ("WOLFSSL_USER_SETTINGS", PQ_DEFINE),
)  # fmt: skip


def primitives_library(target: Target) -> LinkedLibrary:
    """The device client's mbedTLS 3.6.5 as its payload-scheme build compiles it (its
    device_config.h with the block modes; the same cached archive), for the primitives'
    harness to link in place of mbedTLS 2.28.10 (``bench crypto --target --device-library``):
    a cipher counted there is the code a ``run --target`` seals with."""
    library = MBEDTLS_SCHEMES
    flags = library.flags()
    archive = library_archive(
        target, library.label, ARCHIVES[library.archive], library.sources, flags,
        library.configs(),
    )  # fmt: skip
    return LinkedLibrary(
        archive,
        tuple(flags),
        archive.parent.name,
        f"{ARCHIVES[library.archive].library} with the device client's configuration",
    )


@dataclass(frozen=True)
class DeviceBuild:
    """One device build: the client, with a TLS library or without; ``schemes``: the payload
    schemes of docs/wire-format.md on the library's primitives, without TLS (the native
    agent's scheme.c, crypto_<stack>.c and stack_<stack>.c, compiled unchanged)."""

    name: str
    stack: str  # "none", "mbedtls", "wolfssl"
    library: DeviceLibrary | None
    schemes: bool = False

    @property
    def tls_source(self) -> str:
        return "tls_none.c" if self.schemes else f"tls_{self.stack}.c"

    @property
    def wrap_source(self) -> str | None:
        return f"wrap_{self.stack}.c" if self.library is not None else None

    @property
    def provenance(self) -> str:
        """Whose TLS code the build counts."""
        if self.library is None:
            return "no TLS library (plain MQTT)"
        extra = " with ML-KEM and ML-DSA" if self is DEVICE_BUILDS["wolfssl-pq"] else ""
        extra = ", the payload schemes without TLS" if self.schemes else extra
        return f"{ARCHIVES[self.library.archive].library}{extra}, device configuration"


DEVICE_BUILDS = {
    build.name: build
    for build in (
        DeviceBuild("plain", "none", None),
        DeviceBuild("mbedtls", "mbedtls", MBEDTLS),
        DeviceBuild("wolfssl", "wolfssl", WOLFSSL),
        DeviceBuild("wolfssl-pq", "wolfssl", WOLFSSL_PQ),
        DeviceBuild("mbedtls-scheme", "mbedtls", MBEDTLS_SCHEMES, schemes=True),
    )
}
DEVICE_STACKS = ("mbedtls", "wolfssl")


@dataclass(frozen=True)
class DeviceFirmware:
    """A built image of the device client."""

    target: str
    build: str
    path: Path
    build_hash: str  # of everything the image is built from
    text_bytes: int  # code and read-only data (flash)
    data_bytes: int  # initialised data (flash and RAM)
    bss_bytes: int  # zeroed RAM
    provenance: str

    @property
    def flash_bytes(self) -> int:
        return self.text_bytes + self.data_bytes

    @property
    def static_ram_bytes(self) -> int:
        return self.data_bytes + self.bss_bytes


WRAP_LINE = re.compile(r"^WRAP\(FAMILY_\w+, (\w+),", re.MULTILINE)


def wrapped_symbols(build: DeviceBuild) -> list[str]:
    """The primitives ``build`` wraps: one per WRAP line of its wrap_<stack>.c."""
    if build.wrap_source is None or build.library is None:
        return []
    text = (CLIENT_DIR / build.wrap_source).read_text()
    for define in (PQ_DEFINE, SCHEMES_DEFINE):  # primitives only that build has
        if define not in build.library.defines:
            text = re.sub(rf"#ifdef {define}\n.*?#endif\n", "", text, flags=re.DOTALL)
    return WRAP_LINE.findall(text)


def _sources(build: DeviceBuild) -> list[Path]:
    names = [*CLIENT_SOURCES, build.tls_source, *([build.wrap_source] if build.wrap_source else [])]
    names += ["scheme_shim.c"] if build.schemes else ["scheme_off.c"]
    codec = ["mqtt.c", "filler.c"]
    lightweight = []
    if build.schemes:
        codec += ["scheme.c", f"crypto_{build.stack}.c", f"stack_{build.stack}.c", "crypto_lwc.c",
                  MLKEM_SOURCE]  # fmt: skip
        lightweight = [LWC_DIR / name for name in LWC_SOURCES]
    return [*(CLIENT_DIR / name for name in names), FIRMWARE_DIR / "counted_heap.c",
            *(CODEC_DIR / name for name in codec), *lightweight]  # fmt: skip


def _fetched_sources(build: DeviceBuild) -> list[Path]:
    """Third-party C the client compiles besides its library (fetched at the first build; the
    build hash holds its pinned SHA-256, not its files, so doctor fetches nothing)."""
    return [source_dir(TINYAES) / "aes.c"] if build.schemes else []


def _flags(build: DeviceBuild) -> list[str]:
    library = build.library.flags() if build.library is not None else []
    tinyaes = [f"-I{source_dir(TINYAES)}"] if build.schemes else []  # crypto_lwc.c's "aes.h"
    return [f"-I{CLIENT_DIR}", f"-I{CODEC_DIR}", f"-I{LWC_DIR}", *tinyaes, *library]


@functools.cache  # a process runs one checkout: its sources stay as they were
def build_hash(target: Target, build: DeviceBuild) -> str:
    digest = build_digest(target, build, target.linker_script(), wrapped_symbols(build))
    files = {*_sources(build), *CLIENT_DIR.rglob("*.h"), *(CODEC_DIR / h for h in CODEC_HEADERS)}
    files |= {FIRMWARE_DIR / "counter.h", FIRMWARE_DIR / "counted_heap.h", LWC_DIR / "lwc.h"}
    if build.schemes:  # ML-KEM's wolfCrypt settings (its archive is hashed by its own name)
        files |= {FIRMWARE_DIR / "user_settings.h"}
    for path in sorted(files):
        digest.update(path.name.encode() + path.read_bytes())
    if build.library is not None:
        digest.update(ARCHIVES[build.library.archive].sha256.encode())
    if build.schemes:
        digest.update(TINYAES.sha256.encode() + ARCHIVES[MLKEM_LIBRARY].sha256.encode())
    return str(digest.hexdigest()[:16])


def image_path(target: Target, name: str) -> Path:
    """Where the image of build ``name`` for ``target`` is cached (built or not)."""
    fingerprint = build_hash(target, DEVICE_BUILDS[name])
    return cache_root() / target.name / f"device-{fingerprint}" / f"iotsb-device-{name}.elf"


def readiness(target: Target) -> tuple[bool, str]:
    """Whether ``target`` can run the device client here, and one line saying so (doctor):
    its toolchain and QEMU, and which images are built already (the rest build on first use)."""
    missing = missing_tools(target)
    if missing:
        return False, (
            f"needs {', '.join(missing)} (apt-get install {' '.join(target.packages)}, or "
            "scripts/setup.sh --dev)"
        )
    built = [name for name in DEVICE_BUILDS if image_path(target, name).exists()]
    waiting = [name for name in DEVICE_BUILDS if name not in built]
    text = f"{', '.join(built) or 'no image'} built"
    if waiting:
        text += f"; {', '.join(waiting)} build on first use (minutes)"
    return True, text


def device_firmware(target: Target, name: str) -> DeviceFirmware:
    """The device client image of build ``name`` for ``target``, built now if not cached
    (exit 3 naming the packages when the cross toolchain is missing)."""
    require_tools(target)
    build = DEVICE_BUILDS[name]
    image = image_path(target, name)
    directory = image.parent
    if not image.exists():
        libraries = []
        if build.library is not None:
            library = build.library
            archive = library_archive(
                target, library.label, ARCHIVES[library.archive], library.sources,
                library.flags(), library.configs(),
            )  # fmt: skip
            libraries.append(str(archive))
        if build.schemes:
            libraries.append(str(harness_library(target, MLKEM_LIBRARY)))
        with exclusive(directory / ".lock"):  # a concurrent first use builds it once
            if not image.exists():
                _compile_and_link(target, name, build, libraries, image)
    return DeviceFirmware(
        target.name, name, image, build_hash(target, build), *footprint(target, image),
        build.provenance,
    )  # fmt: skip


def _compile_and_link(
    target: Target, name: str, build: DeviceBuild, libraries: list[str], image: Path
) -> None:
    wraps = tuple(f"-Wl,--wrap={symbol}" for symbol in wrapped_symbols(build))
    with tempfile.TemporaryDirectory(dir=image.parent) as scratch:
        sources = [*_sources(build), *_fetched_sources(build)]
        mlkem = [source for source in sources if source.name == MLKEM_SOURCE]
        sources = [source for source in sources if source not in mlkem]
        objects = compile_all(target, sources, _flags(build), Path(scratch))
        # ML-KEM's glue sees wolfCrypt's headers with the archive's own settings, the rest
        # of the client never does (two libraries' macros apart)
        objects += compile_all(
            target, mlkem, [f"-I{CODEC_DIR}", *harness_includes(MLKEM_LIBRARY)], Path(scratch)
        )
        link(target, objects, libraries, image, f"the {name} device client for {target.name}",
             wraps)  # fmt: skip


PLAIN = "plain"  # the profile name of plain MQTT: CONNECT → CONNACK without TLS


def device_profiles(names: Sequence[str]) -> list[TlsProfile | None]:
    """Profiles by short name, ``plain`` (None) for MQTT without TLS; SpecError for a bad or
    repeated name (checked before anything heavier is imported or started)."""
    profiles = [None if name == PLAIN else parse_profile(name) for name in names]
    spelled = [PLAIN if p is None else p.name for p in profiles]
    twice = sorted({name for name in spelled if spelled.count(name) > 1})
    if twice:
        raise SpecError(f"profile(s) listed twice: {', '.join(twice)}")
    if not profiles:
        raise SpecError("no profile given (--profiles tls1.3/x25519/ecdsa-p256,…, plain)")
    return profiles


def build_of(stack: str, profile: TlsProfile | None, scheme: bool = False) -> str:
    """The device build that runs ``profile`` (None: plain MQTT) on ``stack``; ``scheme``: a
    payload scheme over plain MQTT (device_problem refuses one over TLS)."""
    if scheme:
        return f"{stack}-scheme"
    if profile is None:
        return "plain"
    return "wolfssl-pq" if stack == "wolfssl" and profile.needs_pq_library else stack


# What the device builds negotiate (their configuration headers; docs/device-client.md).
DEVICE_GROUPS = {
    "mbedtls": ("x25519", "secp256r1"),
    "wolfssl": ("x25519", "secp256r1", "X25519MLKEM768", "SecP256r1MLKEM768", "MLKEM768"),
}
DEVICE_CERTIFICATES = {
    "mbedtls": ("rsa2048", "rsa3072", "ecdsa-p256"),
    "wolfssl": ("rsa2048", "rsa3072", "ecdsa-p256", "mldsa44", "mldsa65"),
}
DEVICE_TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                       "TLS_CHACHA20_POLY1305_SHA256")  # fmt: skip
# TLS 1.2: (EC)DHE or RSA key transport with AES-GCM or ChaCha20-Poly1305 (no CBC, no DHE).
DEVICE_TLS12_SUITE = re.compile(
    r"^(ECDHE-(ECDSA|RSA)-)?(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305)$"
)


def device_problem(stack: str, profile: TlsProfile | None) -> str | None:
    """Why the device client cannot run ``profile`` on ``stack`` (one line naming what the
    device build lacks), or None when it can. Checked before anything is built or started."""
    if stack not in DEVICE_STACKS:
        return f"the device client runs on {' or '.join(DEVICE_STACKS)}, not {stack!r}"
    if profile is None:
        return None
    if profile.certificate not in DEVICE_CERTIFICATES[stack]:
        return (
            f"the {stack} device build verifies {', '.join(DEVICE_CERTIFICATES[stack])} "
            f"certificates, not {profile.certificate}"
        )
    if profile.group is not None and profile.group not in DEVICE_GROUPS[stack]:
        return (
            f"the {stack} device build offers the groups {', '.join(DEVICE_GROUPS[stack])}, "
            f"not {profile.group}"
        )
    if profile.resumption:
        return "the device builds keep no session (no tickets, no cache): drop 'resume'"
    if profile.mutual and profile.certificate in PQ_CERTIFICATES:
        return "the device build verifies ML-DSA but does not sign with it: drop 'mutual'"
    if profile.ciphers is not None:
        suites = (
            profile.ciphers.split(":")
            if profile.version == "1.3"
            else [c["name"] for c in expand_tls12_ciphers(profile.ciphers)]
        )
        allowed = (
            (lambda s: s in DEVICE_TLS13_SUITES)
            if profile.version == "1.3"
            else DEVICE_TLS12_SUITE.match
        )
        refused = [suite for suite in suites if not allowed(suite)]
        if refused:
            return (
                f"the device builds have AES-GCM and ChaCha20-Poly1305 suites only, "
                f"not {', '.join(refused)}"
            )
    return None


def require_device(stack: str, profiles: list[TlsProfile | None]) -> None:
    """SpecError (exit 2) for the first profile the device client cannot run on ``stack``."""
    for profile in profiles:
        problem = device_problem(stack, profile)
        if problem is not None:
            name = profile.name if profile is not None else "plain"
            raise SpecError(f"{name} on the {stack} device client: {problem}")


__all__ = [
    "DEVICE_BUILDS",
    "DEVICE_STACKS",
    "PLAIN",
    "DeviceBuild",
    "DeviceFirmware",
    "build_of",
    "device_firmware",
    "device_problem",
    "device_profiles",
    "main",
    "require_device",
    "wrapped_symbols",
]


def main() -> int:
    """Build every device client image for every target this machine can build for
    (``scripts/setup.sh --dev``)."""
    import sys

    from iotsecbench.errors import EnvironmentProblem
    from iotsecbench.vmcu.targets import TARGETS

    status = 0
    for chosen in TARGETS.values():
        for name in DEVICE_BUILDS:
            try:
                image = device_firmware(chosen, name)
            except EnvironmentProblem as error:
                print(f"setup: warning: {error}", file=sys.stderr)
                status = 3
                break
            print(f"setup: device client {name} for {chosen.name}: text {image.text_bytes} B")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
