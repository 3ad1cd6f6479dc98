"""The one Logger, Tracer and Metrics of every Lambda handler; nothing else makes them.

Service name from ``POWERTOOLS_SERVICE_NAME`` (default "hindsight"), metrics namespace
"Hindsight". The Tracer disables itself outside Lambda (or with
``POWERTOOLS_TRACE_DISABLED=true``), so the local gateway and tests need no X-Ray.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

SERVICE_NAME = os.environ.get("POWERTOOLS_SERVICE_NAME") or "hindsight"
METRICS_NAMESPACE = "Hindsight"

logger = Logger(service=SERVICE_NAME)
tracer = Tracer(service=SERVICE_NAME)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)

__all__ = ["METRICS_NAMESPACE", "SERVICE_NAME", "MetricUnit", "logger", "metrics", "tracer"]
