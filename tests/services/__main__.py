"""``python -m tests.services start|stop|status``."""

from __future__ import annotations

import argparse
import sys

from tests.services.launcher import ServiceError, start, status, stop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.services",
        description="Local engines for the tests: OpenSearch (k-NN) on 127.0.0.1:9200 and "
        "moto on 127.0.0.1:5055.",
    )
    parser.add_argument("command", choices=["start", "stop", "status"])
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            start()
        elif args.command == "stop":
            stop()
        else:
            return 0 if status() else 3
    except ServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
