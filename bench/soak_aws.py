"""bench/soak.py's AWS side: an OpenSearch node of the soak's own, the server's settings
for DynamoDB on the shared moto, the stream pump that plays Lambda's event source mapping
for ``functions/indexer``, and the cleanup of what the soak made on moto."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

from harness import REPO, free_port, wait_for_http

sys.path.insert(0, str(REPO))  # tests.services (the OpenSearch launcher), the stream reader
from tests.services import MOTO_URL
from tests.services.launcher import _opensearch_command

# the indexer flushes its (here unread) metrics after every batch, warning when there are none
warnings.filterwarnings("ignore", message="No application metrics to publish")


# --- the OpenSearch node of the soak's own (--backend aws) -----------------------------------
class SoakOpenSearch:
    """One OpenSearch node on free ports with its own home, built like the shared one
    (``tests/services/launcher.py``), stopped and started by the soak alone."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.http_port = free_port()
        self.transport_port = free_port()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 240.0) -> float:
        """Start the node; the seconds until it answers yellow."""
        began = time.monotonic()
        with (self.home.parent / "opensearch.log").open("ab") as log:
            self.process = subprocess.Popen(
                _opensearch_command(self.home, self.http_port, self.transport_port),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        probe = f"{self.url}/_cluster/health?wait_for_status=yellow&timeout=1s"
        remaining = timeout - (time.monotonic() - began)
        try:
            wait_for_http(probe, self.process, remaining, self.home.parent / "opensearch.log")
        except RuntimeError:
            self.stop(signal.SIGKILL)
            raise
        return time.monotonic() - began

    def stop(self, sig: int = signal.SIGTERM) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def aws_environment(opensearch_url: str) -> dict[str, str]:
    """The server's settings for the AWS backend on moto and the soak's node: a table,
    bucket and index of this run's own, so nobody else's data is touched."""
    name = f"hindsight-soak-{uuid.uuid4().hex[:10]}"
    return {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL_DYNAMODB": MOTO_URL,
        "AWS_ENDPOINT_URL_S3": MOTO_URL,
        "HINDSIGHT_BACKEND": "aws",
        "HINDSIGHT_OPENSEARCH_URL": opensearch_url,
        "HINDSIGHT_TABLE": name,
        "HINDSIGHT_BLOB_BUCKET": name,
        "HINDSIGHT_OPENSEARCH_INDEX": name,
        "HINDSIGHT_REGION": "us-east-1",
    }


def drop_aws_resources(name: str) -> None:
    """Best effort: the soak's tables and bucket off the shared moto (its node goes with
    the temporary directory)."""
    from hindsight.adapters.aws.dynamodb_record_store import S3PayloadStore
    from tests.integration.dynamodb_local import drop_bucket, moto_client

    for table in (name, f"{name}-idempotency"):
        try:
            moto_client().delete_table(TableName=table)
        except Exception as error:  # botocore: already gone, or never made
            print(f"  cleanup: table {table}: {type(error).__name__}", flush=True)
    try:
        drop_bucket(S3PayloadStore(name, client=moto_client("s3")))
    except Exception as error:  # botocore
        print(f"  cleanup: bucket {name}: {type(error).__name__}", flush=True)


class StreamPump(threading.Thread):
    """The table's DynamoDB stream handed to ``functions/indexer`` every second, as
    Lambda's event source mapping would: a batch item failure is retried from that record
    (and those after it) until it succeeds."""

    def __init__(self, table: str) -> None:
        super().__init__(name="stream-pump", daemon=True)
        from tests.integration.aws_stream import StreamReader, load_indexer

        self.reader = StreamReader(table)
        self.indexer = load_indexer()
        self.pending: list[dict[str, Any]] = []
        self.applied = 0
        self.failed_batches = 0
        self.halt = threading.Event()

    def pump_once(self) -> bool:
        """Read and apply; True when nothing is left pending."""
        from tests.integration.aws_stream import LambdaContextStub

        self.pending += self.reader.read()
        if not self.pending:
            return True
        with contextlib.redirect_stdout(io.StringIO()):
            answer = self.indexer.lambda_handler(
                self.reader.lambda_event(self.pending), LambdaContextStub()
            )
        failures = [f["itemIdentifier"] for f in (answer or {}).get("batchItemFailures", [])]
        if not failures:
            self.applied += len(self.pending)
            self.pending = []
            return True
        self.failed_batches += 1
        sequence = [r["dynamodb"]["SequenceNumber"] for r in self.pending]
        first = sequence.index(failures[0]) if failures[0] in sequence else 0
        self.applied += first
        self.pending = self.pending[first:]
        return False

    def run(self) -> None:
        while not self.halt.wait(1.0):
            try:
                self.pump_once()
            except Exception as error:  # moto or the indexer hiccuped: Lambda would retry
                print(f"  stream pump: {type(error).__name__}: {error}", flush=True)

    def drain(self, timeout: float = 120.0) -> bool:
        """Stop the background pump and apply everything left; True when all was applied."""
        self.halt.set()
        self.join(timeout=30)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pump_once() and not self.reader.read():
                return True
            time.sleep(1.0)
        return False
