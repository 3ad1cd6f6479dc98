"""Local engines for the tests: OpenSearch with k-NN (in one JVM) and moto in server mode.

``python -m tests.services start|stop|status`` (or ``make services`` / ``make services-down``).
"""

from __future__ import annotations

OPENSEARCH_URL = "http://127.0.0.1:9200"
MOTO_URL = "http://127.0.0.1:5055"
