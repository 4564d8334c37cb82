"""The agents' record vocabulary (src/iotsecbench/agents/vocabulary.py) is declared once, and
every program that writes records in C is checked against it here, as the import map is
checked in tests/test_import_map.py: each ``record("type", "\\"field\\":%…", …)`` call's
type and fields, and each ``counter("name", …)`` call's name, must be declared.

A C program that writes records is one line of ``WRITERS``: its source folder and the names
of its record and counter functions."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from iotsecbench.agents import vocabulary
from iotsecbench.measure.sampler import Sample

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "iotsecbench"

# Who writes records in C: folder → (record function, counter function).
WRITERS: dict[str, tuple[str, str]] = {
    "agents/native": ("record", "counter"),
    "vmcu/client": ("record", "counter"),
}

_STRING = re.compile(r'\s*"((?:\\.|[^"\\])*)"')  # a C string literal
_MACRO = re.compile(r"\s*PRI[diux]\d*")  # inttypes.h's format macros between literals


def record_calls(source: str, function: str = "record") -> list[tuple[str, list[str]]]:
    """(type, field names) of every ``function("type", "format" …)`` call in C ``source``:
    the format is the adjacent string literals (and PRI macros) after the type."""
    calls = []
    for match in re.finditer(rf'\b{function}\(\s*"(\w+)"\s*,', source):
        at, text = match.end(), ""
        while True:
            literal = _STRING.match(source, at)
            macro = None if literal else _MACRO.match(source, at)
            if literal is None and macro is None:
                break
            text += literal.group(1) if literal else ""
            at = (literal or macro).end()  # type: ignore[union-attr]
        calls.append((match.group(1), re.findall(r'\\"(\w+)\\":', text)))
    return calls


def counter_calls(source: str, function: str = "counter") -> list[str]:
    return re.findall(rf'\b{function}\(\s*"(\w+)"', source)


def problems_of(folder: str, record: str, counter: str) -> tuple[list[str], set[str]]:
    """What the C sources of ``folder`` write that the vocabulary does not declare, and the
    record types they write."""
    problems, written = [], set()
    for path in sorted((PACKAGE / folder).glob("*.c")):
        source = path.read_text()
        for record_type, fields in record_calls(source, record):
            written.add(record_type)
            problems += [f"{path.name}: {p}" for p in vocabulary.undeclared(record_type, fields)]
        problems += [
            f"{path.name}: counter {name!r}"
            for name in counter_calls(source, counter)
            if not vocabulary.counter_declared(name)
        ]
    return problems, written


def test_every_c_record_is_in_the_vocabulary() -> None:
    for folder, (record, counter) in WRITERS.items():
        problems, written = problems_of(folder, record, counter)
        assert written, f"{folder}: no {record}(…) call found: is the writer's name right?"
        assert not problems, (
            f"{folder} writes what agents/vocabulary.py does not declare: {problems}"
        )


def test_the_native_agent_writes_what_only_it_writes() -> None:
    """Its own record types are declared as native-only, and it writes them all."""
    _, written = problems_of("agents/native", *WRITERS["agents/native"])
    assert only(vocabulary.NATIVE) <= written
    assert {"sample", "message", "handshake", "event", "counters", "error", "echo"} <= written


def only(program: str) -> set[str]:
    return {name for name, r in vocabulary.RECORD_TYPES.items() if r.only == program}


def test_the_device_client_writes_its_segments_and_the_shared_types() -> None:
    """The firmware writes its own count_segment (every field of it) and the agents' event,
    counters, error and tls_transcript; in its emitter roles the run's sample and message (and
    over tcp the echo), in fields of its own (role device) that runner/device_emitter.py passes
    on as the emitter's."""
    _, written = problems_of("vmcu/client", *WRITERS["vmcu/client"])
    assert written == {
        "count_segment", "event", "counters", "error", "tls_transcript", "sample", "message",
        "echo",
    }  # fmt: skip
    assert only(vocabulary.DEVICE) == {"count_segment"}
    source = (PACKAGE / "vmcu" / "client" / "ledger.c").read_text()
    fields = {f for _, names in record_calls(source) for f in names}
    assert fields == set(vocabulary.fields_of("count_segment"))


def test_the_check_catches_an_undeclared_field_and_counter() -> None:
    """The checker itself, on a made-up call: a field and a counter nobody declared."""
    source = (
        'record("message", "\\"seq\\":%ld,\\"t_created_ns\\":%" PRId64 ",\\"bogus_ns\\":%"'
        ' PRId64, seq, t, b);\ncounter("made_up", 1);'
    )
    assert record_calls(source) == [("message", ["seq", "t_created_ns", "bogus_ns"])]
    assert vocabulary.undeclared("message", ["seq", "t_created_ns", "bogus_ns"]) == [
        "message.bogus_ns"
    ]
    assert counter_calls(source) == ["made_up"] and not vocabulary.counter_declared("made_up")


def test_the_python_sample_is_the_declared_sample() -> None:
    """measure.Sample (what the Python agents' sampler takes) has exactly the sample fields
    every agent writes (the device emitter's counts come on top)."""
    assert tuple(f.name for f in dataclasses.fields(Sample)) == vocabulary.shared_fields("sample")


def test_every_field_has_a_unit_and_a_meaning() -> None:
    for record in vocabulary.RECORD_TYPES.values():
        for field in record.fields:
            assert field.unit and field.meaning, (record.name, field.name)
            assert set(field.roles) <= {*vocabulary.ROLES, vocabulary.DEVICE}
