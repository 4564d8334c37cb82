"""Network profiles: the links between emitter, broker and receiver, as data.

A profile shapes three links — ``emitter``, ``broker`` and ``receiver``, each joining that
host to the wire — in two directions: ``up`` (host → wire) and ``down`` (wire → host). A
message from the emitter to the receiver crosses ``emitter.up``, ``broker.down``,
``broker.up`` and ``receiver.down``. Each direction has a rate limit, a one-way delay, a
jitter and a random loss. ``loopback`` is special: no namespaces, today's behaviour.

Built-in profiles are TOML files in ``spec/presets/networks/``; every number there carries
its source or rationale as ``{ value = …, source = "…" }``. Custom profiles go into the
experiment spec under ``[networks.NAME]`` with the same layout (plain numbers allowed).
How the lab realises a profile is in ``docs/network.md``.
"""

from __future__ import annotations

import difflib
import tomllib
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SHAPE_FIELDS = ("rate_kbit", "delay_ms", "jitter_ms", "loss_percent", "queue_bytes")


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DirectionShape(_Frozen):
    """One direction of one link. Zero / None everywhere means an unshaped direction."""

    rate_kbit: float | None = Field(None, gt=0, le=10_000_000)  # kbit/s of Ethernet frames
    delay_ms: float = Field(0.0, ge=0, le=10_000)  # one-way delay added to every frame
    jitter_ms: float = Field(0.0, ge=0, le=10_000)  # uniform in [-jitter, +jitter]
    loss_percent: float = Field(0.0, ge=0, lt=100)  # independent random frame loss
    # Bytes the rate limiter may queue before it drops (tail drop); None: see docs/network.md.
    queue_bytes: int | None = Field(None, ge=1514, le=1_000_000_000)
    sources: dict[str, str] = Field(default_factory=dict)  # field → source or rationale

    @model_validator(mode="before")
    @classmethod
    def _unwrap_sourced_numbers(cls, data: Any) -> Any:
        """Accept ``{ value = 5, source = "…" }`` for every number and keep the source."""
        if not isinstance(data, dict):
            return data
        cleaned: dict[str, Any] = {}
        sources = dict(data.get("sources", {}))
        for key, value in data.items():
            if key in SHAPE_FIELDS and isinstance(value, dict):
                unknown = set(value) - {"value", "source"}
                if unknown or "value" not in value:
                    raise ValueError(
                        f'{key}: write a number or {{ value = …, source = "…" }}, '
                        f"got keys {sorted(value)}"
                    )
                cleaned[key] = value["value"]
                if "source" in value:
                    sources[key] = str(value["source"])
            elif key != "sources":
                cleaned[key] = value
        cleaned["sources"] = sources
        return cleaned

    @property
    def shaped(self) -> bool:
        return bool(self.rate_kbit or self.delay_ms or self.jitter_ms or self.loss_percent)

    def numbers(self) -> dict[str, float | int | None]:
        return {name: getattr(self, name) for name in SHAPE_FIELDS}


class LinkShape(_Frozen):
    """A host's link to the wire, both directions."""

    up: DirectionShape = Field(default_factory=DirectionShape)  # host → wire
    down: DirectionShape = Field(default_factory=DirectionShape)  # wire → host


class NetworkProfile(_Frozen):
    """A whole network: how each of the three hosts is attached."""

    description: str = ""
    kind: Literal["loopback", "namespaces"] = "namespaces"
    emitter: LinkShape = Field(default_factory=LinkShape)
    broker: LinkShape = Field(default_factory=LinkShape)
    receiver: LinkShape = Field(default_factory=LinkShape)

    def link(self, host: str) -> LinkShape:
        return getattr(self, host)

    def expected_one_way_delay_ms(self, source: str, destination: str) -> float:
        """Configured delay from one host to another (jitter averages out to zero)."""
        return self.link(source).up.delay_ms + self.link(destination).down.delay_ms


def builtin_profile_names() -> list[str]:
    folder = resources.files("iotsecbench.spec") / "presets" / "networks"
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    )


def builtin_profile_data(name: str) -> dict[str, Any]:
    path = resources.files("iotsecbench.spec") / "presets" / "networks" / f"{name}.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data.pop("name", None)
    return data


def resolve_profile(name: str, custom: dict[str, NetworkProfile] | None = None) -> NetworkProfile:
    """A profile by name: the spec's custom profiles first, then the built-in ones.

    Raises ``ValueError`` with a suggestion for unknown names (the spec turns it into a
    ``SpecError``).
    """
    if custom and name in custom:
        return custom[name]
    known = builtin_profile_names()
    if name not in known:
        choices = sorted({*known, *(custom or {})})
        close = difflib.get_close_matches(name, choices, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"unknown network profile '{name}'{hint}; known: {', '.join(choices)}")
    return NetworkProfile.model_validate(builtin_profile_data(name))
