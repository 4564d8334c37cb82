"""Loading experiment specs from TOML files, presets and command-line overrides.

Precedence (lowest to highest): model defaults → preset or TOML file → command-line flags.
Every validation failure becomes one ``SpecError`` line naming the field.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from iotsecbench.errors import DataError, EnvironmentProblem, NoPermissionError, SpecError
from iotsecbench.spec.bench import BENCH_HANDSHAKE, HOST_ONLY, HandshakeBenchmarkSpec
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
    except UnicodeDecodeError as error:
        raise SpecError(
            f"spec file {path} is not UTF-8 text (byte {error.start}); save it as UTF-8"
        ) from None
    except PermissionError as error:
        raise NoPermissionError(f"cannot read spec file {path}: {error.strerror}") from None
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


def _preset_file(name: str) -> dict[str, Any]:
    text = (resources.files("iotsecbench.spec") / "presets" / f"{name}.toml").read_text()
    return tomllib.loads(text)


def preset_data(name: str) -> dict[str, Any]:
    """The raw mapping of a built-in preset."""
    if name not in preset_names():
        raise SpecError(f"unknown preset '{name}' (known: {', '.join(preset_names())})")
    data = _preset_file(name)
    if data.get("kind") == BENCH_HANDSHAKE:  # a benchmark preset, not an experiment
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


def handshake_preset_names() -> list[str]:
    """The built-in presets of ``bench handshake`` (``kind = "bench-handshake"``)."""
    return [name for name in preset_names() if _preset_file(name).get("kind") == BENCH_HANDSHAKE]


def load_handshake_spec(
    preset: str | None, options: dict[str, Any], option_names: dict[str, str]
) -> HandshakeBenchmarkSpec:
    """``bench handshake``'s settings: model defaults, then the preset, then the options given
    on the command line (None: not given). ``--profiles`` adds to the preset's profiles; a
    given ``--reps`` or ``--target-ci`` replaces the preset's pair of them. A bad value is one
    SpecError naming the option (``option_names``: field → flag) or the preset's field."""
    data: dict[str, Any] = {}
    origin = "command-line options"
    if preset is not None:
        known = handshake_preset_names()
        if preset not in known:
            raise SpecError(f"unknown handshake preset {preset!r} (known: {', '.join(known)})")
        data, origin = _preset_file(preset), f"preset {preset!r}"
    given = {key: value for key, value in options.items() if value is not None}
    if "repetitions" in given or "target_ci" in given:
        data = {k: v for k, v in data.items() if k not in ("repetitions", "target_ci")}
    if given.get("target") is not None:  # counted: the preset's host settings do not apply
        data = {k: v for k, v in data.items() if k not in (*HOST_ONLY, "device")}
    profiles = [*data.get("profiles", []), *given.pop("profiles", [])]
    try:
        return HandshakeBenchmarkSpec.model_validate({**data, **given, "profiles": profiles})
    except ValidationError as error:
        first = error.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else None
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown key (check its spelling)"
        if field is None:
            raise SpecError(message) from None
        if field in given:
            raise SpecError(f"{option_names.get(field, field)}: {message}") from None
        raise SpecError(f"{origin}: {field}: {message}") from None


# Fields that may change when an experiment is resumed: more repetitions extend it, and the
# name and description are labels (the same exemptions as ExperimentSpec.config_hash).
RESUMABLE_CHANGES = frozenset({"repetitions", "name", "description", "configuration_labels"})


def stored_spec_data(results_dir: Path) -> dict[str, Any] | None:
    """The experiment a results directory was made with (``spec.json``, else the spec in
    ``experiment.json``), or None when the directory holds neither."""
    spec_file = results_dir / "spec.json"
    experiment_file = results_dir / "experiment.json"
    try:
        if spec_file.is_file():
            return json.loads(spec_file.read_text(encoding="utf-8"))
        if experiment_file.is_file():
            document = json.loads(experiment_file.read_text(encoding="utf-8"))
            return json.loads(document["experiment"]["spec_json"])
    except PermissionError as error:
        raise NoPermissionError(f"cannot read the stored experiment: {error}") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DataError(
            f"the stored experiment in {results_dir} is unreadable ({error}); give the spec "
            "again or use a new --out"
        ) from None
    return None


def resume_spec(
    results_dir: Path,
    path: Path | None = None,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    option_names: dict[str, str] | None = None,
    canonical: Callable[[ExperimentSpec], ExperimentSpec] | None = None,
) -> ExperimentSpec | None:
    """``run --resume --out DIR``: the experiment stored in DIR, so options need not be typed
    again. Whatever is given again (a spec file, a preset, options) must agree with it, except
    the fields in ``RESUMABLE_CHANGES``; a disagreement is one SpecError naming the option or
    field. None when DIR holds no stored experiment (the resume then starts it afresh).
    ``canonical`` names what is given again canonically (the runner's
    ``canonical_configurations``) before the comparison, unless the stored experiment was
    made before names were canonical: its names then stay as stored, or its runs would
    change their ids."""
    stored_data = stored_spec_data(results_dir)
    if stored_data is None:
        return None
    stored = build_spec(stored_data, f"stored experiment {results_dir}/spec.json")
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    if path is not None or preset is not None:
        wanted = load_spec(path, preset, overrides)
    else:
        wanted = build_spec({**stored_data, **given}, "command-line options")
    if canonical is not None and canonical(stored) == stored:
        wanted = canonical(wanted)
    before, after = stored.model_dump(mode="json"), wanted.model_dump(mode="json")
    for field in before:
        if field in RESUMABLE_CHANGES or before[field] == after[field]:
            continue
        if field in given:
            source = (option_names or {}).get(field, field)
        else:
            source = f"{field} in {path}" if path is not None else f"{field} of preset {preset!r}"
        raise SpecError(
            f"{source} gives {after[field]!r} but the experiment in {results_dir} has "
            f"{before[field]!r}; drop it to resume, or use a new --out (or --force-new-run)"
        )
    return wanted
