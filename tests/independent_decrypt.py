"""An independent decryptor for captured iotsecbench payloads, written only from
docs/wire-format.md and the key-log format it documents. It imports nothing from iotsecbench:
only the standard library and ``cryptography``.

Usage: python tests/independent_decrypt.py KEYLOG HEX_MESSAGE [HEX_MESSAGE ...]
Prints one line per message: the session id, seq and plaintext (hex), or "FAILED".

Supported wire formats (docs/wire-format.md): aes128-gcm (scheme_id 2), aes256-gcm (3),
aes128-ctr-hmac (8), aes256-ctr-hmac (9), chacha20-poly1305 (13).
"""

from __future__ import annotations

import sys

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import constant_time, hashes, hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

HEADER = 10  # version (1) | scheme_id (1) | seq (8)


def read_key_log(path: str) -> list[dict[str, str]]:
    """IOTSB_SESSION_KEYS <session_id hex> <e2r|r2e> enc=<hex> mac=<hex> nonce_prefix=<hex> ..."""
    sessions = []
    with open(path) as handle:
        for line in handle:
            fields = line.split()
            if not fields or fields[0] != "IOTSB_SESSION_KEYS":
                continue  # NSS TLS lines (CLIENT_RANDOM ...) share the file
            entry = {"session_id": fields[1], "direction": fields[2]}
            entry.update(field.split("=", 1) for field in fields[3:])
            sessions.append(entry)
    return sessions


def decrypt(message: bytes, keys: dict[str, str]) -> bytes:
    if message[0] != 1:
        raise ValueError("unknown wire version")
    scheme_id, seq = message[1], message[2:HEADER]
    key = bytes.fromhex(keys["enc"])
    prefix = bytes.fromhex(keys["nonce_prefix"])
    aad = message[:HEADER] + bytes.fromhex(keys["session_id"]) + keys["direction"].encode("ascii")
    if scheme_id in (2, 3, 13):  # AEAD: nonce = prefix (4) || seq (8)
        aead = ChaCha20Poly1305(key) if scheme_id == 13 else AESGCM(key)
        return aead.decrypt(prefix + seq, message[HEADER:], aad)
    if scheme_id in (8, 9):  # AES-CTR + HMAC-SHA256 over aad || ciphertext, tag 32 bytes
        ciphertext, tag = message[HEADER:-32], message[-32:]
        mac = hmac.HMAC(bytes.fromhex(keys["mac"]), hashes.SHA256())
        mac.update(aad + ciphertext)
        if not constant_time.bytes_eq(mac.finalize(), tag):
            raise InvalidSignature("MAC")
        counter = prefix + seq + b"\0\0\0\0"
        decryptor = Cipher(algorithms.AES(key), modes.CTR(counter)).decryptor()
        return decryptor.update(ciphertext) + decryptor.finalize()
    raise ValueError(f"scheme id {scheme_id} not supported by this decryptor")


def main(argv: list[str]) -> int:
    sessions = [s for s in read_key_log(argv[0]) if s["direction"] == "e2r"]
    failures = 0
    for text in argv[1:]:
        message = bytes.fromhex(text)
        for keys in sessions:  # the session id is not on the wire: the tag tells which
            try:
                plaintext = decrypt(message, keys)
            except (InvalidTag, InvalidSignature):
                continue
            seq = int.from_bytes(message[2:HEADER], "big")
            print(f"{keys['session_id']} {seq} {plaintext.hex()}")
            break
        else:
            print("FAILED")
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
