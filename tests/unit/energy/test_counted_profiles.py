"""The device profiles whose crypto prices were counted on a virtual microcontroller
(`bench device-costs`, docs/virtual-mcu.md): what they hold, and the in-place rewrite that
replaced the ESP32 profile's guesses."""

from __future__ import annotations

import tomllib

import pytest

from iotsecbench.energy.calibrate import rewrite_parameters
from iotsecbench.energy.profile import Parameter, load_profile, profile_names, profile_text


@pytest.mark.parametrize(("name", "target"), [("esp32-c3", "rv32imc"), ("nrf52840", "cortex-m4")])
def test_counted_profiles_price_crypto_from_counts(name, target):
    profile = load_profile(name)
    assert name in profile_names()
    counted = {
        f"{primitive}.{field}": parameter
        for primitive, cost in profile.primitives.items()
        for field, parameter in cost.parameters().items()
        if parameter.status == "counted"
    }
    # Every bulk cipher the firmware runs, and every handshake operation, post-quantum too.
    for key in ("aes-gcm.cycles_per_byte", "chacha20-poly1305.per_call", "speck128.per_call",
                "x25519-derive.per_operation", "mlkem768-encaps.per_operation",
                "mldsa44-sign.per_operation", "rsa3072-private.per_operation"):  # fmt: skip
        assert key in counted, key
        assert f"on the virtual {target}" not in counted[key].source  # the header says that
        assert "build " in counted[key].source and "device-costs" in counted[key].source
    assert profile.primitives["aes-cbc"].cycles_per_byte.status == "derived"
    # The software AES without tables costs far more per byte than mbedTLS's table AES.
    tablefree = profile.primitives["aes-ctr-tablefree"].cycles_per_byte.value
    assert tablefree > 10 * profile.primitives["aes-ctr"].cycles_per_byte.value
    # Only what no count reaches stays a guess.
    guessed = {p for p, c in profile.primitives.items() for x in c.parameters().values()
               if x.status == "guess"}  # fmt: skip
    assert guessed == {"mqtt-packet", "rsa2048-keygen"}


def test_the_esp32_profile_says_which_guesses_counts_replaced():
    profile = load_profile("esp32-wroom-32")
    chacha = profile.primitives["chacha20-poly1305"].cycles_per_byte
    assert chacha.status == "derived" and "another 32-bit instruction set" in chacha.source
    assert "replacing a guess (25 cycles/B)" in chacha.source
    # Measured numbers (hardware AES, wolfSSL's ECC timings) are left alone.
    assert profile.primitives["aes-gcm"].cycles_per_byte.status == "measured"
    assert profile.primitives["x25519-derive"].per_operation.status == "measured"


def test_rewrite_parameters_changes_only_the_named_tables():
    text = profile_text("esp32-wroom-32")
    new = Parameter(1.5, "cycles/B", 'a "quoted" source', "derived")
    rewritten = rewrite_parameters(text, {"primitives.salsa20.cycles_per_byte": new})
    before, after = tomllib.loads(text), tomllib.loads(rewritten)
    written = after["primitives"]["salsa20"]["cycles_per_byte"]
    assert written.pop("range") == pytest.approx([1.05, 1.95])  # a derived number's ±30 %
    assert "not stated where it was made" in written.pop("range_source")
    assert written == {
        "value": 1.5, "unit": "cycles/B", "source": 'a "quoted" source', "status": "derived",
    }  # fmt: skip
    del before["primitives"]["salsa20"], after["primitives"]["salsa20"]
    assert before == after
    assert [line for line in text.splitlines() if line.startswith("#")] == [
        line for line in rewritten.splitlines() if line.startswith("#")
    ]
    with pytest.raises(KeyError):
        rewrite_parameters(text, {"primitives.nothing.per_call": new})
