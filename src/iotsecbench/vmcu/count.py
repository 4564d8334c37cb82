"""Counting the payload schemes' ciphers on a virtual target: per scheme and message size, the
instructions of one seal and one open, the stack high-water mark and heap peak of the calls,
and the primitive's code and static RAM (its build less the harness alone).

Every message the target seals is compared with the host scheme's own seal of the same
plaintext under the same keys and sequence number (docs/wire-format.md), and the target opens
the host's message: a count is only kept for code that computed the right bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from iotsecbench.errors import DataError
from iotsecbench.security.schemes import get_scheme
from iotsecbench.security.schemes.base import Frame
from iotsecbench.vmcu.build import Firmware, LinkedLibrary, firmware
from iotsecbench.vmcu.primitives import primitive, target_cipher
from iotsecbench.vmcu.run import Answer, Request, run
from iotsecbench.vmcu.targets import Target


@dataclass(frozen=True)
class SchemeCount:
    """One scheme at one payload size on one target."""

    target: str
    scheme: str
    cipher: str
    primitive: str
    payload_bytes: int
    seal_instructions: int
    open_instructions: int
    setkey_instructions: int  # once per session, not per message
    stack_bytes: int  # high-water mark of seal and open
    heap_bytes: int  # peak allocation during seal and open
    code_bytes: int  # text of the primitive's build less the harness's
    static_ram_bytes: int  # data + bss, the same way
    build_hash: str
    provenance: str

    @property
    def seal_per_byte(self) -> float:
        return self.seal_instructions / max(self.payload_bytes, 1)

    @property
    def open_per_byte(self) -> float:
        return self.open_instructions / max(self.payload_bytes, 1)

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "seal_instructions_per_byte": self.seal_per_byte,
            "open_instructions_per_byte": self.open_per_byte,
        }


def footprint(target: Target, image: Firmware) -> tuple[int, int]:
    """(code, static RAM) of ``image`` beyond the harness alone."""
    bare = firmware(target, "none")
    return (
        image.text_bytes - bare.text_bytes,
        image.data_bytes + image.bss_bytes - bare.data_bytes - bare.bss_bytes,
    )


def _checked(answer: Answer, expected: bytes, what: str) -> Answer:
    if not answer.ok or answer.output != expected:
        status = "a different output" if answer.ok else f"status {answer.status}"
        raise DataError(f"{what} on the target gave {status}, not the host scheme's bytes")
    return answer


def count_scheme(
    target: Target,
    scheme_name: str,
    sizes: Sequence[int],
    on_count: Callable[[SchemeCount], None] | None = None,
    linked: LinkedLibrary | None = None,
) -> list[SchemeCount]:
    """Seal and open ``scheme_name`` at every size on ``target`` (one emulator run);
    ``linked``: with that build of the primitive's library (``vmcu.client.primitives_library``)."""
    scheme, cipher = get_scheme(scheme_name), target_cipher(scheme_name)
    image = firmware(target, cipher.primitive, linked)
    keys = scheme.random_keys(b"vmcu-SID")
    sealer = scheme.sealer(keys)
    requests, expected = [Request("setkey", tuple(cipher.setkey_inputs(keys)))], []
    for size in sizes:
        plaintext = os.urandom(size)
        message = sealer.seal(plaintext)
        # version | scheme id | seq (8): no target cipher sends an explicit nonce after it.
        header = message[: scheme.header_bytes]
        frame = Frame(keys, header, int.from_bytes(header[2:], "big"), b"")
        body = message[scheme.header_bytes :]
        nonce, aad = cipher.nonce(frame), frame.aad
        requests += [Request("seal", (nonce, aad, plaintext)), Request("open", (nonce, aad, body))]
        expected.append((body, plaintext))
    session = run(image, requests)
    setkey = session.answers[0]
    if not setkey.ok:
        raise DataError(f"{scheme_name}: setkey on {target.name} gave status {setkey.status}")
    code, static_ram = footprint(target, image)
    counts = []
    for index, size in enumerate(sizes):
        body, plaintext = expected[index]
        what = f"{scheme_name} ({size} B)"
        seal = _checked(session.answers[1 + 2 * index], body, f"sealing {what}")
        open_ = _checked(session.answers[2 + 2 * index], plaintext, f"opening {what}")
        count = SchemeCount(
            target=target.name,
            scheme=scheme_name,
            cipher=scheme.cipher,
            primitive=cipher.primitive,
            payload_bytes=size,
            seal_instructions=seal.instructions,
            open_instructions=open_.instructions,
            setkey_instructions=setkey.instructions,
            stack_bytes=max(seal.stack_bytes, open_.stack_bytes, setkey.stack_bytes),
            heap_bytes=max(seal.heap_bytes, open_.heap_bytes, setkey.heap_bytes),
            code_bytes=code,
            static_ram_bytes=static_ram,
            build_hash=image.build_hash,
            provenance=primitive(cipher.primitive).provenance_text(
                linked.provenance if linked is not None else None
            ),
        )
        counts.append(count)
        if on_count is not None:
            on_count(count)
    return counts
