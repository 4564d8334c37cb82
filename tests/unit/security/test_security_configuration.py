"""Configuration names, properties records and the scheme listing."""

from __future__ import annotations

import pytest

from iotsecbench.errors import SpecError
from iotsecbench.security import (
    Provenance,
    SecurityProperties,
    configuration_names,
    describe_schemes,
    get_scheme,
    resolve_configuration,
    scheme_names,
)
from iotsecbench.security.properties import CRYPTOGRAPHY


@pytest.mark.parametrize(
    ("name", "transport", "tls_version", "scheme"),
    [
        ("plain", "plain", None, "none"),
        ("tls1.2", "tls1.2", "1.2", "none"),
        ("tls1.3", "tls1.3", "1.3", "none"),
        ("ecdh-p256-aes128-cbc", "plain", None, "ecdh-p256-aes128-cbc"),
        ("ecdh-p256-aes128-gcm", "plain", None, "ecdh-p256-aes128-gcm"),
        ("tls1.2+ecdh-p256-aes128-gcm", "tls1.2", "1.2", "ecdh-p256-aes128-gcm"),
        ("tls1.3+ecdh-p256-aes128-cbc", "tls1.3", "1.3", "ecdh-p256-aes128-cbc"),
    ],
)
def test_resolve_happy_paths(name, transport, tls_version, scheme):
    configuration = resolve_configuration(name)
    assert configuration.name == name
    assert configuration.transport == transport
    assert configuration.scheme.name == scheme
    if tls_version is None:
        assert configuration.tls_profile is None
    else:
        assert configuration.tls_profile.version == tls_version
        assert configuration.tls_profile.certificate == "rsa2048"  # the study's default
        assert not configuration.tls_profile.resumption


def test_redundant_spellings_are_canonicalised():
    assert resolve_configuration("tls1.3+none").name == "tls1.3"
    assert resolve_configuration("plain+none").name == "plain"
    assert resolve_configuration("plain+ecdh-p256-aes128-gcm").name == "ecdh-p256-aes128-gcm"
    assert set(configuration_names()) >= {"plain", "tls1.2", "tls1.2+ecdh-p256-aes128-gcm"}
    for name in configuration_names():
        assert resolve_configuration(name).name == name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("aes-gmc", r"unknown .*'aes-gmc' \(did you mean ecdh-p256-aes128-gcm\?\)"),
        ("tls12", r"did you mean tls1\.2\?"),
        (
            "tls1.2+aes-gmc",
            r"unknown scheme 'aes-gmc' .*did you mean tls1\.2\+ecdh-p256-aes128-gcm",
        ),
        ("tsl1.3+ecdh-p256-aes128-gcm", r"unknown transport 'tsl1\.3'.*did you mean tls1\.3\+"),
        ("quantum", r"use plain, tls1.2, tls1.3.*schemes --all"),
        ("tls1.2+rot13", r"known: .*none"),
        ("", "non-empty"),
    ],
)
def test_misspellings_are_spec_errors_with_suggestions(name, message):
    with pytest.raises(SpecError, match=message):
        resolve_configuration(name)


def test_properties_validate_and_serialise():
    properties = get_scheme("ecdh-p256-aes128-cbc").properties
    record = properties.to_dict()
    assert record["confidentiality"] and not record["integrity"]
    assert not record["replay_protection"]
    assert any("no integrity, no replay protection" in w for w in record["warnings"])
    assert isinstance(record["warnings"], list)
    with pytest.raises(ValueError, match="authentication"):
        SecurityProperties(False, False, "trust me", False, False, False, 0, "none")
    with pytest.raises(ValueError, match="tag"):
        SecurityProperties(True, True, "none", False, False, False, 0, "none")


def test_provenance_reads_the_installed_version():
    from importlib import metadata

    assert metadata.version("cryptography") == CRYPTOGRAPHY.version
    assert CRYPTOGRAPHY.native
    assert Provenance.of_installed("no-such-distribution-xyz", native=False).version == (
        "not installed"
    )


def test_describe_schemes_lists_every_scheme():
    records = describe_schemes()
    assert [r["name"] for r in records] == scheme_names()
    for record in records:
        assert set(record) >= {"name", "key_establishment", "properties", "provenance"}
        assert record["overhead_plaintext_bytes"] == 256
