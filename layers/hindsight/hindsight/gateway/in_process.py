"""The local gateway without a socket: an httpx transport onto the template's routes.

``InProcessTransport`` hands each httpx request to the same ``Dispatcher`` that
``hindsight serve`` uses (template route → API Gateway proxy event → the real Lambda
handler), so an in-process client gets exactly the answers, statuses and errors the
HTTP server gives. ``open_in_process`` configures the embedded service (as ``hindsight
serve`` would, keyless on loopback unless keys are configured) and returns the transport;
the Python client's ``Hindsight.embedded()`` uses it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import anyio.to_thread
import httpx

from hindsight.bootstrap import configure
from hindsight.gateway.dispatch import Dispatcher
from hindsight.gateway.local_gateway import prepare_settings
from hindsight.gateway.template import find_template, routes_from_template, stage_name

LOOPBACK = "127.0.0.1"


class InProcessTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Serves httpx requests (sync and async) from a ``Dispatcher``, in this process."""

    def __init__(self, dispatcher: Dispatcher, client_ip: str = LOOPBACK) -> None:
        self.dispatcher = dispatcher
        self.client_ip = client_ip

    def _dispatch(self, request: httpx.Request, body: bytes) -> httpx.Response:
        # the body is already in memory (no socket to stop reading from): the handlers
        # themselves refuse one over the size limit with 413
        target = request.url.raw_path.decode("ascii")
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        answer = self.dispatcher.dispatch(request.method, target, headers, body, self.client_ip)
        return httpx.Response(
            answer.status, headers=answer.headers, content=answer.body, request=request
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._dispatch(request, request.read())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        # handlers block (model, SQLite): keep the event loop free while they run
        return await anyio.to_thread.run_sync(self._dispatch, request, body)


def open_in_process(
    data_dir: str | Path | None = None,
    template: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    quiet: bool = True,
) -> InProcessTransport:
    """Configure the service from settings (the environment, ``data_dir``) and route
    requests to the template's handlers in this process.

    Keyless unless API keys are configured, as ``hindsight serve`` on 127.0.0.1 is.
    ``quiet``: the handlers' metrics (EMF lines on stdout) are off and their log level is
    WARNING, unless ``POWERTOOLS_METRICS_DISABLED`` / ``POWERTOOLS_LOG_LEVEL`` say otherwise.
    """
    env = os.environ if environ is None else environ
    if quiet:  # a notebook or a test wants answers, not a metric and a log line per call
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    settings, _ = prepare_settings(LOOPBACK, data_dir, environ=env)
    configure(settings)
    template_path = find_template(template)
    dispatcher = Dispatcher(routes_from_template(template_path), stage_name(template_path))
    dispatcher.load_all()
    return InProcessTransport(dispatcher)
