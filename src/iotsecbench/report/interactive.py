"""Figures to explore: a matplotlib figure as inline SVG plus the data a reader can hover.

The figure builders stay the one place a figure is drawn. Here each drawn figure is saved
as SVG, its labelled series get SVG ids (so the page can hide and show them), and every
data point is located in the SVG's own coordinates with the values it stands for (so the
page can show them under the pointer). The page's script (``html.FIGURE_SCRIPT``) needs no
plotting library at view time: the SVG is the plot.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from matplotlib.collections import Collection
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": "iotsecbench"}  # text stays text; stable ids
SVG_METADATA_KEYS = ("Creator", "Date", "Format", "Type")
MAX_POINTS_PER_SERIES = 400  # beyond this, hover points are thinned evenly (the SVG is not)


@dataclass
class Hover:
    """What the page needs: SVG size, series (label, colour, id prefix), points."""

    width: float
    height: float
    series: list[dict[str, str]] = field(default_factory=list)
    points: list[list[Any]] = field(default_factory=list)  # [x, y, series index, text]

    def to_dict(self) -> dict[str, Any]:
        return {"w": self.width, "h": self.height, "series": self.series, "points": self.points}


def _value(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else "–"


def _colour(artist: Any) -> str:
    try:
        if isinstance(artist, Line2D):
            return to_hex(artist.get_color())
        if isinstance(artist, Collection):
            colours = artist.get_facecolor()
            return to_hex(colours[0]) if len(colours) else "#555555"
        return to_hex(artist.get_facecolor())
    except (ValueError, TypeError, IndexError):
        return "#555555"


def _labelled(figure: Figure, key: str) -> dict[str, tuple[str, list[Any]]]:
    """Series label → (colour, artists) over every axes; unlabelled helpers are left out."""
    series: dict[str, tuple[str, list[Any]]] = {}

    def add(label: str, artist: Any, colour_of: Any) -> None:
        if not label or label.startswith("_"):
            return
        entry = series.setdefault(label, (_colour(colour_of), []))
        entry[1].append(artist)

    for axes in figure.axes:
        for container in axes.containers:
            if isinstance(container, BarContainer):
                for patch in container.patches:
                    add(container.get_label(), patch, container.patches[0])
        for artist in (*axes.get_lines(), *axes.collections):
            add(artist.get_label(), artist, artist)
    for index, (_, artists) in enumerate(series.values()):
        for number, artist in enumerate(artists):
            artist.set_gid(f"{key}-s{index}-{number}")
    return series


def _axis_words(axes: Any) -> Callable[[float, float], str]:
    """What a point of ``axes`` says: ``(x, y) -> "xlabel: x · ylabel: y"``, an x on a
    category tick named by its category. The ticks are read once per axes: each read of
    them lays the axis out again (about a third of a report's drawing time when it was done
    per point)."""
    xlabel, ylabel = axes.get_xlabel() or "x", axes.get_ylabel() or "y"
    linear = axes.xaxis.get_scale() == "linear"
    ticks = {round(t, 6): label.get_text() for t, label in zip(
        axes.get_xticks(), axes.get_xticklabels(), strict=False
    )} if linear else {}  # fmt: skip

    def text(x: float, y: float) -> str:
        category = ticks.get(round(x, 6))
        x_text = category if category and not _is_number(category) else _value(x)
        return f"{xlabel}: {x_text} · {ylabel}: {_value(y)}"

    return text


def _is_number(text: str) -> bool:
    try:
        float(text.replace("−", "-"))
    except ValueError:
        return False
    return True


def render_svg(figure: Figure, key: str) -> tuple[bytes, Hover]:
    """The figure as SVG (series carry ids ``KEY-s<series>-<n>``) and its hover data."""
    import matplotlib.pyplot as plt

    series = _labelled(figure, key)
    index_of = {id(a): i for i, (_, (_, artists)) in enumerate(series.items()) for a in artists}
    buffer = io.BytesIO()
    with plt.rc_context(SVG_RC):
        # No RDF metadata block: it names w3/purl URLs and a date (a page must not mention
        # the network, and the same figure should give the same file).
        figure.savefig(buffer, format="svg", metadata=dict.fromkeys(SVG_METADATA_KEYS))
    width, height = figure.get_size_inches() * 72.0
    hover = Hover(
        float(width),
        float(height),
        [
            {"label": label, "colour": colour, "id": f"{key}-s{i}-"}
            for i, (label, (colour, _)) in enumerate(series.items())
        ],
    )
    to_figure = figure.transFigure.inverted()
    for axes in figure.axes:
        to_data = axes.transData.inverted()
        axis_text = _axis_words(axes)
        candidates: list[tuple[Any, np.ndarray]] = []
        for line in axes.get_lines():
            xy = np.asarray(line.get_xydata(), dtype=float)
            if len(xy):
                candidates.append((line, line.get_transform().transform(xy)))
        for collection in axes.collections:
            offsets = np.asarray(collection.get_offsets(), dtype=float)
            if offsets.ndim == 2 and len(offsets) and offsets.shape[1] == 2:
                display = collection.get_offset_transform().transform(offsets)
                candidates.append((collection, display))
        for patch in axes.patches:
            if isinstance(patch, Rectangle) and patch.get_width() and patch.get_height():
                x0, y0 = patch.get_x(), patch.get_y()
                top = (x0 + patch.get_width() / 2, y0 + patch.get_height())
                if abs(y0) > 1e-12 and abs(x0) < 1e-12:  # horizontal bar: its end
                    top = (x0 + patch.get_width(), y0 + patch.get_height() / 2)
                candidates.append((patch, axes.transData.transform([top])))
        inside = axes.bbox
        for artist, display in candidates:
            display = display[np.isfinite(display).all(axis=1)]
            display = display[
                (display[:, 0] >= inside.x0 - 1)
                & (display[:, 0] <= inside.x1 + 1)
                & (display[:, 1] >= inside.y0 - 1)
                & (display[:, 1] <= inside.y1 + 1)
            ]
            if len(display) > MAX_POINTS_PER_SERIES:
                keep = np.linspace(0, len(display) - 1, MAX_POINTS_PER_SERIES).astype(int)
                display = display[keep]
            if not len(display):
                continue
            series_index = index_of.get(id(artist), -1)
            label = hover.series[series_index]["label"] if series_index >= 0 else ""
            fractions = to_figure.transform(display)
            values = to_data.transform(display)
            for (fx, fy), (x, y) in zip(fractions, values, strict=True):
                text = axis_text(float(x), float(y))
                hover.points.append(
                    [
                        round(float(fx) * hover.width, 1),
                        round((1 - float(fy)) * hover.height, 1),
                        series_index,
                        f"{label} · {text}" if label else text,
                    ]
                )
    return buffer.getvalue(), hover


def inline_svg(svg: bytes, key: str) -> str:
    """The SVG as an element of the page: the XML prologue dropped, every id (and reference
    to one) prefixed with the figure's key, so figures on one page cannot share an id."""
    text = svg.decode("utf-8")
    text = text[text.index("<svg") :]
    ids = set(re.findall(r'\bid="([^"]+)"', text))

    def prefixed(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in ids or name.startswith(f"{key}-"):
            return match.group(0)  # not an id of this SVG, or a series id already its own
        return f"{match.group(1)}{key}-{name}"

    return re.sub(r'(\bid="|#)([^"\)\s#]+)(?=["\)])', prefixed, text)
