"""OpenSSL 3.5, the TLS library with post-quantum algorithms, built from a package registry.

Debian 12's OpenSSL 3.0 (what mosquitto and Python's ``ssl`` link) has neither ML-KEM nor
ML-DSA; OpenSSL 3.5 (the first LTS release with both, and with the X25519MLKEM768 TLS group)
is ABI-compatible with it (``libssl.so.3``). ``build()`` fetches OpenSSL 3.5.5 as the crates.io
crate ``openssl-src`` vendors it (pinned by SHA-256, ``iotsecbench.sources``), builds the shared
libraries and the ``openssl`` tool once into ``$XDG_CACHE_HOME/iotsecbench/openssl-3.5.5``
(``python -m iotsecbench.security.pq_openssl``; scripts/setup.sh runs it). The crate leaves
out ``util/mkdef.pl`` (it builds static libraries only), so our own ``openssl_mkdef.pl`` writes
the shared libraries' version script.

Two users: the ``openssl-3.5`` TLS stack (mosquitto and the Python agents started with
``library_environment()``, so both ends load this libssl — docs/post-quantum.md), and ML-KEM-512
for the payload key establishments (``mlkem``: ``cryptography`` ships ML-KEM-768 and -1024 only),
through ``ctypes`` on this libcrypto loaded beside the process's own.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from iotsecbench import sources
from iotsecbench.errors import EnvironmentProblem
from iotsecbench.files import exclusive
from iotsecbench.sources import Archive

VERSION = "3.5.5"
ARCHIVE = Archive(
    name="openssl",
    crate="openssl-src",
    crate_version="300.5.5+3.5.5",
    sha256="3f1787d533e03597a7934fd0a765f0d28e94ecc5fb7789f8053b1e699a56f709",
    root="openssl",
    library=f"OpenSSL {VERSION} (crates.io openssl-src 300.5.5+3.5.5)",
)
# FIPS 203 Table 3: (encapsulation key, ciphertext) bytes per parameter set.
MLKEM_SIZES = {512: (800, 768), 768: (1184, 1088), 1024: (1568, 1568)}
_SHARED_KEY_BYTES = 32
_MKDEF = Path(__file__).with_name("openssl_mkdef.pl")


def prefix() -> Path:
    """Where the build is installed (``IOTSECBENCH_OPENSSL_PQ`` overrides)."""
    override = os.environ.get("IOTSECBENCH_OPENSSL_PQ")
    return Path(override) if override else sources.cache_root() / f"openssl-{VERSION}"


def problem() -> str | None:
    """Why OpenSSL 3.5 cannot be used here (one line naming the fix), or None."""
    if not (prefix() / "lib" / "libssl.so.3").is_file():
        return (
            f"OpenSSL {VERSION} (post-quantum TLS, ML-KEM-512) is not built in {prefix()}: "
            "run scripts/setup.sh or python -m iotsecbench.security.pq_openssl"
        )
    return None


def require() -> Path:
    """The install prefix; EnvironmentProblem (exit 3) when it is not built."""
    why = problem()
    if why is not None:
        raise EnvironmentProblem(why)
    return prefix()


def library_environment(environment: dict[str, str] | None = None) -> dict[str, str]:
    """``environment`` (default: ours) for a child that must load OpenSSL 3.5's libssl and
    libcrypto instead of the system's (mosquitto, the Python agents)."""
    environment = dict(os.environ if environment is None else environment)
    library = str(require() / "lib")
    earlier = environment.get("LD_LIBRARY_PATH")
    environment["LD_LIBRARY_PATH"] = f"{library}:{earlier}" if earlier else library
    return environment


def openssl_tool() -> Path:
    """The ``openssl`` program of the build (run it with ``library_environment()``)."""
    return require() / "bin" / "openssl"


def build(jobs: int | None = None, echo: bool = True) -> Path:
    """Fetch, configure, build and install OpenSSL 3.5.5 once; the install prefix."""
    target = prefix()
    if problem() is None:
        return target
    with exclusive(target.with_name(f".{target.name}.lock")):  # one build at a time
        if problem() is None:
            return target
        _configure_make_install(target, jobs, echo)
    return target


def _configure_make_install(target: Path, jobs: int | None, echo: bool) -> None:
    source = sources.source_dir(ARCHIVE, "post-quantum TLS builds")
    shutil.copyfile(_MKDEF, source / "util" / "mkdef.pl")
    with tempfile.TemporaryDirectory(prefix="iotsb-openssl-") as scratch:
        steps = [
            [str(source / "Configure"), f"--prefix={target}", "--libdir=lib",
             f"--openssldir={target}/ssl", "shared", "no-module", "no-legacy", "no-tests",
             "no-docs"],
            ["make", f"-j{jobs or os.cpu_count() or 1}", "build_sw"],
            ["make", "install_sw"],
        ]  # fmt: skip
        for step in steps:
            if echo:
                print(f"openssl {VERSION}: {' '.join(step[:2])} …", file=sys.stderr, flush=True)
            done = subprocess.run(step, cwd=scratch, capture_output=True, text=True)
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise EnvironmentProblem(
                    f"building OpenSSL {VERSION} failed at {step[0]}: {' | '.join(tail)}"
                )


# --- ML-KEM through libcrypto's EVP interface (ctypes) ---------------------------------------

_VOID = ctypes.c_void_p
_SIZE = ctypes.c_size_t


class _Param(ctypes.Structure):  # OSSL_PARAM (openssl/core.h)
    _fields_ = [
        ("key", ctypes.c_char_p),
        ("data_type", ctypes.c_uint),
        ("data", _VOID),
        ("data_size", _SIZE),
        ("return_size", _SIZE),
    ]


_OCTET_STRING = 5  # OSSL_PARAM_OCTET_STRING


def _octets(name: bytes, value: bytes) -> tuple[Any, Any]:
    """A one-entry OSSL_PARAM array (and the buffer it points into, kept alive)."""
    buffer = ctypes.create_string_buffer(value, len(value))
    params = (_Param * 2)(
        _Param(name, _OCTET_STRING, ctypes.cast(buffer, _VOID), len(value), 0), _Param()
    )
    return params, buffer


@cache
def _libcrypto() -> Any:
    """OpenSSL 3.5's libcrypto, loaded privately beside the process's own (RTLD_LOCAL: its
    symbols bind to itself, the system's 3.0 stays what ``ssl`` and ``hashlib`` use)."""
    library = ctypes.CDLL(str(require() / "lib" / "libcrypto.so.3"))
    signatures = {
        "EVP_PKEY_CTX_new_from_name": (_VOID, [_VOID, ctypes.c_char_p, ctypes.c_char_p]),
        "EVP_PKEY_CTX_new_from_pkey": (_VOID, [_VOID, _VOID, ctypes.c_char_p]),
        "EVP_PKEY_CTX_free": (None, [_VOID]),
        "EVP_PKEY_CTX_set_params": (ctypes.c_int, [_VOID, _VOID]),
        "EVP_PKEY_keygen_init": (ctypes.c_int, [_VOID]),
        "EVP_PKEY_generate": (ctypes.c_int, [_VOID, ctypes.POINTER(_VOID)]),
        "EVP_PKEY_free": (None, [_VOID]),
        "EVP_PKEY_get_raw_public_key": (ctypes.c_int, [_VOID, _VOID, ctypes.POINTER(_SIZE)]),
        "EVP_PKEY_get_raw_private_key": (ctypes.c_int, [_VOID, _VOID, ctypes.POINTER(_SIZE)]),
        "EVP_PKEY_new_raw_public_key_ex": (
            _VOID, [_VOID, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _SIZE]),
        "EVP_PKEY_new_raw_private_key_ex": (
            _VOID, [_VOID, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _SIZE]),
        "EVP_PKEY_encapsulate_init": (ctypes.c_int, [_VOID, _VOID]),
        "EVP_PKEY_encapsulate": (
            ctypes.c_int, [_VOID, _VOID, ctypes.POINTER(_SIZE), _VOID, ctypes.POINTER(_SIZE)]),
        "EVP_PKEY_decapsulate_init": (ctypes.c_int, [_VOID, _VOID]),
        "EVP_PKEY_decapsulate": (
            ctypes.c_int, [_VOID, _VOID, ctypes.POINTER(_SIZE), ctypes.c_char_p, _SIZE]),
        "OpenSSL_version": (ctypes.c_char_p, [ctypes.c_int]),
    }  # fmt: skip
    for name, (restype, argtypes) in signatures.items():
        function = getattr(library, name)
        function.restype, function.argtypes = restype, argtypes
    return library


def library_version() -> str:
    """The loaded libcrypto's version line, e.g. ``OpenSSL 3.5.5 27 Jan 2026``."""
    return _libcrypto().OpenSSL_version(0).decode()


class _Key:
    """An ``EVP_PKEY`` owned by Python (freed with the object)."""

    def __init__(self, algorithm: bytes, pointer: int | None) -> None:
        if not pointer:
            raise ValueError(f"OpenSSL refuses this {algorithm.decode()} key")
        self._algorithm, self._pointer = algorithm, pointer

    def __del__(self) -> None:
        if getattr(self, "_pointer", None):
            _libcrypto().EVP_PKEY_free(self._pointer)

    def _raw(self, getter: str, size: int) -> bytes:
        buffer, length = ctypes.create_string_buffer(size), _SIZE(size)
        if getattr(_libcrypto(), getter)(self._pointer, buffer, ctypes.byref(length)) != 1:
            raise ValueError(f"OpenSSL cannot export this {self._algorithm.decode()} key")
        return buffer.raw[: length.value]

    def _operation(self, init: str, params: Any = None) -> int:
        library = _libcrypto()
        context = library.EVP_PKEY_CTX_new_from_pkey(None, self._pointer, None)
        if not context or getattr(library, init)(context, params) != 1:
            library.EVP_PKEY_CTX_free(context)
            raise ValueError(f"OpenSSL cannot start {init} with {self._algorithm.decode()}")
        return context

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._algorithm.decode()}>"


def _mlkem_classes(level: int) -> tuple[type, type]:
    algorithm = f"ML-KEM-{level}".encode()
    public_bytes, ciphertext_bytes = MLKEM_SIZES[level]

    class PublicKey(_Key):
        @classmethod
        def from_public_bytes(cls, data: bytes) -> PublicKey:
            if len(data) != public_bytes:
                raise ValueError(f"an ML-KEM-{level} key has {public_bytes} bytes")
            library = _libcrypto()
            return cls(algorithm, library.EVP_PKEY_new_raw_public_key_ex(
                None, algorithm, None, bytes(data), len(data)))  # fmt: skip

        def public_bytes_raw(self) -> bytes:
            return self._raw("EVP_PKEY_get_raw_public_key", public_bytes)

        def encapsulate(self, ikme: bytes | None = None) -> tuple[bytes, bytes]:
            """(shared key, ciphertext); ``ikme`` (32 bytes, FIPS 203's m) only for KATs."""
            library = _libcrypto()
            params, _buffer = _octets(b"ikme", ikme) if ikme is not None else (None, None)
            context = self._operation("EVP_PKEY_encapsulate_init", params)
            try:
                wrapped = ctypes.create_string_buffer(ciphertext_bytes)
                shared = ctypes.create_string_buffer(_SHARED_KEY_BYTES)
                wrapped_length, shared_length = _SIZE(ciphertext_bytes), _SIZE(_SHARED_KEY_BYTES)
                lengths = ctypes.byref(wrapped_length), ctypes.byref(shared_length)
                encapsulate = library.EVP_PKEY_encapsulate
                done = encapsulate(context, wrapped, lengths[0], shared, lengths[1])
                if done != 1:
                    raise ValueError(f"ML-KEM-{level} encapsulation failed")
                return shared.raw[: shared_length.value], wrapped.raw[: wrapped_length.value]
            finally:
                library.EVP_PKEY_CTX_free(context)

    class PrivateKey(_Key):
        @classmethod
        def generate(cls, seed: bytes | None = None) -> PrivateKey:
            """A fresh key, or FIPS 203's deterministic one for ``seed`` = d || z (KATs)."""
            library = _libcrypto()
            context = library.EVP_PKEY_CTX_new_from_name(None, algorithm, None)
            try:
                pointer = _VOID()
                params, _buffer = _octets(b"seed", seed) if seed is not None else (None, None)
                if (
                    library.EVP_PKEY_keygen_init(context) != 1
                    or (
                        params is not None and library.EVP_PKEY_CTX_set_params(context, params) != 1
                    )
                    or library.EVP_PKEY_generate(context, ctypes.byref(pointer)) != 1
                ):
                    raise ValueError(f"ML-KEM-{level} key generation failed")
                return cls(algorithm, pointer.value)
            finally:
                library.EVP_PKEY_CTX_free(context)

        @classmethod
        def from_private_bytes(cls, data: bytes) -> PrivateKey:
            """The expanded decapsulation key of FIPS 203 (KATs)."""
            library = _libcrypto()
            return cls(algorithm, library.EVP_PKEY_new_raw_private_key_ex(
                None, algorithm, None, bytes(data), len(data)))  # fmt: skip

        def private_bytes_raw(self) -> bytes:
            return self._raw("EVP_PKEY_get_raw_private_key", 3168 + 32)

        def public_key(self) -> PublicKey:
            return PublicKey.from_public_bytes(self._raw("EVP_PKEY_get_raw_public_key", 1568))

        def decapsulate(self, ciphertext: bytes) -> bytes:
            library = _libcrypto()
            if len(ciphertext) != ciphertext_bytes:
                raise ValueError(f"an ML-KEM-{level} ciphertext has {ciphertext_bytes} bytes")
            context = self._operation("EVP_PKEY_decapsulate_init")
            try:
                shared = ctypes.create_string_buffer(_SHARED_KEY_BYTES)
                length = _SIZE(_SHARED_KEY_BYTES)
                done = library.EVP_PKEY_decapsulate(
                    context, shared, ctypes.byref(length), bytes(ciphertext), len(ciphertext)
                )
                if done != 1:
                    raise ValueError(f"ML-KEM-{level} decapsulation failed")
                return shared.raw[: length.value]
            finally:
                library.EVP_PKEY_CTX_free(context)

    PrivateKey.__name__, PublicKey.__name__ = f"MlKem{level}PrivateKey", f"MlKem{level}PublicKey"
    return PrivateKey, PublicKey


@cache
def mlkem(level: int) -> tuple[type, type]:
    """(private key class, public key class) of ML-KEM-``level`` on OpenSSL 3.5, with the
    methods ``cryptography``'s ML-KEM classes have (generate, public_key, public_bytes_raw,
    from_public_bytes, encapsulate, decapsulate); EnvironmentProblem when it is not built."""
    require()
    return _mlkem_classes(level)


if __name__ == "__main__":
    try:
        print(build())
    except (EnvironmentProblem, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(3)
