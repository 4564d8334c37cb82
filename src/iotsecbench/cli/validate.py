"""``iotsecbench validate --device P``: a device profile's predictions against published
silicon (``energy.validation``, ``energy/published.toml``)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from iotsecbench.cli import output_console


def validate(
    device: Annotated[
        str,
        typer.Option(
            "--device", help="A packaged device profile (e.g. esp32-wroom-32) or a .toml path."
        ),
    ] = "esp32-wroom-32",
    draws: Annotated[
        int, typer.Option("--draws", help="Draws of the profile behind the model range.")
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the profile's draws.")] = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Machine-readable: every comparison and the summary.")
    ] = False,
) -> None:
    """Predicted (with the model's 90 % range) against published device figures.

    Every figure of the profile's device family in energy/published.toml — cycle counts and
    times of primitives published for ESP32, ESP32-C3 and Cortex-M4 boards, each with its
    device, clock, library, source and date — predicted from the profile at the figure's
    clock, the error, and a summary over the figures the profile claims to describe (its
    prices were made for that implementation): median |error| and the share inside the
    model's range (the shipped profiles' goal: 90 %). Figures of another implementation are
    shown, not counted (docs/device-facts.md).
    """
    from iotsecbench.energy.uncertainty import check_draws

    check_draws(draws, seed)
    from iotsecbench.energy.profile import load_profile
    from iotsecbench.energy.validation import summary
    from iotsecbench.energy.validation import validate as compare

    profile = load_profile(device)
    comparisons = compare(profile, draws=draws, seed=seed)
    totals = summary(comparisons)
    if as_json:
        document = {
            "device": profile.name,
            "family": profile.family,
            "label": f"modelled ({profile.name}) against published figures",
            "comparisons": [c.to_dict() for c in comparisons],
            "summary": totals,
        }
        typer.echo(json.dumps(document, indent=2))
        return
    from rich.table import Table

    table = Table(
        title=f"{profile.name} (modelled, 90 % range) against published figures of "
        f"{profile.family}: * = claimed by the profile",
        title_justify="left",
        header_style="bold",
    )
    for heading in ("operation", "source board, library", "MHz", "unit", "published",
                    "predicted", "model 90 %", "error"):  # fmt: skip
        table.add_column(heading, justify="left" if heading[0] in "os" else "right")
    for c in comparisons:
        p = c.published
        digits = 0 if p.unit == "cycles" else 2
        predicted = "unpriced" if c.predicted is None else f"{c.predicted:,.{digits}f}"
        model = "–" if c.low is None else f"{c.low:,.{digits}f}–{c.high:,.{digits}f}"
        error = "–" if c.error is None else f"{c.error * 100:+.0f} %" + ("" if c.inside else " !")
        table.add_row(
            ("* " if c.claimed else "  ") + p.operation,
            f"{p.device.split(' (')[0]}, {p.library}",
            f"{p.clock_mhz:g}",
            p.unit,
            f"{p.figure:,.{digits}f}",
            predicted,
            model,
            error,
        )
    console = output_console()
    console.print(table)
    if totals["claimed"]:
        console.print(
            f"claimed figures: {totals['claimed']}; median |error| "
            f"{totals['median_abs_error'] * 100:.1f} %; inside the model's 90 % range: "
            f"{totals['inside_model_range'] * 100:.0f} % (goal {totals['goal'] * 100:.0f} %)",
            highlight=False,
        )
    else:
        console.print(
            f"no published figure is claimed by {profile.name}: the {totals['shown']} shown are "
            "of other implementations (their notes in energy/published.toml say which)",
            highlight=False,
        )
    if totals["unpriced"]:
        console.print(f"{totals['unpriced']} figure(s) of operations the profile does not price")


def register(app: typer.Typer) -> None:
    app.command()(validate)
