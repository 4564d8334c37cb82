"""What a native build links, without building anything: the stacks and parts a build name
carries, where each stack's library comes from (Debian's, or built here from registry source),
and the source build's cache key, which must follow its configuration."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iotsecbench.agents import native
from iotsecbench.agents.native import libraries


@pytest.fixture(autouse=True)
def _no_compiler_run(monkeypatch: pytest.MonkeyPatch):
    """The cache key names the compiler (``gcc --version``): a fixed one here, so these
    tests start no process; no key computed with it outlives the test."""
    monkeypatch.setattr(libraries, "_compiler", lambda: "gcc (a fixed version for tests)")
    libraries.fingerprint.cache_clear()
    yield
    monkeypatch.undo()
    libraries.fingerprint.cache_clear()


@pytest.mark.parametrize(
    ("name", "stack", "family", "tls", "scheme"),
    [
        ("plain", "none", "none", False, False),
        ("mbedtls-tls", "mbedtls", "mbedtls", True, False),
        ("wolfssl-scheme", "wolfssl", "wolfssl", False, True),
        ("wolfssl-5.9-tls", "wolfssl-5.9", "wolfssl", True, False),
        ("wolfssl-5.9-tls-scheme", "wolfssl-5.9", "wolfssl", True, True),
    ],
)
def test_a_build_name_says_its_stack_and_parts(
    name: str, stack: str, family: str, tls: bool, scheme: bool
) -> None:
    build = native.Build.named(name)
    assert (build.stack, build.family, build.tls, build.scheme) == (stack, family, tls, scheme)
    assert native.build_for(stack, tls=tls, scheme=scheme) == name


def test_every_native_stack_has_its_three_builds() -> None:
    for stack in ("mbedtls", "wolfssl", "wolfssl-5.9"):
        assert {f"{stack}-tls", f"{stack}-scheme", f"{stack}-tls-scheme"} <= set(native.BUILDS)
    with pytest.raises(ValueError, match="unknown native build"):
        native.Build.named("wolfssl-6.0-tls")


def test_the_source_build_links_its_own_archive_and_names_itself() -> None:
    build = native.Build.named("wolfssl-5.9-tls")
    assert build.source_library is libraries.WOLFSSL_59
    assert build.archives == (libraries.archive_path(libraries.WOLFSSL_59),)
    command = native._commands("wolfssl-5.9-tls", Path("out"), Path("lib"))[-1]
    include = libraries.prefix(libraries.WOLFSSL_59) / "include"
    assert f"-I{include}" in command and "-DWOLFSSL_USER_SETTINGS" in command
    assert '-DIOTSB_STACK_NAME="wolfssl-5.9"' in command
    assert any(part.endswith("tls_wolfssl.c") for part in command)  # the wolfSSL glue
    # Debian's wolfSSL keeps its archive and no settings file
    debian = native._commands("wolfssl-tls", Path("out"), Path("lib"))[-1]
    assert "/usr/lib/x86_64-linux-gnu/libwolfssl.a" in debian
    assert not any(part.startswith("-DIOTSB_STACK_NAME") for part in debian)


def test_a_missing_source_build_is_one_line_naming_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    problem = libraries.problem(libraries.WOLFSSL_59)
    assert problem is not None and "\n" not in problem
    assert "wolfSSL 5.9.4" in problem and "python -m iotsecbench.agents.native.libraries" in problem
    if shutil.which("gcc") and Path("/usr/include/cjson/cJSON.h").exists():
        assert native.problem("wolfssl-5.9-tls") == problem


def test_the_cache_key_follows_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Editing the settings file builds a new library beside the old one."""
    before = libraries.fingerprint(libraries.WOLFSSL_59)
    configs = tmp_path / "configs"
    shutil.copytree(libraries.CONFIG_DIR, configs)
    settings = configs / libraries.WOLFSSL_59.config
    settings.write_text(settings.read_text() + "\n#define WOLFSSL_AES_CFB\n")
    with monkeypatch.context() as patch:
        patch.setattr(libraries, "CONFIG_DIR", configs)
        libraries.fingerprint.cache_clear()
        edited = libraries.fingerprint(libraries.WOLFSSL_59)
    libraries.fingerprint.cache_clear()
    assert edited != before
    assert libraries.prefix(libraries.WOLFSSL_59).name == f"wolfssl-5.9-{before}"
