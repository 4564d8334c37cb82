"""The ``none`` scheme: the payload goes out as it is (the transport-only baseline)."""

from __future__ import annotations

from typing import Any

from iotsecbench.security.properties import PYTHON, SecurityProperties
from iotsecbench.security.schemes.base import Frame, PayloadScheme


class NoneScheme(PayloadScheme):
    """Identity: no header, no keys, no protection. Whatever the transport gives is all."""

    name = "none"
    scheme_id = 0
    key_establishment = None
    bulk_primitive = None
    provenance = PYTHON
    framed = False
    sequenced = False
    properties = SecurityProperties(
        confidentiality=False,
        integrity=False,
        authentication="none",
        replay_protection=False,
        end_to_end=False,
        forward_secrecy=False,
        tag_bytes=0,
        nonce_rule="none",
        warnings=(),
    )

    def _cipher_state(self, keys: Any) -> None:
        return None

    def _seal_body(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        return plaintext

    def _open_body(self, state: Any, frame: Frame, body: bytes) -> bytes:
        return body
