"""``files.exclusive``: a build into the shared cache that two workers start at once is done
once; the other waits for it and finds it done."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from iotsecbench.files import exclusive, write_secret


def test_two_concurrent_first_uses_build_once(tmp_path: Path) -> None:
    built = tmp_path / "cache" / "program"
    builds: list[str] = []
    found: list[bool] = []

    def first_use(name: str) -> None:
        with exclusive(built.parent / ".lock"):
            if built.exists():
                found.append(True)
                return
            builds.append(name)
            time.sleep(0.05)  # a build in progress: the other thread arrives now
            built.write_text(name)

    threads = [threading.Thread(target=first_use, args=(str(n),)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(builds) == 1 and found == [True, True, True]
    assert built.read_text() == builds[0]


def test_a_secret_is_private_whole_and_never_overwritten(tmp_path: Path) -> None:
    path = write_secret(tmp_path / "agent.config.json", b'{"password": "p"}')
    assert path.read_bytes() == b'{"password": "p"}'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):
        write_secret(path, b"other")
    assert path.read_bytes() == b'{"password": "p"}'
    assert [p.name for p in tmp_path.iterdir()] == ["agent.config.json"]  # no temporary left


def test_a_watcher_never_sees_a_secret_empty_or_half_written(tmp_path: Path) -> None:
    """A CI run's capture thread read an agent config between its creation and its write."""
    data, count, seen_short = b"x" * (1 << 20), 40, []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for path in tmp_path.glob("s*"):
                with contextlib.suppress(FileNotFoundError):
                    if path.stat().st_size != len(data):
                        seen_short.append(path.stat().st_size)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for index in range(count):
            write_secret(tmp_path / f"s{index}", data)
    finally:
        done.set()
        watcher.join()
    assert seen_short == []
    assert len(list(tmp_path.glob("s*"))) == count


def test_without_hard_links_a_secret_is_still_private_and_exclusive(tmp_path, monkeypatch):
    def no_links(source, target):
        raise OSError(errno.EPERM, "Operation not permitted", source)

    monkeypatch.setattr(os, "link", no_links)
    path = write_secret(tmp_path / "key", b"secret")
    assert path.read_bytes() == b"secret" and stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):
        write_secret(path, b"other")
    assert [p.name for p in tmp_path.iterdir()] == ["key"]
