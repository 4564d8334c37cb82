"""Loading experiment specs from TOML files, presets and command-line overrides.

Precedence (lowest to highest): model defaults → preset or TOML file → command-line flags.
Every validation failure becomes one ``SpecError`` line naming the field.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from iotsecbench.errors import EnvironmentProblem, SpecError
from iotsecbench.spec.models import ExperimentSpec


def _format_validation_error(error: ValidationError, origin: str) -> str:
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"]) or "spec"
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown key (check its spelling; see `iotsecbench run --help`)"
    more = len(error.errors()) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{origin}: {location}: {message}{suffix}"


def build_spec(data: dict[str, Any], origin: str = "experiment spec") -> ExperimentSpec:
    """Validate a mapping into an ``ExperimentSpec``; errors name the field and the origin."""
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as error:
        raise SpecError(_format_validation_error(error, origin)) from None


def read_toml(path: Path) -> dict[str, Any]:
    """Read a spec file; a missing file is the environment's fault, bad TOML the user's."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"spec file {path} does not exist") from None
    except IsADirectoryError:
        raise SpecError(f"spec file {path} is a directory (give a .toml file)") from None
    except OSError as error:
        raise EnvironmentProblem(f"cannot read spec file {path}: {error.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"{path}: not valid TOML: {error}") from None


def preset_names() -> list[str]:
    """Names of the built-in presets (``spec/presets/*.toml``)."""
    folder = resources.files("iotsecbench.spec") / "presets"
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    )


def preset_data(name: str) -> dict[str, Any]:
    """The raw mapping of a built-in preset."""
    if name not in preset_names():
        raise SpecError(f"unknown preset '{name}' (known: {', '.join(preset_names())})")
    text = (resources.files("iotsecbench.spec") / "presets" / f"{name}.toml").read_text()
    data = tomllib.loads(text)
    if data.get("kind") == "bench-handshake":  # a benchmark preset, not an experiment
        raise SpecError(
            f"preset '{name}' is a handshake benchmark: iotsecbench bench handshake --preset {name}"
        )
    return data


def load_spec(
    path: Path | None = None,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> ExperimentSpec:
    """Layer defaults, a preset or a file, and overrides into one validated spec."""
    if path is not None and preset is not None:
        raise SpecError("give either a spec file or --preset, not both")
    if path is not None:
        data, origin = read_toml(path), str(path)
    else:
        data, origin = preset_data(preset or "default"), f"preset '{preset or 'default'}'"
    merged = {**data, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    if overrides and any(v is not None for v in overrides.values()):
        origin = f"{origin} with command-line overrides"
    return build_spec(merged, origin)
