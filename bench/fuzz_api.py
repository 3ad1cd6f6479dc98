"""A longer schemathesis run than the test suite's, with fresh random cases each time.

    .venv/bin/python bench/fuzz_api.py [--examples 100]

Each local server (``hindsight serve`` and the gateway) on a fresh store: ``--examples``
cases an operation (not derandomized, unlike tests/e2e/test_api_fuzz.py), then the
stateful run over the document's links. Prints per server the calls, their statuses, the
failures (each with a curl line) and the time; exits 1 when a failure was found.
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
import schemathesis  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis.errors import FlakyStrategyDefinition  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

from hindsight import bootstrap  # noqa: E402
from hindsight.bootstrap import configure  # noqa: E402
from tests.e2e.conftest import start_server  # noqa: E402
from tests.e2e.test_api_fuzz import (  # noqa: E402
    AUTH,
    CALL_TIMEOUT,
    CHECKS,
    NOT_FUZZED,
    _cases,
    linked_machine,
)


def _settings(examples: int, **extra: Any) -> settings:
    return settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        **extra,
    )


def _first_line(failure: BaseException) -> str:
    text = str(failure).strip()
    return text.splitlines()[0][:160] if text else type(failure).__name__


def _fuzz_operation(
    url: str,
    operation: Any,
    label: str,
    mode: str,
    examples: int,
    statuses: Counter[int],
    failures: dict[str, str],
) -> None:
    @given(case=operation.as_strategy(generation_mode=schemathesis.GenerationMode(mode)))
    @_settings(examples)
    def fuzz(case: schemathesis.Case) -> None:
        try:
            response = case.call_and_validate(
                base_url=url, headers=AUTH, checks=CHECKS, timeout=CALL_TIMEOUT
            )
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # every failure (a group of them too) is a finding
            failures.setdefault(f"{label} ({mode}): {_first_line(exc)}", str(exc))
            return
        statuses[response.status_code] += 1

    fuzz()


def _stateless(
    url: str, schema: Any, examples: int, statuses: Counter[int], failures: dict[str, str]
) -> None:
    for method, path, mode in _cases():
        operation = schema[path][method]
        _fuzz_operation(url, operation, f"{method} {path}", mode, examples, statuses, failures)


def _stateful(
    url: str, schema: Any, examples: int, statuses: Counter[int], failures: dict[str, str]
) -> None:
    seen: Counter[tuple[str, int]] = Counter()
    machine = linked_machine(schema, url, seen)
    try:
        run_state_machine_as_test(machine, settings=_settings(examples, stateful_step_count=12))
    except FlakyStrategyDefinition as exc:  # the server's state leaked between scenarios
        print(f"   stateful run inconclusive (hypothesis: {_first_line(exc)})")
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        failures.setdefault(f"stateful: {_first_line(exc)}", str(exc))
    for (_, status), count in seen.items():
        statuses[status] += count


def run(kind: str, examples: int) -> int:
    saved = (bootstrap._settings, bootstrap._service)
    started = time.perf_counter()
    data_dir = Path(tempfile.mkdtemp(prefix=f"hindsight-fuzz-{kind}-"))
    # removed when the process ends, after the in-process service has closed its index
    # there (atexit runs last registered first; the service registers its close later)
    atexit.register(shutil.rmtree, data_dir, ignore_errors=True)
    server = start_server(kind, data_dir)
    try:
        served = httpx.get(f"{server.url}/v1/openapi.json", timeout=CALL_TIMEOUT).json()
        schema = schemathesis.openapi.from_dict(served).exclude(path=sorted(NOT_FUZZED))
        statuses: Counter[int] = Counter()
        failures: dict[str, str] = {}
        _stateless(server.url, schema, examples, statuses, failures)
        _stateful(server.url, schema, max(1, examples // 4), statuses, failures)
    finally:
        server.stop()
        configure(*saved)
    seconds = time.perf_counter() - started
    by_status = dict(sorted(statuses.items()))
    print(f"\n== {kind}: {statuses.total()} calls in {seconds:.1f} s; statuses {by_status}")
    print(f"   failures: {len(failures)}")
    for title, detail in failures.items():
        print(f"-- {title}\n{detail}\n")
    return len(failures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100, help="cases per operation and mode")
    args = parser.parse_args(argv)
    found = sum(run(kind, args.examples) for kind in ("serve", "gateway"))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
