"""``iotsecbench predict handshake``: a TLS handshake's modelled device time from a device
profile alone, with the model's range (``energy.handshake``)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from iotsecbench.cli import output_console
from iotsecbench.errors import SpecError

# The iotst study's four TLS 1.3 profiles (spec/presets/iotst.toml) and the lab's TLS 1.2
# default: what `predict handshake` prices without --profiles.
DEFAULT_TLS_PROFILES = (
    "tls1.2",
    "tls1.3/x25519/rsa3072",
    "tls1.3/x25519/ecdsa-p256",
    "tls1.3/P-256/rsa3072",
    "tls1.3/P-256/ecdsa-p256",
)


# Ceilings on what --clocks and --cores may ask for: beyond any microcontroller (and an
# application processor's cores), so a typo is refused rather than priced.
MAX_CLOCK_MHZ = 10_000.0
MAX_CORES = 64


def _numbers(text: str, option: str, kind: type, ceiling: float) -> list[Any]:
    try:
        values = [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SpecError(f"{option} {text!r}: give numbers separated by commas") from None
    if not values or any(not 0 < v <= ceiling for v in values):  # nan fails this too
        raise SpecError(f"{option} {text!r}: give numbers from above 0 to {ceiling:g}")
    return values


def prediction_records(
    device: str,
    tls_profiles: list[str],
    clocks_mhz: list[float] | None,
    cores: list[int] | None,
    draws: int,
    seed: int,
) -> dict[str, Any]:
    """Every TLS profile × clock × core count's modelled handshake seconds with its range
    (``--json``'s document)."""
    from iotsecbench.energy.handshake import assumptions, handshake_table, unpriced
    from iotsecbench.energy.profile import load_profile
    from iotsecbench.security.tls import expected_handshake_operations
    from iotsecbench.security.tls.profile import parse_profile

    profile = load_profile(device)
    clocks = clocks_mhz or list(profile.clocks_mhz) or [profile.cpu_clock_hz / 1e6]
    counts = cores or list(profile.cores)
    records: list[dict[str, Any]] = []
    notes: dict[str, list[str]] = {}
    for name in tls_profiles:
        operations = expected_handshake_operations(parse_profile(name))
        table = handshake_table(profile, operations, clocks, counts, draws, seed)
        for entry in table.values():
            records.append({"profile": name, **entry})
        notes[name] = [
            *(f"unpriced (costs nothing): {op}" for op in unpriced(profile, operations)),
            *assumptions(profile, operations),
        ]
    return {
        "label": f"modelled ({profile.name})",
        "device": profile.name,
        "reference_clock_mhz": profile.cpu_clock_hz / 1e6,
        "draws": draws,
        "seed": seed,
        "records": records,
        "notes": notes,
    }


def handshake(
    device: Annotated[
        str,
        typer.Option(
            "--device", help="A packaged device profile (e.g. esp32-wroom-32) or a .toml path."
        ),
    ] = "esp32-wroom-32",
    profiles: Annotated[
        str | None,
        typer.Option(
            "--profiles",
            help="TLS profiles, comma-separated short names (docs/tls.md); default: tls1.2 and "
            "the iotst study's four TLS 1.3 profiles.",
        ),
    ] = None,
    clocks: Annotated[
        str | None,
        typer.Option("--clocks", help="CPU clocks in MHz (default: the profile's clocks_mhz)."),
    ] = None,
    cores: Annotated[
        str | None,
        typer.Option("--cores", help="Active core counts (default: the profile's cores)."),
    ] = None,
    draws: Annotated[
        int, typer.Option("--draws", help="Draws of the profile behind the model range.")
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the profile's draws.")] = 0,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Machine-readable: records of profile, clock_mhz, cores, seconds, model_range.",
        ),
    ] = False,
) -> None:
    """Modelled device time of a TLS client handshake at each clock and core count.

    The operations each TLS profile performs (as the lab counts them on a real connection:
    key exchange, signature checks of the chain, the client's own signature when mutual)
    priced with the device profile at its clock, split into the part that scales with the
    CPU clock and the part on a fixed bus clock (accelerators), plus the profile's
    per-handshake overhead and extra-core slowdown (docs/energy-model.md). Each figure is
    *modelled* and carries the model's 90 % range: the central 90 % of the figure over draws
    of the profile's numbers from their stated ranges.
    """
    from iotsecbench.energy.uncertainty import check_draws

    check_draws(draws, seed)
    from iotsecbench.security.tls.profile import parse_profile

    names = [p.strip() for p in (profiles or ",".join(DEFAULT_TLS_PROFILES)).split(",")]
    for name in names:
        parse_profile(name)  # an unknown profile ends here, before any work
    document = prediction_records(
        device,
        [n for n in names if n],
        _numbers(clocks, "--clocks", float, MAX_CLOCK_MHZ) if clocks else None,
        _numbers(cores, "--cores", int, MAX_CORES) if cores else None,
        draws,
        seed,
    )
    if as_json:
        typer.echo(json.dumps(document, indent=2))
        return
    from rich.table import Table

    table = Table(
        title=f"TLS client handshake, {document['label']}: seconds at the profile's values, "
        "model 90 % range",
        title_justify="left",
        header_style="bold",
    )
    for heading in ("TLS profile", "clock MHz", "cores", "ms", "model 90 % (ms)"):
        table.add_column(heading, justify="left" if heading == "TLS profile" else "right")
    for record in document["records"]:
        model = record["model_range"]
        table.add_row(
            record["profile"],
            f"{record['clock_mhz']:g}",
            str(record["cores"]),
            f"{record['seconds'] * 1e3:,.1f}",
            f"{model['low'] * 1e3:,.1f}–{model['high'] * 1e3:,.1f}",
        )
    console = output_console()
    console.print(table)
    for name, lines in document["notes"].items():
        for line in lines:
            console.print(f"[dim]{name}: {line}[/]", highlight=False)
    console.print(f"[dim]{document['records'][0]['model_range']['method']}[/]", highlight=False)


def register(app: typer.Typer) -> None:
    predict_app = typer.Typer(
        help="Modelled device figures from a device profile alone, with the model's range.",
        no_args_is_help=True,
    )
    predict_app.command()(handshake)
    app.add_typer(predict_app, name="predict")
