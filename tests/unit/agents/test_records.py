"""Reading an agent's JSON-lines records while the agent may still be writing them."""

from __future__ import annotations

from pathlib import Path

from iotsecbench.agents.records import read_records, read_records_from


def test_a_reader_continues_where_it_stopped_and_waits_out_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    path.write_bytes(b'{"type": "a", "text": "\xc3\xa9"}\n{"type": "b"}\n{"type": ')
    records, offset = read_records_from(path, 0)
    assert [r["type"] for r in records] == ["a", "b"]
    assert records[0]["text"] == "é"  # offsets count bytes, not characters
    assert read_records_from(path, offset) == ([], offset)  # the torn line is not read yet
    with open(path, "ab") as handle:
        handle.write(b'"c"}\n{"type": "d"}\n')
    records, end = read_records_from(path, offset)
    assert [r["type"] for r in records] == ["c", "d"] and end == path.stat().st_size
    assert [r["type"] for r in read_records(path)] == ["a", "b", "c", "d"]
    assert read_records_from(tmp_path / "missing.jsonl", 7) == ([], 7)
