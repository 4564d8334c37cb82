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

from iotsecbench.errors import DataError, NoPermissionError, SpecError
from iotsecbench.files import read_config_text
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
    """Read a spec file: a regular file of bounded size (files.read_config_text), TOML of
    bounded nesting; every problem one line naming the file."""
    text = read_config_text(path, "spec file")
    return parse_toml(text, str(path))


def parse_toml(text: str, origin: str) -> dict[str, Any]:
    """TOML text as a mapping; SpecError naming ``origin`` when it is not TOML or nests
    deeper than Python's parser can follow (``[[[[…``)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"{origin}: not valid TOML: {error}") from None
    except RecursionError:
        raise SpecError(f"{origin}: nested too deeply to be a spec") from None


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
    if given.get("target") is not None and "warmup" in given:  # counted: no warm-up to skip
        raise SpecError("--warmup belongs to the traced method, not --target")
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


SPEC_FILENAME = "spec.json"  # in a results directory: the experiment as run (--resume)

# Fields that may change when an experiment is resumed: more repetitions extend it, and the
# name and description are labels (the same exemptions as ExperimentSpec.config_hash).
RESUMABLE_CHANGES = frozenset({"repetitions", "name", "description", "configuration_labels"})


def stored_spec_data(results_dir: Path) -> dict[str, Any] | None:
    """The experiment a results directory was made with (``spec.json``, else the spec in
    ``experiment.json``), or None when the directory holds neither; the file that cannot be
    read is named (exit 4; exit 3 when it may not be read)."""
    spec_file = results_dir / SPEC_FILENAME
    experiment_file = results_dir / "experiment.json"
    source = spec_file if spec_file.is_file() else experiment_file
    if not source.is_file():
        return None
    try:
        stored = json.loads(source.read_text(encoding="utf-8"))
        if source is experiment_file:
            stored = json.loads(stored["experiment"]["spec_json"])
        if not isinstance(stored, dict):
            raise TypeError("not a JSON object")
        return stored
    except PermissionError as error:
        raise NoPermissionError(f"cannot read the stored experiment {source}: {error}") from None
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise DataError(
            f"the stored experiment {source} is unreadable ({error}); restore it, give the "
            "spec again or use a new --out"
        ) from None


# What a results directory holds once an experiment has started in it (a directory with
# none of these is empty: nothing to resume).
EXPERIMENT_FILES = (SPEC_FILENAME, "experiment.json", "results.duckdb", "runs")


def resume_spec(
    results_dir: Path,
    path: Path | None = None,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    option_names: dict[str, str] | None = None,
    canonical: Callable[[ExperimentSpec], ExperimentSpec] | None = None,
) -> ExperimentSpec:
    """``run --resume --out DIR``: the experiment stored in DIR, so options need not be typed
    again. Whatever is given again (a spec file, a preset, options) must agree with it, except
    the fields in ``RESUMABLE_CHANGES``; a disagreement is one SpecError naming the option or
    field. Never a guess: a missing or empty DIR is refused, and so is one without a stored
    spec unless the spec file or preset is given again (options alone would fall back on the
    default experiment). ``canonical`` names what is given again canonically (the runner's
    ``canonical_configurations``) before the comparison, unless the stored experiment was
    made before names were canonical: its names then stay as stored, or its runs would
    change their ids."""
    if not results_dir.is_dir():
        what = "is a file, not a directory" if results_dir.exists() else "does not exist"
        raise SpecError(f"--out {results_dir} {what}: nothing to resume (drop --resume to start)")
    if not any((results_dir / name).exists() for name in EXPERIMENT_FILES):
        raise SpecError(
            f"--out {results_dir} holds no experiment: nothing to resume; start one there "
            "with the spec file or --preset and its options, without --resume"
        )
    stored_data = stored_spec_data(results_dir)
    if stored_data is None:
        if path is None and preset is None:
            raise SpecError(
                f"{results_dir} holds no stored experiment spec (its runner stopped before "
                "storing it): give the spec file or --preset, and the options it was started "
                f"with, to resume it: iotsecbench run SPEC [options] --resume --out {results_dir}"
            )
        given_again = load_spec(path, preset, overrides)
        return canonical(given_again) if canonical is not None else given_again
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
