"""From validated settings (``spec.bench.HandshakeBenchmarkSpec``) to a benchmark this machine
can run: every profile parsed, every CPU placement, the tracer and the stack checked before
any broker starts (exit 2 for a bad value, 3 for what the machine lacks); then the run and
its results store (``bench.handshake``, ``bench.handshake_store``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iotsecbench.bench.handshake import (
    HandshakeBenchmark,
    ProgressCallback,
    TraceSettings,
    resolve_profiles,
    run_handshake_benchmark,
)
from iotsecbench.bench.handshake_store import store_results
from iotsecbench.errors import EnvironmentProblem, SpecError
from iotsecbench.lab.cpu import CpuPlacement, cores_problem, quota_problem
from iotsecbench.security.tls import TlsProfile
from iotsecbench.security.tls.stacks import OPENSSL, OPENSSL_PQ
from iotsecbench.spec.bench import HandshakeBenchmarkSpec
from iotsecbench.spec.network import resolve_profile as resolve_network


@dataclass(frozen=True)
class HandshakePlan:
    """A benchmark checked against this machine, ready to run."""

    spec: HandshakeBenchmarkSpec
    profiles: list[TlsProfile]
    placements: list[CpuPlacement]
    trace: TraceSettings | None
    stack: str  # the client's stack: the spec's, or openssl-3.5 for post-quantum profiles
    stack_note: str | None  # why the stack is not the one asked for


def plan(spec: HandshakeBenchmarkSpec) -> HandshakePlan:
    """Every check that needs no broker yet (module docstring)."""
    trace = None
    if spec.trace:
        from iotsecbench.measure.tracefs import tracing_problem

        problem = tracing_problem()
        if problem is not None:
            raise EnvironmentProblem(f"--trace: {problem}")
        trace = TraceSettings(
            device=spec.trace_device, keep_retransmissions=spec.keep_retransmissions
        )
    placements = _placements(spec)
    try:
        resolve_network(spec.network, {})
    except ValueError as error:
        raise SpecError(f"--network: {error}") from None
    profiles = resolve_profiles(spec.profiles)  # every profile checked before any broker
    stack, note = post_quantum_stack(spec.stack, profiles)
    return HandshakePlan(spec, profiles, placements, trace, stack, note)


def _placements(spec: HandshakeBenchmarkSpec) -> list[CpuPlacement]:
    """Every core count × CPU share, each one this machine can give."""
    for count in spec.cores:
        problem = cores_problem(count)
        if problem is not None:
            raise SpecError(problem)
    if any(share != 1 for share in spec.shares) and (problem := quota_problem()) is not None:
        raise EnvironmentProblem(f"--clock: {problem}")
    core_counts: list[int | None] = list(spec.cores) or [None]
    return [CpuPlacement(count, share) for count in core_counts for share in spec.shares]


def post_quantum_stack(stack: str, profiles: list[TlsProfile]) -> tuple[str, str | None]:
    """The stack to measure on: openssl-3.5 when a profile needs post-quantum TLS and the
    stack was left at openssl (every profile then runs on it: one library), with a note."""
    if stack == OPENSSL and any(profile.needs_pq_library for profile in profiles):
        return OPENSSL_PQ, (
            f"stack {OPENSSL_PQ} for every profile (post-quantum TLS needs OpenSSL 3.5; "
            f"--stack {OPENSSL} with classical profiles measures Debian's 3.0)"
        )
    return stack, None


def run_and_store(
    chosen: HandshakePlan, out: Path, on_progress: ProgressCallback | None = None
) -> HandshakeBenchmark:
    """Measure the plan (its brokers' work files in ``out/lab``) and store it in ``out``."""
    spec = chosen.spec
    bench = run_handshake_benchmark(
        chosen.profiles,
        out / "lab",
        repetitions=spec.repetitions,
        target_ci=spec.target_ci,
        max_repetitions=spec.max_repetitions,
        warmup=spec.warmup,
        seed=spec.seed,
        placements=chosen.placements,
        trace=chosen.trace,
        network=spec.network,
        stack=chosen.stack,
        on_progress=on_progress,
        timeout_s=spec.timeout_s,
    )
    store_results(bench, out, spec)
    return bench
