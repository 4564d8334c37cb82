"""OpenSSL control through ``ctypes``: what Python 3.11's ``ssl`` cannot ask OpenSSL for.

Two settings have no ``ssl`` API and are set on the context's own ``SSL_CTX``: the
key-exchange groups (``SSL_CTX_set1_groups_list``; ``set_ecdh_curve`` only covers TLS 1.2
ECDHE) and the TLS 1.3 suites (``SSL_CTX_set_ciphersuites``); the security level is set
explicitly on both ends instead of inheriting the distribution's default (docs/tls.md).
"""

from __future__ import annotations

import contextlib
import ctypes
import ssl

from iotsecbench.errors import SpecError


class OpenSslContextControl:
    """Sets what Python 3.11's ``ssl`` has no API for on a context's own ``SSL_CTX``.

    CPython's ``_ssl`` context object starts with the ``SSL_CTX *`` after the object header
    (Modules/_ssl.c ``PySSLContext``); the pointer is read there and then *checked* against
    two values Python does expose (options and security level) before anything is changed,
    so a different layout fails loudly instead of writing to the wrong memory. The library
    is the libssl the ``_ssl`` module itself loaded (from /proc/self/maps), so both sides
    share one OpenSSL.
    """

    _SSL_CTRL_SET_GROUPS_LIST = 92  # ssl.h: SSL_CTX_set1_groups_list is SSL_CTX_ctrl(…, 92)

    def __init__(self) -> None:
        library = ctypes.CDLL(self._libssl_path())
        library.SSL_CTX_ctrl.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_long,
            ctypes.c_char_p,
        ]
        library.SSL_CTX_ctrl.restype = ctypes.c_long
        library.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
        library.SSL_CTX_get_options.restype = ctypes.c_uint64
        library.SSL_CTX_get_security_level.argtypes = [ctypes.c_void_p]
        library.SSL_CTX_get_security_level.restype = ctypes.c_int
        library.SSL_CTX_set_security_level.argtypes = [ctypes.c_void_p, ctypes.c_int]
        library.SSL_CTX_set_security_level.restype = None
        library.SSL_CTX_set_ciphersuites.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        library.SSL_CTX_set_ciphersuites.restype = ctypes.c_int
        library.OpenSSL_version_num.restype = ctypes.c_ulong
        if library.OpenSSL_version_num() != ssl.OPENSSL_VERSION_NUMBER:
            raise RuntimeError("the libssl found is not the one Python's ssl module uses")
        self._library = library

    @staticmethod
    def _libssl_path() -> str:
        with contextlib.suppress(OSError), open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if "/libssl.so" in path:
                    return path
        return "libssl.so.3"

    def pointer(self, context: ssl.SSLContext) -> int:
        pointer = ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value
        library = self._library
        if (
            not pointer
            or library.SSL_CTX_get_options(pointer) != int(context.options)
            or library.SSL_CTX_get_security_level(pointer) != context.security_level
        ):
            raise RuntimeError(
                "cannot locate the SSL_CTX of this Python's ssl.SSLContext (CPython 3.11 "
                "layout expected); group and TLS 1.3 suite selection are unavailable"
            )
        return pointer

    def set_groups(self, context: ssl.SSLContext, groups: str) -> None:
        """``SSL_CTX_set1_groups_list``: the groups offered (TLS 1.3 key share, TLS 1.2 ECDHE)."""
        done = self._library.SSL_CTX_ctrl(
            self.pointer(context), self._SSL_CTRL_SET_GROUPS_LIST, 0, groups.encode()
        )
        if done != 1:
            raise SpecError(f"OpenSSL refuses the group list {groups!r}")

    def set_tls13_suites(self, context: ssl.SSLContext, suites: str) -> None:
        """``SSL_CTX_set_ciphersuites``: the TLS 1.3 suites offered."""
        if self._library.SSL_CTX_set_ciphersuites(self.pointer(context), suites.encode()) != 1:
            raise SpecError(f"OpenSSL refuses the TLS 1.3 suites {suites!r}")

    def set_security_level(self, context: ssl.SSLContext, level: int) -> None:
        """``SSL_CTX_set_security_level``, checked through ``context.security_level``."""
        self._library.SSL_CTX_set_security_level(self.pointer(context), level)
        if context.security_level != level:
            raise RuntimeError(f"OpenSSL security level stayed {context.security_level}")


_CONTROL: OpenSslContextControl | None = None


def openssl_control() -> OpenSslContextControl:
    """The process's one ``OpenSslContextControl`` (created on first use)."""
    global _CONTROL
    if _CONTROL is None:
        _CONTROL = OpenSslContextControl()
    return _CONTROL
