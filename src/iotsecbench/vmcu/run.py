"""Running a firmware image under QEMU with instruction counting: the host writes the requests
(vmcu-in.bin), QEMU runs the image bare-metal with ``-icount shift=0`` and semihosting, and the
answers come back in vmcu-out.bin (formats: firmware/harness.c)."""

from __future__ import annotations

import functools
import struct
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.errors import DataError, EnvironmentProblem, SpecError
from iotsecbench.vmcu.build import Firmware
from iotsecbench.vmcu.targets import TARGETS

END = 0xFFFF
STATUS = {-1: "bad input", -2: "rejected", -3: "library error"}
REJECTED = -2
TIMEOUT_S = 600  # RSA-3072 private operations run for billions of instructions at worst


@dataclass(frozen=True)
class Request:
    operation: str
    inputs: tuple[bytes, ...]


@dataclass(frozen=True)
class Answer:
    request: Request
    status: int  # the output length, or a negative status (STATUS)
    instructions: int  # the operation alone: the harness's own count subtracted
    stack_bytes: int  # high-water mark of the call's stack
    heap_bytes: int  # peak of the call's allocations
    output: bytes

    @property
    def ok(self) -> bool:
        return self.status >= 0

    @property
    def rejected(self) -> bool:
        return self.status == REJECTED


@dataclass(frozen=True)
class Session:
    firmware: Firmware
    overhead: int  # the counter's own instructions, subtracted from every answer
    answers: list[Answer]


def _encode(names: list[str], buffer: int, requests: Sequence[Request]) -> bytes:
    parts = []
    for request in requests:
        if request.operation not in names:
            raise ValueError(f"the firmware has no operation {request.operation!r}: {names}")
        if sum(map(len, request.inputs)) > buffer:
            raise SpecError(
                f"{request.operation}'s inputs ({sum(map(len, request.inputs))} B) exceed the "
                f"firmware's {buffer}-byte buffer: use smaller sizes"
            )
        parts.append(struct.pack("<HH", names.index(request.operation), len(request.inputs)))
        for blob in request.inputs:
            parts.append(struct.pack("<I", len(blob)) + blob)
    parts.append(struct.pack("<HH", END, 0))
    return b"".join(parts)


def _decode_header(data: bytes) -> tuple[int, int, list[str], int]:
    if data[:5] != b"VMCU1":
        raise DataError("the firmware wrote no answer header (did it start?)")
    overhead, buffer, count = struct.unpack_from("<III", data, 5)
    offset, names = 17, []
    for _ in range(count):
        end = data.index(b"\0", offset)
        names.append(data[offset:end].decode())
        offset = end + 1
    return overhead, buffer, names, offset


@functools.cache  # an image's operations never change: its path names its build's hash
def _layout(image: Firmware) -> tuple[int, list[str]]:
    """(buffer bytes, operation names) of ``image``, from one run with no request."""
    _, buffer, names, _ = _decode_header(_execute(image, b""))
    return buffer, names


def run(image: Firmware, requests: Sequence[Request]) -> Session:
    """Every request through ``image`` under QEMU, in order, in one emulator run (the first
    call for an image runs it once more, empty, to read its operations and buffer size)."""
    buffer, names = _layout(image)
    data = _execute(image, _encode(names, buffer, requests))
    overhead, _, _, offset = _decode_header(data)
    answers = []
    for request in requests:
        if offset + 16 > len(data):
            raise DataError(
                f"the {image.primitive} firmware stopped after {len(answers)} of "
                f"{len(requests)} requests (at {request.operation})"
            )
        status, instructions, stack, heap = struct.unpack_from("<iIII", data, offset)
        offset += 16
        length = max(status, 0)
        answers.append(
            Answer(request, status, instructions, stack, heap, data[offset : offset + length])
        )
        offset += length
    return Session(image, overhead, answers)


def _execute(image: Firmware, requests: bytes) -> bytes:
    """What the firmware wrote to vmcu-out.bin, given ``requests`` (empty: none)."""
    target = TARGETS[image.target]
    with tempfile.TemporaryDirectory(prefix="iotsb-vmcu-") as scratch:
        folder = Path(scratch)
        (folder / "vmcu-in.bin").write_bytes(requests or struct.pack("<HH", END, 0))
        try:
            result = subprocess.run(
                target.qemu_command(str(image.path)),
                cwd=folder,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=TIMEOUT_S,
                check=False,
            )
        except FileNotFoundError:
            raise EnvironmentProblem(
                f"{target.qemu[0]} is not installed (apt-get install {target.packages[-1]})"
            ) from None
        except subprocess.TimeoutExpired:
            raise EnvironmentProblem(
                f"the {image.primitive} firmware on {target.name} ran past {TIMEOUT_S} s"
            ) from None
        out = folder / "vmcu-out.bin"
        data = out.read_bytes() if out.exists() else b""
        if result.returncode != 0:
            detail = result.stderr.decode(errors="replace").strip().splitlines()
            raise EnvironmentProblem(
                f"QEMU ran the {image.primitive} firmware for {target.name} and failed "
                f"(exit {result.returncode}{': ' + detail[-1] if detail else ''})"
            )
    return data
