# Hindsight — two commands do all the set-up:
#   make run    install what the product needs and serve it on 127.0.0.1:8080 (embedded store)
#   make test   install what the tests need and run every tier
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8080
DATA_DIR ?= .hindsight
PYTEST := $(BIN)/pytest -p no:cacheprovider

.PHONY: openapi docs
.PHONY: run run-aws install install-test sam test lint test-unit test-functional test-contract \
        test-integration test-e2e test-infrastructure test-concurrency bench clean services \
        services-down test-browser browser-deps explorer-assets test-fast test-typescript

$(BIN)/python:
	@echo "==> creating the virtual environment $(VENV) ($(PYTHON) -m venv)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# pip's own lines, cut to one per package (all of them in $(VENV)/pip-install.log)
PIP_LINES := awk '/^(Collecting|Installing collected|Successfully installed|ERROR)/ \
	{ print "    " $$0; fflush() }'
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "==> installing Hindsight and its dependencies into $(VENV) (the first time: about a minute)"
	@set -o pipefail; $(BIN)/pip install --progress-bar off -e ".[documents]" 2>&1 \
		| tee $(VENV)/pip-install.log | $(PIP_LINES) \
		|| { echo "pip failed; its whole output is in $(VENV)/pip-install.log"; exit 1; }
	touch $@

$(VENV)/.installed-test: pyproject.toml clients/python/pyproject.toml $(VENV)/.installed
	$(BIN)/pip install --quiet -e ".[test,sentence-transformers]"
	$(BIN)/pip install --quiet -e ./clients/python
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

# The SAM CLI (sam validate --lint, sam build in tests/infrastructure) gets its own venv:
# aws-sam-cli pins an aws-sam-translator that conflicts with cfn-lint in the test extra.
SAM_VENV := .services/sam
SAM_CLI_VERSION := 1.170.0
$(SAM_VENV)/.installed:
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/pip install --quiet aws-sam-cli==$(SAM_CLI_VERSION)
	touch $@

sam: $(SAM_VENV)/.installed

run: install
	@echo "==> starting hindsight serve on http://$(HOST):$(PORT) with the data in $(DATA_DIR) (loading the embedding model takes a few seconds)"
	$(BIN)/hindsight serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR)

# The AWS backend on this machine: the local engines (see `make services`: moto's DynamoDB and
# S3 on 127.0.0.1:5055, OpenSearch with k-NN on 127.0.0.1:9200) and the server against them
AWS_LOCAL_ENV := AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
	AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:5055 AWS_ENDPOINT_URL_S3=http://127.0.0.1:5055 \
	HINDSIGHT_BACKEND=aws HINDSIGHT_OPENSEARCH_URL=http://127.0.0.1:9200 \
	HINDSIGHT_TABLE=hindsight-local HINDSIGHT_BLOB_BUCKET=hindsight-local
run-aws: install-test
	$(BIN)/python -m tests.services start
	@echo "AWS backend on the local engines: $(AWS_LOCAL_ENV)"
	$(AWS_LOCAL_ENV) $(BIN)/hindsight serve --host $(HOST) --port $(PORT)

# The OpenAPI document the API serves at /v1/openapi.json, regenerated from the code's models
# (tests/contract/test_openapi_drift.py fails while the committed copy is stale)
openapi: install
	$(BIN)/python -m hindsight.api.openapi --output layers/hindsight/hindsight/api/openapi.json

# The settings reference, docs/configuration.md, regenerated from the settings model
# (tests/unit/test_configuration_doc.py fails while the committed page is stale)
docs: install
	$(BIN)/python -m hindsight.settings_reference --output docs/configuration.md

# ruff (lint, format, mccabe complexity <= 10) and mypy over the package and functions/
# (both configured in pyproject.toml)
lint: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	cd clients/python && $(abspath $(BIN))/mypy

# Run $(1) with the local engines up (OpenSearch + moto, see `make services`); stop them
# afterwards unless they were already running before.
define with_services
	@started=0; $(BIN)/python -m tests.services status >/dev/null 2>&1 || started=1; \
	$(BIN)/python -m tests.services start || exit $$?; \
	status=0; $(1) || status=$$?; \
	if [ $$started = 1 ]; then $(BIN)/python -m tests.services stop; fi; \
	exit $$status
endef

test-unit: install-test
	$(PYTEST) tests/unit -q

test-functional: install-test
	$(PYTEST) tests/functional -q

test-contract: install-test
	$(call with_services,$(PYTEST) tests/contract -q)

test-integration: install-test
	$(call with_services,$(PYTEST) tests/integration -q)

test-e2e: install-test
	$(PYTEST) tests/e2e -q

# The route tables that must agree (template, sample events, gateway routes, the OpenAPI
# document): ~30 s, no services; run it after adding or renaming a route
test-fast: install-test
	$(PYTEST) -q tests/functional/test_sample_events.py tests/e2e/test_local_gateway.py \
		tests/contract/test_openapi_drift.py tests/infrastructure/test_template.py

# Threads and processes racing on one service and one `hindsight serve` (under a minute);
# the lease and dedup races include DynamoDB on the local engines
test-concurrency: install-test
	$(call with_services,$(PYTEST) tests/concurrency -q)

test-infrastructure: install-test sam
	$(call with_services,$(PYTEST) tests/infrastructure -q)

# The memory explorer in a real browser (tests/browser, under a minute): Debian's Chromium
# (and CJK fonts for the Chinese content) from apt when missing, playwright-core from
# tests/browser/package-lock.json (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: it never fetches a browser)
BROWSER_PACKAGES := chromium chromium-driver fonts-wqy-zenhei
BROWSER_NODE := tests/browser/node_modules/.package-lock.json
browser-deps: $(BROWSER_NODE)
	@if [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/truetype/wqy ]; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(BROWSER_PACKAGES) || \
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(BROWSER_PACKAGES); }; \
	fi

$(BROWSER_NODE): tests/browser/package-lock.json
	@command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm
	cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error

test-browser: install-test browser-deps
	$(PYTEST) tests/browser -q

# The explorer's chart library, vendored into the package from explorer/package-lock.json
# (the copies are committed: `make run` builds nothing)
explorer-assets:
	cd explorer && npm ci --no-audit --no-fund --loglevel=error && node vendor.mjs

# The TypeScript client (clients/typescript, ~2 min): node modules from its package-lock.json,
# then `npm test` builds it and runs its node --test suites against `hindsight serve` from the
# venv (every call, retries across a server restart, the generated types against the served
# OpenAPI document, the packed tarball installed into an empty project, the integrations)
TS_DIR := clients/typescript
TS_NODE := $(TS_DIR)/node_modules/.package-lock.json
$(TS_NODE): $(TS_DIR)/package-lock.json
	@command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm
	cd $(TS_DIR) && npm ci --no-audit --no-fund --loglevel=error

test-typescript: install-test $(TS_NODE)
	cd $(TS_DIR) && HINDSIGHT_BIN=$(abspath $(BIN))/hindsight npm test

test: install-test sam lint browser-deps test-typescript
	$(call with_services,$(PYTEST) tests -q)

# Every maintained benchmark, in bench/README.md's order (its table gives each one's
# runtime; about five hours on two cores in all), and the calibration's check
# (training/README.md). `soak.py --backend aws` starts the local engines.
bench: install-test
	$(BIN)/python bench/locomo.py
	$(BIN)/python bench/longmem.py
	$(BIN)/python bench/updates.py
	$(BIN)/python bench/update_pairs.py
	$(BIN)/python bench/update_ordinary.py
	$(BIN)/python bench/devsets.py
	$(BIN)/python bench/lodo.py --from bench/results/devsets.json
	$(BIN)/python bench/negatives.py
	nice -n 5 $(BIN)/python bench/reflect_default.py
	nice -n 5 $(BIN)/python bench/extraction.py
	nice -n 5 $(BIN)/python bench/extraction_rules.py
	$(BIN)/python training/calibrate.py --collect --report --current
	$(BIN)/python bench/secrets_fp.py
	$(BIN)/python bench/load.py
	$(BIN)/python bench/ingest_throughput.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/crash.py --iterations 30
	$(BIN)/python bench/fuzz_api.py --examples 100
	$(BIN)/python bench/soak.py
	$(BIN)/python bench/cold_start.py --repeats 3
	$(BIN)/python bench/embed_throughput.py
	$(call with_services,$(BIN)/python bench/soak.py --backend aws)

# Local engines for the AWS-backend tests (OpenSearch with k-NN on 127.0.0.1:9200, moto on
# 127.0.0.1:5055); pid files and logs under .services/
services: install-test
	$(BIN)/python -m tests.services start

services-down:
	$(BIN)/python -m tests.services stop

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
