"""A PyPI source distribution as a firmware source (``iotsecbench.sources``, tiny-AES-c for the
device's tinyaes128-ctr-hmac): fetched with pip, checked against its pinned SHA-256, unpacked
once; an offline or failing pip is one line (exit 3), a wrong checksum corrupt data (exit 4)
with nothing unpacked. pip itself is replaced here: no network."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from iotsecbench import sources
from iotsecbench.errors import DataError, EnvironmentProblem
from iotsecbench.sources import PYPI, Archive


def _sdist() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        data = b"int answer(void) { return 42; }\n"
        info = tarfile.TarInfo("pkg-1.0/c-src/answer.c")
        info.size = len(data)
        bundle.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


SDIST = _sdist()


def _archive(sha256: str) -> Archive:
    return Archive("pkg", "pkg", "1.0", sha256, "c-src", "pkg's C", registry=PYPI)


def _fake_pip(calls: list[list[str]], works: bool = True):
    def run(command, **_):
        calls.append(command)
        if not works:
            return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution")
        into = Path(command[command.index("-d") + 1])
        into.mkdir(parents=True, exist_ok=True)
        (into / "pkg-1.0.tar.gz").write_bytes(SDIST)
        return subprocess.CompletedProcess(command, 0, "", "")

    return run


def test_a_pinned_sdist_is_fetched_with_pip_once(monkeypatch, tmp_path):
    calls: list[list[str]] = []
    monkeypatch.setattr(sources.subprocess, "run", _fake_pip(calls))
    archive = _archive(hashlib.sha256(SDIST).hexdigest())
    root = sources.unpack(archive, tmp_path, "the tests")
    assert (root / "answer.c").read_text().startswith("int answer")
    assert calls[0][1:4] == ["-m", "pip", "download"] and "pkg==1.0" in calls[0]
    assert sources.unpack(archive, tmp_path, "the tests") == root and len(calls) == 1


def test_a_wrong_checksum_unpacks_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(sources.subprocess, "run", _fake_pip([]))
    with pytest.raises(DataError, match="expected 00"):
        sources.unpack(_archive("00" * 32), tmp_path, "the tests")
    assert not (tmp_path / "pkg-1.0").exists()


def test_pip_failing_is_one_line_naming_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(sources.subprocess, "run", _fake_pip([], works=False))
    with pytest.raises(EnvironmentProblem) as raised:
        sources.unpack(_archive("00" * 32), tmp_path, "the tests")
    message = str(raised.value)
    assert "pip download pkg==1.0" in message and "No matching distribution" in message
    assert "\n" not in message
