"""One look for every figure: colour-blind-safe palette, units on axes, consistent colours.

The palette is Okabe & Ito's (2008, "Color Universal Design"), distinguishable under the
common forms of colour blindness; each configuration keeps its colour across all figures.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # files only, never a window (reports are built headless)

import matplotlib.pyplot as plt

OKABE_ITO = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
LINE_STYLES = ("-", "--", "-.", ":")

RC = {
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.constrained_layout.use": True,
}


class Palette:
    """Stable colour (and line style, for print in grey) per configuration."""

    def __init__(self, configurations: Sequence[str]) -> None:
        self.configurations = list(configurations)

    def color(self, configuration: str) -> str:
        index = self._index(configuration)
        return OKABE_ITO[index % len(OKABE_ITO)]

    def line_style(self, configuration: str) -> str:
        return LINE_STYLES[(self._index(configuration) // len(OKABE_ITO)) % len(LINE_STYLES)]

    def _index(self, configuration: str) -> int:
        if configuration not in self.configurations:
            self.configurations.append(configuration)
        return self.configurations.index(configuration)


def styled(function):
    """Run a figure builder with the report's style (without touching global settings)."""

    def wrapper(*args, **kwargs):
        with plt.rc_context(RC):
            return function(*args, **kwargs)

    wrapper.__name__ = function.__name__
    wrapper.__doc__ = function.__doc__
    return wrapper
