"""The API Gateway Lambda authorizer's answer: an API key to an IAM policy and context.

A known key is allowed on every route of the stage; the answer's ``context`` carries
``tenant_id``, ``key_id``, ``default_scope`` and the scopes as comma-separated lists,
which ``hindsight.api.auth`` trusts. A missing or unknown key raises
``Exception("Unauthorized")``, the exact message API Gateway turns into 401.
"""

from __future__ import annotations

from typing import Any

from hindsight.api.auth import KeyRingSource, presented_key
from hindsight.api.observability import MetricUnit, logger, metrics
from hindsight.core.models import Principal

UNAUTHORIZED = "Unauthorized"  # the exact message API Gateway maps to 401


def stage_resources(method_arn: str) -> str:
    """``arn:...:api-id/stage/*``: every route of the stage the request came to."""
    prefix, _, path = method_arn.partition(":execute-api:")
    if not path:
        return method_arn
    parts = path.split("/")
    return f"{prefix}:execute-api:{'/'.join(parts[:2])}/*"


def _joined(scopes: frozenset[str]) -> str:
    return ",".join(sorted(scopes))


def allow(principal: Principal, method_arn: str) -> dict[str, Any]:
    """The IAM policy and context API Gateway caches and forwards for an allowed key."""
    context = {
        "tenant_id": principal.tenant_id,
        "key_id": principal.key_id,
        "read_scopes": _joined(principal.read_scopes),
        "write_scopes": _joined(principal.write_scopes),
        "default_scope": principal.default_scope,
    }
    if principal.secrets:  # the key's own secrets policy
        context["secrets"] = principal.secrets
    return {
        "principalId": f"{principal.tenant_id}:{principal.key_id}",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Action": "execute-api:Invoke",
                    "Effect": "Allow",
                    "Resource": stage_resources(method_arn),
                }
            ],
        },
        "context": context,
    }


def authorize(event: dict[str, Any], source: KeyRingSource) -> dict[str, Any]:
    """The authorizer answer for a REQUEST event, or ``Exception("Unauthorized")``."""
    key = presented_key(event.get("headers") or {})
    if key is None:
        logger.info("no api key presented")
        raise Exception(UNAUTHORIZED)  # API Gateway maps exactly this to 401
    principal = source.key_ring().lookup(key)
    if principal is None:
        logger.info("unknown api key presented")
        metrics.add_metric(name="UnknownApiKeys", unit=MetricUnit.Count, value=1)
        raise Exception(UNAUTHORIZED)
    logger.append_keys(tenant_id=principal.tenant_id, key_id=principal.key_id)
    logger.info("api key accepted")
    return allow(principal, str(event.get("methodArn", "")))
