"""Store function: POST /v1/memories, POST /v1/memories/batch, POST /v1/documents and
GET /v1/jobs/{job_id}.

Each route is its route function in ``hindsight.api.routes`` (shared with ``hindsight
serve``), answered for the current event by ``answer_route``. Here no job queue runs:
a write sent with ``Prefer: respond-async`` is answered when it is done (``api/jobs.py``),
so a job id is never found (404 saying so).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hindsight.api.http import build_resolver
from hindsight.api.lambda_routes import answer_route
from hindsight.api.observability import logger, metrics, tracer

app = build_resolver()


@app.post("/v1/memories")
@tracer.capture_method
def store_memory() -> Response[Any]:
    return answer_route(app, "store_memory")


@app.post("/v1/memories/batch")
@tracer.capture_method
def store_batch() -> Response[Any]:
    return answer_route(app, "store_batch")


@app.post("/v1/documents")
@tracer.capture_method
def store_document() -> Response[Any]:
    return answer_route(app, "store_document")


@app.get("/v1/jobs/<job_id>")
@tracer.capture_method
def get_job(job_id: str) -> Response[Any]:
    return answer_route(app, "get_job", job_id=job_id)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
