"""Runs an isolation state machine (``tests/isolation_machine.py``) bounded and
reproducibly, and says how much it ran: shared by the embedded and the AWS property tests."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.isolation_machine import IsolationMachine


def run_isolation(machine: type[IsolationMachine], label: str, examples: int, steps: int) -> str:
    """Run ``machine`` (derandomized, ``examples`` × up to ``steps`` calls); the summary."""
    started = time.monotonic()
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    return (
        f"\nisolation properties, {label}: {machine.examples} examples, {machine.steps} API "
        f"calls, {machine.erasures} erasures inspected, {time.monotonic() - started:.1f} s; "
        f"calls: {dict(sorted(machine.calls.items()))}"
    )
