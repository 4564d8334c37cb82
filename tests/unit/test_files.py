"""``files.exclusive``: a build into the shared cache that two workers start at once is done
once; the other waits for it and finds it done."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from iotsecbench.files import exclusive


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
