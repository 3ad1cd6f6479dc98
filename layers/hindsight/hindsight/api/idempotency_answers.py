"""The ``KeptAnswers`` port over the idempotency records of ``hindsight.api.idempotency``.

Built with every service (``bootstrap``); the records' store (SQLite file, DynamoDB table)
is opened only when an erasure asks for it, so no function pays for it at a cold start.
"""

from __future__ import annotations

from hindsight.settings import Settings


class IdempotencyAnswers:
    """Erasing a user forgets the kept answers of the user's idempotent writes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def forget_user(self, tenant_id: str, user_id: str) -> int:
        from hindsight.api.idempotency import idempotent_writes

        return idempotent_writes(self.settings).forget_user(tenant_id, user_id)
