"""The rows that name an experiment and its runs (tables ``experiments`` and ``runs``), built in
one place for every writer: ``run`` (``runner.collect.build_outcome``) and ``bench handshake``
(``bench.handshake_store``). What a run measured comes from the room that measured it; what
it *is* — its identity, its configuration's security properties and provenance, its status
and times — is filled in here, the same way for both."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Mapping
from typing import Any

from iotsecbench.measure.host import host_facts, software_versions
from iotsecbench.security import resolve_configuration


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def experiment_row(
    *,
    experiment_id: str,
    name: str,
    spec_json: str,
    config_hash: str,
    seed: int | None,
    broker_version: str | None,
) -> dict[str, Any]:
    """The ``experiments`` row: the specification as run, with this host's facts and the
    software versions (``measure.host``), recorded when the experiment starts."""
    return {
        "experiment_id": experiment_id,
        "name": name,
        "created_utc": datetime.datetime.now(datetime.UTC).isoformat(),
        "spec_json": spec_json,
        "config_hash": config_hash,
        "seed": seed,
        "host_json": json.dumps(host_facts()),
        "versions_json": json.dumps(software_versions(broker_version)),
    }


def tls_facts(negotiated: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``runs`` columns that say what TLS negotiated (a ``negotiated`` record,
    ``security.tls.NegotiatedTls.to_dict``); NULL without TLS."""
    negotiated = negotiated or {}
    return {
        "tls_version": negotiated.get("version"),
        "tls_cipher": negotiated.get("cipher"),
        "tls_group": negotiated.get("group"),
        "tls_signature": negotiated.get("signature_algorithm"),
    }


def run_row(
    *,
    run_id: str,
    experiment_id: str,
    cell_id: str,
    cell_label: str,
    configuration: str,
    status: str,
    error: str | None,
    started_utc: str,
    run_order: int,
    repetition: int,
    network: str,
    stack: str,
    broker_version: str | None,
    run_dir: str,
    cost_method: str,
    details: Mapping[str, Any],
    **measured: Any,
) -> dict[str, Any]:
    """One ``runs`` row: the run's identity and its configuration's transport, scheme,
    security properties and provenance (``security.resolve_configuration``), how its cost was
    taken (``cost_method``: timed, traced or counted), ended now; ``measured`` holds the
    columns the measuring room fills (``store/schema.py``)."""
    security = resolve_configuration(configuration)
    return {
        "run_id": run_id,
        "experiment_id": experiment_id,
        "cell_id": cell_id,
        "cell_label": cell_label,
        "configuration": configuration,
        "transport": security.transport,
        "scheme": security.scheme.name,
        "network": network,
        "stack": stack,
        "repetition": repetition,
        "run_order": run_order,
        "status": status,
        "error": error,
        "started_utc": started_utc,
        "ended_utc": utc_now(),
        "broker_version": broker_version,
        "security_json": json.dumps(security.properties()),
        "provenance_json": json.dumps(dataclasses.asdict(security.scheme.provenance)),
        "run_dir": run_dir,
        "cost_method": cost_method,
        "details_json": json.dumps(dict(details)),
        **measured,
    }
