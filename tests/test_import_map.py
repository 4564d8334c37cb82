"""The import map of docs/internals.md is enforced: every ``iotsecbench`` import of every
module (top level or inside a function) must be an arrow the map allows."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "iotsecbench"
LEAVES = {"errors", "files", "signals", "sources"}  # modules every package may import


def allowed_arrows() -> dict[str, set[str] | None]:
    """package → the packages it may import (None: every package), from docs/internals.md."""
    text = (ROOT / "docs" / "internals.md").read_text()
    table = re.search(r"<!-- import-map -->(.*?)<!-- /import-map -->", text, re.S)
    assert table, "docs/internals.md lost its <!-- import-map --> table"
    arrows: dict[str, set[str] | None] = {}
    for line in table.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        package = re.fullmatch(r"`(\w+)`", cells[0]) if len(cells) == 2 else None
        if package is None:
            continue
        if cells[1].startswith("every package"):
            arrows[package.group(1)] = None
        else:
            listed = cells[1].split("(")[0]
            arrows[package.group(1)] = set(re.findall(r"`(\w+)`", listed))
    return arrows


def imports_of(path: Path) -> set[str]:
    """The project packages/modules a file imports (second name of ``iotsecbench.x.y``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "iotsecbench":
                names += [f"iotsecbench.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            raise AssertionError(f"{path}: relative import; the map checks absolute ones")
        found.update(n.split(".")[1] for n in names if n.startswith("iotsecbench."))
    return found


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_every_import_is_an_arrow_of_the_map() -> None:
    arrows = allowed_arrows()
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(arrows), f"packages missing from the map: {packages - set(arrows)}"
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if len(relative.parts) == 1:
            continue  # top-level modules: __main__ (enters cli), errors, files (leaves)
        source = relative.parts[0]
        allowed = arrows[source]
        for target in sorted(imports_of(path) - {source} - LEAVES - {"__version__"}):
            if allowed is not None and target not in allowed:
                problems.append(f"{relative} imports {target}: not an arrow of the map")
    assert not problems, "\n".join(problems)


def test_procedures_spanning_rooms_live_in_workflows() -> None:
    """The runner executes and stores runs: what comes after (the report, a meter trace
    placed in a run) is a workflow's; the lab does not reach into the virtual MCUs."""
    arrows = allowed_arrows()
    forbidden = {"runner": {"report", "meters"}, "lab": {"vmcu"}}
    for package, targets in forbidden.items():
        assert not (arrows[package] or set()) & targets, f"{package} → {targets & arrows[package]}"
    assert arrows["workflows"] is not None and {"report", "meters", "vmcu"} <= arrows["workflows"]


def test_design_lists_every_package_as_a_room() -> None:
    """docs/design.md's room table names every package of src/iotsecbench."""
    text = (ROOT / "docs" / "design.md").read_text()
    rooms = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages <= rooms, f"rooms missing from docs/design.md: {sorted(packages - rooms)}"


def test_leaves_import_nothing_of_the_project() -> None:
    for leaf in LEAVES:
        assert imports_of(PACKAGE / f"{leaf}.py") <= LEAVES, leaf


def test_the_check_catches_a_forbidden_arrow(tmp_path: Path) -> None:
    """The checker itself: an analysis module importing the runner is reported."""
    module = tmp_path / "bad.py"
    module.write_text("def f():\n    from iotsecbench.runner import local\n")
    assert imports_of(module) == {"runner"}
    assert "runner" not in (allowed_arrows()["analysis"] or set())


def test_code_cites_the_docs_in_the_repository() -> None:
    """Comments and profile sources cite docs/ pages a clone has, not files outside it."""
    outside = re.compile(
        r"(\.\./)?shared/|\b(DEVICE-FACTS|RELIABILITY|SYSTEMS)\b|\b(DESIGN|STYLE)\.md"
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(PACKAGE.rglob("*"))
        if path.suffix in {".py", ".toml", ".c", ".h"}
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if outside.search(line)
    ]
    assert not offenders, f"citations of files outside the repository: {offenders}"
