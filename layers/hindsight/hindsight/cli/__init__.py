"""The ``hindsight`` command line (entry point ``hindsight.cli:main``)."""

from hindsight.cli.app import app, main

__all__ = ["app", "main"]
