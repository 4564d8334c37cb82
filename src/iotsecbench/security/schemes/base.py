"""The payload-scheme protocol: wire framing, sequence counters, replay window, error mapping.

``PayloadScheme`` is a template method (docs/style.md #7). The base class owns everything
that must be identical across schemes and is easy to get wrong once per scheme:

* the versioned wire header ``version(1) | scheme_id(1) [| seq(8)]`` and its parsing,
* the per-direction sequence counter and the refusal to ever reuse a (key, nonce) pair,
* the receiver's 64-entry sliding replay window (RFC 4303 §3.4.3),
* mapping every backend failure (pyca ``InvalidTag``, pycryptodome ``ValueError("MAC check
  failed")``, PyNaCl ``CryptoError``, ...) onto one ``AuthenticationError`` and every
  unparsable input onto ``MalformedMessageError``, so the receiver loop never depends on the
  backend and never sees ``IndexError``/``ValueError``.

A variant declares its attributes and implements only the cipher step: ``_cipher_state``
(key schedule, once per sealer/opener), ``_seal_body`` and ``_open_body``. The byte layout is
documented in ``docs/wire-format.md``.
"""

from __future__ import annotations

import functools
import os
import types
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from cryptography.exceptions import InvalidSignature, InvalidTag

from iotsecbench.security.properties import Provenance, SecurityProperties

WIRE_VERSION = 1  # first byte of every framed message; bump on any layout change
DIRECTIONS = ("e2r", "r2e")  # emitter→receiver, receiver→emitter
SESSION_ID_BYTES = 8
SEQ_BYTES = 8
MAX_SEQ = 2 ** (8 * SEQ_BYTES) - 1
REPLAY_WINDOW_SIZE = 64  # RFC 4303 §3.4.3 default window


class SchemeError(Exception):
    """Base of every failure a payload scheme or key exchange reports."""


class AuthenticationError(SchemeError):
    """Tag/MAC mismatch, wrong key, wrong direction, or a header not from this scheme."""


class MalformedMessageError(SchemeError):
    """The message cannot be parsed: too short, impossible length, bad padding, bad encoding."""


class ReplayError(SchemeError):
    """The sequence number was already accepted, or is older than the replay window."""

    def __init__(self, message: str, *, reason: str = "duplicate") -> None:
        super().__init__(message)
        self.reason = reason  # "duplicate" or "too-old": receivers count them separately

    def __reduce__(self) -> tuple:
        # Keep the reason across process boundaries (Exception pickles only its args).
        return (_replay_error, (str(self), self.reason))


def _replay_error(message: str, reason: str) -> ReplayError:
    return ReplayError(message, reason=reason)


class NonceExhaustedError(SchemeError):
    """The sender's counter would wrap: sealing another message would reuse a nonce. Rekey."""


@dataclass(frozen=True)
class DirectionKeys:
    """Key material for one direction of one session. ``repr`` never shows key bytes."""

    enc_key: bytes = field(repr=False)  # cipher key
    mac_key: bytes = field(repr=False)  # MAC key for encrypt-then-MAC schemes (unused by AEADs)
    nonce_prefix: bytes = field(repr=False)  # fixed part of counter nonces
    session_id: bytes  # 8 bytes, public: authenticated (not sent) in every message
    direction: str  # "e2r" or "r2e", authenticated (not sent) in every message

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {self.direction!r}")
        for name in ("enc_key", "mac_key", "nonce_prefix", "session_id"):
            if not isinstance(getattr(self, name), bytes):
                raise TypeError(f"DirectionKeys.{name} must be bytes")
        if len(self.session_id) != SESSION_ID_BYTES:
            raise ValueError(f"session_id must be {SESSION_ID_BYTES} bytes")

    def __repr__(self) -> str:
        # Lengths only: enough to debug a mismatch, nothing an attacker can use.
        return (
            f"DirectionKeys(direction={self.direction!r}, session_id={self.session_id.hex()}, "
            f"enc_key=<{len(self.enc_key)} bytes>, mac_key=<{len(self.mac_key)} bytes>, "
            f"nonce_prefix=<{len(self.nonce_prefix)} bytes>)"
        )

    __str__ = __repr__


class OpenedMessage(NamedTuple):
    """A message that passed every check the scheme can make (immutable; a named tuple so
    the receive path does not pay for a frozen dataclass per message)."""

    plaintext: bytes
    seq: int | None  # authenticated sequence number, None when the scheme has none


class Frame(NamedTuple):
    """Per-message context handed to a variant's cipher step (immutable).

    A named tuple rather than a frozen dataclass: one is built per message, and on the hot
    path a dataclass's ``__setattr__``-based construction costs more than a 4 KiB AES-GCM.
    """

    keys: DirectionKeys | None
    header: bytes  # version | scheme_id [| seq], exactly as on the wire
    seq: int | None
    explicit_nonce: bytes  # random IV/nonce carried on the wire, b"" for counter schemes
    aad_bytes: bytes | None = None  # precomputed ``aad`` (sealers and openers pass it)

    @property
    def aad(self) -> bytes:
        """Associated data: the wire header plus the (untransmitted) session id and direction.

        Binding session and direction here makes a message from another session, or a
        reflected message from the other direction, fail authentication
        (docs/reliability.md, key separation).
        All three parts have fixed lengths, so the concatenation is unambiguous.
        """
        if self.aad_bytes is not None:
            return self.aad_bytes
        return self.header + _aad_suffix(self.keys)

    def counter_nonce(self, size: int) -> bytes:
        """``nonce_prefix || seq`` (big-endian), ``size`` bytes in all."""
        keys, seq = self.keys, self.seq
        if keys is None or seq is None:
            raise SchemeError("counter nonces need keys and a sequence number")
        counter_bytes = size - len(keys.nonce_prefix)
        if counter_bytes < SEQ_BYTES:
            # A shorter counter could wrap before seq does and repeat a nonce.
            raise SchemeError(f"a {size}-byte nonce has no room for a 64-bit counter")
        return keys.nonce_prefix + seq.to_bytes(counter_bytes, "big")


def _aad_suffix(keys: DirectionKeys | None) -> bytes:
    """``session_id || direction``: the part of every AAD that is not on the wire."""
    if keys is None:
        return b""
    return keys.session_id + keys.direction.encode("ascii")


def _is_authentication_failure(error: Exception) -> bool:
    """Whether a backend exception means "tag did not verify" rather than "cannot parse"."""
    if isinstance(error, InvalidTag | InvalidSignature):
        return True
    # PyNaCl's CryptoError, matched by name so this module does not import PyNaCl.
    if type(error).__name__ in {"CryptoError", "BadSignatureError"}:
        return True
    # pycryptodome reports tag failures only as ValueError with these messages.
    message = str(error)
    return isinstance(error, ValueError) and (
        "MAC check failed" in message or "verification failed" in message.lower()
    )


class ReplayWindow:
    """Sliding anti-replay bitmap of RFC 4303 §3.4.3 (64 entries).

    Bit ``i`` of the bitmap says whether ``highest - i`` was accepted. ``check`` runs before
    authentication (cheap rejection); ``accept`` only after, so a forged message can never
    move the window.
    """

    def __init__(self, size: int = REPLAY_WINDOW_SIZE) -> None:
        self.size = size
        self._mask = (1 << size) - 1
        self._highest: int | None = None
        self._bitmap = 0

    @classmethod
    def restored(cls, state: tuple[int, int] | None) -> ReplayWindow:
        """A window in the state ``(highest, bitmap)`` (None: nothing accepted yet)."""
        window = cls()
        if state is not None:
            window._highest, window._bitmap = state
        return window

    @property
    def highest(self) -> int | None:
        """Highest sequence number accepted so far."""
        return self._highest

    def check(self, seq: int) -> None:
        """Raise ReplayError if ``seq`` must be rejected; change nothing."""
        if self._highest is None or seq > self._highest:
            return
        offset = self._highest - seq
        if offset >= self.size:
            raise ReplayError(
                f"sequence {seq} is older than the replay window (highest {self._highest})",
                reason="too-old",
            )
        if (self._bitmap >> offset) & 1:
            raise ReplayError(f"sequence {seq} was already accepted", reason="duplicate")

    def accept(self, seq: int) -> None:
        """Mark ``seq`` as seen (call only after the message authenticated)."""
        self.check(seq)
        if self._highest is None:
            self._highest, self._bitmap = seq, 1
        elif seq > self._highest:
            shift = seq - self._highest
            self._bitmap = ((self._bitmap << shift) | 1) & self._mask if shift < self.size else 1
            self._highest = seq
        else:
            self._bitmap |= 1 << (self._highest - seq)


class Sealer:
    """Seals messages for one direction. Not thread-safe: one sealer per sending thread."""

    def __init__(self, scheme: PayloadScheme, keys: DirectionKeys | None, first_seq: int) -> None:
        self._scheme = scheme
        self._keys = keys
        self._state = scheme._cipher_state(keys) if keys is not None else None
        if not 0 <= first_seq <= MAX_SEQ + 1:
            raise ValueError(f"first_seq must be in 0..2**64, got {first_seq}")
        self._next_seq = first_seq
        # Per-message constants, computed once (the seal path is what `bench crypto` times).
        self._header_prefix = bytes((WIRE_VERSION, scheme.scheme_id))
        self._sequenced = scheme.sequenced
        self._explicit_bytes = scheme.explicit_nonce_bytes
        self._aad_suffix = _aad_suffix(keys)
        self._nonce_prefix, self._counter_bytes = _counter_layout(scheme, keys)
        if self._counter_bytes:
            self._encrypt = scheme.aead_functions(self._state)[0]
        self._native = (
            scheme.native_framing(self._state, keys, first_seq) if self._counter_bytes else None
        )
        if self._native is not None:
            # The whole seal is one C call (same bytes on the wire): no Python frame in between.
            self.seal = self._native.seal  # type: ignore[method-assign]

    @property
    def next_seq(self) -> int:
        """Sequence number the next sealed message will carry."""
        return self._native.next_seq if self._native is not None else self._next_seq

    def seal(self, plaintext: bytes) -> bytes:
        """Frame and protect one message."""
        scheme = self._scheme
        if type(plaintext) is not bytes:  # copy only what is not already immutable bytes
            plaintext = bytes(plaintext)
        if not scheme.framed:
            return scheme._seal_body(self._state, _UNFRAMED, plaintext)
        seq = None
        header = self._header_prefix
        if self._sequenced:
            seq = self._next_seq
            if seq > MAX_SEQ:
                raise NonceExhaustedError(
                    f"{scheme.name}: sequence counter exhausted after 2**64 messages; "
                    "refusing to reuse a nonce (start a new key exchange)"
                )
            # Advance before encrypting: even if the cipher step fails, this seq is burnt.
            self._next_seq = seq + 1
            header += seq.to_bytes(SEQ_BYTES, "big")
            if self._counter_bytes:
                # Counter-nonce AEADs (most schemes): nonce and AAD built right here, no Frame.
                nonce = self._nonce_prefix + seq.to_bytes(self._counter_bytes, "big")
                return header + self._encrypt(nonce, plaintext, header + self._aad_suffix)
        explicit_nonce = os.urandom(self._explicit_bytes) if self._explicit_bytes else b""
        frame = Frame(self._keys, header, seq, explicit_nonce, header + self._aad_suffix)
        return header + explicit_nonce + scheme._seal_body(self._state, frame, plaintext)


class Opener:
    """Opens messages of one direction and keeps that direction's replay window."""

    def __init__(self, scheme: PayloadScheme, keys: DirectionKeys | None) -> None:
        self._scheme = scheme
        self._keys = keys
        self._state = scheme._cipher_state(keys) if keys is not None else None
        self._window = ReplayWindow() if scheme.sequenced else None
        self._aad_suffix = _aad_suffix(keys)
        self._nonce_prefix, self._counter_bytes = _counter_layout(scheme, keys)
        if self._counter_bytes:
            self._decrypt = scheme.aead_functions(self._state)[1]
        self._native = scheme.native_framing(self._state, keys, 0) if self._counter_bytes else None
        if self._native is not None:
            # The whole open, replay window included, is one C call (same checks, same
            # errors): the window then lives in C and ``replay_window`` is a snapshot of it.
            self.open = self._native.open  # type: ignore[method-assign]
        # Per-message constants, computed once (the open path is what `bench crypto` times).
        prefix = scheme.header_bytes + scheme.explicit_nonce_bytes
        self._layout = (scheme.header_bytes, prefix, prefix + scheme.min_body_bytes)
        self._buffers = scheme.aead_accepts_buffers

    @property
    def replay_window(self) -> ReplayWindow | None:
        """The receiver's replay window (None for schemes without sequence numbers); a copy
        when the window is kept in C."""
        if self._native is not None:
            return ReplayWindow.restored(self._native.window)
        return self._window

    def open(self, message: bytes) -> OpenedMessage:
        """Check and decrypt one message; raise a SchemeError subclass on any failure."""
        scheme = self._scheme
        if type(message) is not bytes:
            try:
                message = bytes(message)
            except TypeError as error:
                raise MalformedMessageError(f"{scheme.name}: message is not bytes") from error
        if not scheme.framed:
            return OpenedMessage(self._run(scheme._open_body, _UNFRAMED, message), None)

        header_bytes, prefix_bytes, minimum = self._layout
        if len(message) < minimum:
            raise MalformedMessageError(
                f"{scheme.name}: message of {len(message)} bytes is shorter than the minimum "
                f"{minimum}"
            )
        # A version or scheme id other than ours means the message was not made by this
        # scheme's sealer with these keys: the same verdict as a wrong key
        # (docs/reliability.md #13).
        if message[0] != WIRE_VERSION:
            raise AuthenticationError(
                f"{scheme.name}: wire version {message[0]} is not {WIRE_VERSION}"
            )
        if message[1] != scheme.scheme_id:
            raise AuthenticationError(
                f"{scheme.name}: scheme id {message[1]} is not {scheme.scheme_id}"
            )
        seq = None
        window = self._window
        if window is not None:
            seq = int.from_bytes(message[2:header_bytes], "big")
            window.check(seq)  # cheap rejection before any cryptography
        if self._counter_bytes and seq is not None:
            # Counter-nonce AEADs: no length rule beyond the minimum, no Frame.
            nonce = self._nonce_prefix + seq.to_bytes(self._counter_bytes, "big")
            body = memoryview(message)[prefix_bytes:] if self._buffers else message[prefix_bytes:]
            plaintext = self._run_aead(nonce, message[:header_bytes] + self._aad_suffix, body)
            window.accept(seq)  # type: ignore[union-attr]
            return OpenedMessage(plaintext, seq)
        header = message[:header_bytes]
        body = message[prefix_bytes:]
        problem = scheme._body_length_problem(len(body))
        if problem:
            raise MalformedMessageError(f"{scheme.name}: {problem}")
        frame = Frame(
            self._keys, header, seq, message[header_bytes:prefix_bytes], header + self._aad_suffix
        )
        plaintext = self._run(scheme._open_body, frame, body)
        if window is not None and seq is not None:
            window.accept(seq)
        return OpenedMessage(plaintext, seq)

    def _run_aead(self, nonce: bytes, aad: bytes, body: bytes) -> bytes:
        """The counter-nonce AEAD step, with the same exception mapping as ``_run``."""
        try:
            return self._decrypt(nonce, body, aad)
        except SchemeError:
            raise
        except Exception as error:
            raise self._mapped(error) from error

    def _mapped(self, error: Exception) -> Exception:
        if _is_authentication_failure(error):
            return AuthenticationError(f"{self._scheme.name}: authentication failed")
        if isinstance(error, ValueError | TypeError | IndexError | OverflowError):
            return MalformedMessageError(
                f"{self._scheme.name}: cannot decode message ({type(error).__name__})"
            )
        return error

    def _run(self, step: Any, frame: Frame, body: bytes) -> bytes:
        """Run a variant's open step, mapping backend exceptions onto the SchemeError family."""
        try:
            return step(self._state, frame, body)
        except SchemeError:
            raise
        except Exception as error:
            mapped = self._mapped(error)
            if mapped is error:
                raise
            raise mapped from error


def _counter_layout(scheme: PayloadScheme, keys: DirectionKeys | None) -> tuple[bytes, int]:
    """(nonce prefix, counter bytes) of a counter-nonce AEAD; (b"", 0) for other schemes."""
    if not scheme.counter_nonce_bytes or keys is None or not scheme.sequenced:
        return b"", 0
    counter_bytes = scheme.counter_nonce_bytes - len(keys.nonce_prefix)
    if counter_bytes < SEQ_BYTES:
        # A shorter counter could wrap before seq does and repeat a nonce.
        raise SchemeError(f"{scheme.name}: nonce has no room for a 64-bit counter")
    return keys.nonce_prefix, counter_bytes


_UNFRAMED = Frame(keys=None, header=b"", seq=None, explicit_nonce=b"")


class PayloadScheme(ABC):
    """An application-layer payload protection scheme (template method).

    Subclasses set the class attributes and implement ``_cipher_state``, ``_seal_body`` and
    ``_open_body``; optionally ``_body_length_problem`` and ``_body_expansion_bytes`` when
    the ciphertext is not ``plaintext + tag_bytes`` long.
    """

    name: ClassVar[str]  # "<key establishment>-<cipher>", e.g. "x25519-chacha20-poly1305"
    cipher: ClassVar[str] = ""  # the wire format's name, e.g. "aes128-gcm" (see catalog.py)
    # Second wire byte: identifies the wire format (cipher construction and key size), unique
    # per cipher and never reused. The key establishment is not on the wire: it is bound to
    # the keys through the HKDF labels, which carry the full scheme name.
    scheme_id: ClassVar[int]
    key_establishment: ClassVar[str | None]  # "psk", "ecdh-p256", "x25519", ... or None
    properties: ClassVar[SecurityProperties]
    provenance: ClassVar[Provenance]
    bulk_primitive: ClassVar[str | None]  # energy vocabulary name, e.g. "aes-gcm"

    framed: ClassVar[bool] = True  # False only for the identity scheme: no header at all
    sequenced: ClassVar[bool] = True  # header carries seq; replay window on the receiver
    explicit_nonce_bytes: ClassVar[int] = 0  # random IV/nonce sent after the header
    tag_bytes: ClassVar[int] = 0  # appended by the cipher step
    enc_key_bytes: ClassVar[int] = 16  # what key establishment derives for this scheme
    mac_key_bytes: ClassVar[int] = 32
    nonce_prefix_bytes: ClassVar[int] = 4
    cipher_warnings: ClassVar[tuple[str, ...]] = ()  # the cipher's part of properties.warnings
    # Counter-nonce AEADs set this to their nonce length and implement ``aead_seal`` /
    # ``aead_open(state, nonce, aad, data)``; the base then builds ``nonce = nonce_prefix ||
    # seq`` and ``aad`` itself (the hot path: no Frame per message). 0: use the Frame hooks.
    counter_nonce_bytes: ClassVar[int] = 0
    aead_accepts_buffers: ClassVar[bool] = False  # aead_open takes a memoryview (no copy)

    def aead_seal(self, state: Any, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        """Counter-nonce AEADs only: ciphertext || tag."""
        raise NotImplementedError

    def aead_open(self, state: Any, nonce: bytes, aad: bytes, body: bytes) -> bytes:
        """Counter-nonce AEADs only: plaintext, or the backend's tag exception."""
        raise NotImplementedError

    def native_framing(self, state: Any, keys: DirectionKeys, first_seq: int) -> Any | None:
        """An object doing one direction's whole framing in C, or None (the default).

        It has ``seal(plaintext)`` and ``next_seq`` (exactly the bytes the Python path
        produces, raising ``NonceExhaustedError`` when the counter is used up), and
        ``open(message)`` and ``window``: the whole receive path of ``Opener.open`` (length,
        version and scheme-id checks, the replay window, authentication) with the same
        errors, so the ``Sealer``/``Opener`` hand their calls straight to it.
        """
        return None

    def aead_functions(self, state: Any) -> tuple[Callable[..., bytes], Callable[..., bytes]]:
        """(encrypt, decrypt) taking ``(nonce, data, aad)``, bound to one key's state.

        The sealer and opener call these once per message; pyca-style AEADs return their
        bound C methods, so no Python frame sits between the framing and the cipher.
        """
        return (
            lambda nonce, data, aad: self.aead_seal(state, nonce, aad, data),
            lambda nonce, data, aad: self.aead_open(state, nonce, aad, data),
        )

    @classmethod
    def nonce_rule_text(cls) -> str:
        """How this wire format chooses nonces (the cipher's part of the properties)."""
        return "none"

    @property
    def key_bits(self) -> int:
        """Cipher key size in bits (what "128/256-bit variant" refers to)."""
        return 8 * self.enc_key_bytes if self.framed else 0

    @property
    def header_bytes(self) -> int:
        """Length of ``version | scheme_id [| seq]``."""
        if not self.framed:
            return 0
        return 2 + (SEQ_BYTES if self.sequenced else 0)

    @property
    def min_body_bytes(self) -> int:
        """Shortest body (after header and explicit nonce) that can possibly be valid."""
        return self.tag_bytes

    def random_keys(self, session_id: bytes, direction: str = "e2r") -> DirectionKeys:
        """Fresh random keys of this scheme's sizes: for benchmarks, tests and forged messages
        (a session's real keys come from its key establishment)."""
        return DirectionKeys(
            os.urandom(self.enc_key_bytes),
            os.urandom(self.mac_key_bytes),
            os.urandom(self.nonce_prefix_bytes),
            session_id,
            direction,
        )

    def sealer(self, keys: DirectionKeys | None, *, first_seq: int = 0) -> Sealer:
        """A sealer for one direction. ``first_seq`` exists for tests of counter exhaustion."""
        return Sealer(self, self._checked_keys(keys), first_seq)

    def opener(self, keys: DirectionKeys | None) -> Opener:
        """An opener (with its own replay window) for one direction."""
        return Opener(self, self._checked_keys(keys))

    def seal_operations(self, plaintext_bytes: int) -> list[tuple[str, int]]:
        """Energy-model operations for sealing one message of ``plaintext_bytes``."""
        if self.bulk_primitive is None:
            return []
        return [(self.bulk_primitive, self._bulk_bytes(plaintext_bytes))]

    def open_operations(self, plaintext_bytes: int) -> list[tuple[str, int]]:
        """Energy-model operations for opening one message of ``plaintext_bytes``."""
        return self.seal_operations(plaintext_bytes)

    def expected_overhead_bytes(self, plaintext_bytes: int) -> int:
        """Wire bytes minus plaintext bytes for one message."""
        return (
            self.header_bytes
            + self.explicit_nonce_bytes
            + self._body_expansion_bytes(plaintext_bytes)
        )

    def __repr__(self) -> str:
        return f"<PayloadScheme {self.name} id={self.scheme_id}>"

    # --- hooks for variants -------------------------------------------------------------

    def _body_expansion_bytes(self, plaintext_bytes: int) -> int:
        """Body length minus plaintext length (tag, padding)."""
        return self.tag_bytes

    def _bulk_bytes(self, plaintext_bytes: int) -> int:
        """Bytes the bulk primitive processes for one message (default: the plaintext)."""
        return plaintext_bytes

    def _body_length_problem(self, body_bytes: int) -> str | None:
        """Why a body of this length cannot be valid, or None."""
        return None

    @abstractmethod
    def _cipher_state(self, keys: DirectionKeys) -> Any:
        """Per-direction cipher object (key schedule), built once per sealer/opener."""

    @abstractmethod
    def _seal_body(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        """Ciphertext (and tag) for ``plaintext``; the base adds header and explicit nonce."""

    @abstractmethod
    def _open_body(self, state: Any, frame: Frame, body: bytes) -> bytes:
        """Plaintext of ``body``; raise the backend's exception or a SchemeError on failure."""

    # --- internals ----------------------------------------------------------------------

    def _checked_keys(self, keys: DirectionKeys | None) -> DirectionKeys | None:
        if self.key_establishment is None:
            return keys
        if not isinstance(keys, DirectionKeys):
            raise TypeError(f"scheme {self.name} needs DirectionKeys from key establishment")
        if len(keys.enc_key) != self.enc_key_bytes:
            raise ValueError(f"scheme {self.name} needs a {self.enc_key_bytes}-byte enc_key")
        if len(keys.nonce_prefix) != self.nonce_prefix_bytes:
            raise ValueError(
                f"scheme {self.name} needs a {self.nonce_prefix_bytes}-byte nonce_prefix"
            )
        return keys


class AeadScheme(PayloadScheme):
    """A scheme whose body is one AEAD call (``aead_seal``/``aead_open``) under the frame's
    nonce: the counter nonce when ``counter_nonce_bytes`` is set, else the explicit one."""

    def _aead_nonce(self, frame: Frame) -> bytes:
        if self.counter_nonce_bytes:
            return frame.counter_nonce(self.counter_nonce_bytes)
        return frame.explicit_nonce

    def _seal_body(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        return self.aead_seal(state, self._aead_nonce(frame), frame.aad, plaintext)

    def _open_body(self, state: Any, frame: Frame, body: bytes) -> bytes:
        return self.aead_open(state, self._aead_nonce(frame), frame.aad, body)


@functools.cache
def pycryptodome() -> types.SimpleNamespace:
    """pycryptodome's ciphers, imported on first use: loading it (its cffi layer) costs ~50 ms,
    which commands that only list schemes (``iotsecbench schemes``, ``--help``) should not pay.
    Cached, so a message pays a function call, not an import."""
    from Crypto.Cipher import AES, Salsa20

    return types.SimpleNamespace(AES=AES, Salsa20=Salsa20)
