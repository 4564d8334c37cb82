"""The virtual-MCU parts that need no emulator: target and cipher lookup, the request format's
limits, and what `doctor` says when the toolchains are missing."""

from __future__ import annotations

import struct

import pytest

from iotsecbench.errors import SpecError
from iotsecbench.security.schemes import cipher_names
from iotsecbench.vmcu import TARGET_CIPHERS, TARGETS, Request, target, target_cipher
from iotsecbench.vmcu import build as vmcu_build
from iotsecbench.vmcu.run import _decode_header, _encode
from iotsecbench.workflows.doctor import check_virtual_mcu


def test_target_lookup_names_the_choices():
    assert target("cortex-m4").device == "nRF52840"
    with pytest.raises(SpecError, match="rv32imc, cortex-m4"):
        target("avr")


def test_every_target_cipher_is_a_scheme_cipher():
    assert set(TARGET_CIPHERS) <= set(cipher_names())
    assert target_cipher("x25519-ascon-aead128").primitive == "ascon-aead128"
    with pytest.raises(SpecError, match="aes128-eax has no virtual-MCU build"):
        target_cipher("psk-aes128-eax")


def test_requests_are_encoded_in_order_and_bounded_by_the_firmware_buffer():
    encoded = _encode(["setkey", "seal"], 64, [Request("seal", (b"ab", b""))])
    assert encoded == struct.pack("<HHI", 1, 2, 2) + b"ab" + struct.pack("<IHH", 0, 0xFFFF, 0)
    with pytest.raises(SpecError, match="exceed the firmware's 64-byte buffer"):
        _encode(["seal"], 64, [Request("seal", (bytes(40), bytes(25)))])


def test_answer_header_gives_overhead_buffer_and_operations():
    header = b"VMCU1" + struct.pack("<III", 9, 24576, 2) + b"setkey\0seal\0"
    assert _decode_header(header) == (9, 24576, ["setkey", "seal"], len(header))


def test_doctor_names_the_packages_when_the_toolchains_are_missing(monkeypatch):
    monkeypatch.setattr(vmcu_build.shutil, "which", lambda tool: None)
    check = check_virtual_mcu()
    assert not check.ok and "no target can be built" in check.detail
    for chosen in TARGETS.values():
        assert all(package in check.consequence for package in chosen.packages)


@pytest.mark.integration
def test_a_missing_toolchain_is_one_line_and_exit_3(cli):
    """Before any host measurement: the packages to install, no traceback."""
    for command in (
        ("bench", "crypto", "--target", "rv32imc", "--schemes", "aes128-gcm"),
        ("bench", "device-costs", "--target", "cortex-m4", "--profile", "nrf52840", "--out", "x"),
    ):
        result = cli(*command, env={"PATH": "/nonexistent"})
        assert result.returncode == 3, result.stderr
        assert "Traceback" not in result.stderr and "apt-get install" in result.stderr
