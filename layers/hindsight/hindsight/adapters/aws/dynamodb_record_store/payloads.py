"""S3 objects holding what is too large for a memory's DynamoDB item (its content, its
chunk vectors), and the references (``s3://bucket/key``) the item keeps instead.

Object keys: ``{prefix}{owner}/{memory}/{part}-{token}``. ``owner`` is a SHA-256 of the tenant
and user (no user id, often an e-mail, shows in S3 keys, logs or CloudTrail; erasing a user
deletes the one prefix), ``memory`` the memory id (percent-encoded), ``part`` ``body`` or
``vec`` and ``token`` random: every write makes a new object, so an object is never
overwritten under a reader, and a failed write deletes exactly what it wrote.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

from botocore.exceptions import BotoCoreError, ClientError

from hindsight.core.errors import ConfigurationError, UnavailableError

logger = logging.getLogger(__name__)

REFERENCE_SCHEME = "s3://"
DEFAULT_PREFIX = "memories/"
_DELETE_BATCH = 1_000  # DeleteObjects takes at most 1,000 keys
_MISSING = {"NoSuchKey", "404", "NotFound"}


class PayloadMissingError(UnavailableError):
    """An object an item pointed at is gone: the memory was updated or deleted meanwhile."""


def is_reference(value: object) -> bool:
    return isinstance(value, str) and value.startswith(REFERENCE_SCHEME)


def split_reference(reference: str) -> tuple[str, str]:
    """(bucket, key) of an ``s3://bucket/key`` reference."""
    bucket, _, key = reference[len(REFERENCE_SCHEME) :].partition("/")
    if not bucket or not key:
        raise ValueError(f"not an S3 reference: {reference!r}")
    return bucket, key


def default_s3_client(region: str | None = None) -> Any:
    """An S3 client from the standard AWS chain (honours ``AWS_ENDPOINT_URL(_S3)``)."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "max_attempts": 4},
        connect_timeout=3,
        read_timeout=20,
        max_pool_connections=32,
        s3={"addressing_style": "path"},
    )
    return boto3.client("s3", region_name=region, config=config)


class S3PayloadStore:
    """Large payloads of memory items in one S3 bucket (reads follow any bucket a
    reference names); the boto3 client is injected and thread-safe."""

    def __init__(
        self,
        bucket: str | None,
        client: Any = None,
        prefix: str = DEFAULT_PREFIX,
        workers: int = 8,
    ) -> None:
        self.bucket = bucket or None
        self.client = client if client is not None else default_s3_client()
        self.prefix = prefix
        self._workers = max(1, workers)

    # --- keys ------------------------------------------------------------------------------
    def owner_prefix(self, tenant_id: str, user_id: str) -> str:
        owner = hashlib.sha256(f"{tenant_id}\0{user_id}".encode()).hexdigest()[:40]
        return f"{self.prefix}{owner}/"

    def _key(self, tenant_id: str, user_id: str, memory_id: str, part: str) -> str:
        memory = quote(memory_id, safe="")
        if len(memory) > 200:
            memory = hashlib.sha256(memory_id.encode()).hexdigest()
        return f"{self.owner_prefix(tenant_id, user_id)}{memory}/{part}-{secrets.token_hex(8)}"

    # --- writes ----------------------------------------------------------------------------
    def put(self, tenant_id: str, user_id: str, memory_id: str, part: str, data: bytes) -> str:
        """Write a new object; its reference."""
        if self.bucket is None:
            raise ConfigurationError(
                "a memory too large for one DynamoDB item needs an S3 bucket: set "
                "HINDSIGHT_BLOB_BUCKET (template.yaml creates one)"
            )
        key = self._key(tenant_id, user_id, memory_id, part)
        with self._translated(f"writing s3://{self.bucket}/{key}"):
            self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=data,
                ContentType="application/octet-stream",
            )
        return f"{REFERENCE_SCHEME}{self.bucket}/{key}"

    def delete(self, references: Iterable[str]) -> None:
        """Delete the objects referenced (absent ones are no error)."""
        by_bucket: dict[str, list[str]] = {}
        for reference in references:
            bucket, key = split_reference(reference)
            by_bucket.setdefault(bucket, []).append(key)
        for bucket, keys in by_bucket.items():
            self._delete_keys(bucket, keys)

    def _delete_keys(self, bucket: str, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = [{"Key": key} for key in keys[start : start + _DELETE_BATCH]]
            with self._translated(f"deleting {len(batch)} object(s) from s3://{bucket}"):
                response = self.client.delete_objects(
                    Bucket=bucket, Delete={"Objects": batch, "Quiet": True}
                )
            failed = response.get("Errors") or []
            if failed:
                raise UnavailableError(
                    f"S3 refused to delete {len(failed)} object(s) of s3://{bucket} "
                    f"({failed[0].get('Code')}); retry the delete"
                )

    def delete_user(self, tenant_id: str, user_id: str) -> int:
        """Delete every object of one user (in the configured bucket); how many."""
        if self.bucket is None:
            return 0
        keys = list(self._keys_under(self.owner_prefix(tenant_id, user_id)))
        self._delete_keys(self.bucket, keys)
        return len(keys)

    def _keys_under(self, prefix: str) -> Iterator[str]:
        assert self.bucket is not None
        token: str | None = None
        while True:
            extra = {"ContinuationToken": token} if token else {}
            with self._translated(f"listing s3://{self.bucket}/{prefix}"):
                response = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, **extra)
            yield from (entry["Key"] for entry in response.get("Contents", []))
            token = response.get("NextContinuationToken")
            if not token:
                return

    # --- reads -----------------------------------------------------------------------------
    def get(self, reference: str) -> bytes:
        bucket, key = split_reference(reference)
        with self._translated(f"reading {reference}"):
            response = self.client.get_object(Bucket=bucket, Key=key)
            data: bytes = response["Body"].read()
        return data

    def get_many(self, references: Sequence[str]) -> dict[str, bytes]:
        """Every object referenced, fetched in parallel."""
        unique = list(dict.fromkeys(references))
        if len(unique) <= 1:
            return {reference: self.get(reference) for reference in unique}
        with ThreadPoolExecutor(max_workers=min(self._workers, len(unique))) as pool:
            return dict(zip(unique, pool.map(self.get, unique), strict=True))

    # --- the bucket ------------------------------------------------------------------------
    def bucket_exists(self) -> bool:
        if self.bucket is None:
            return False
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if _code(exc) in _MISSING | {"NoSuchBucket"}:
                return False
            raise
        return True

    def create_bucket(self, region: str | None = None) -> None:
        """Create the bucket (private, encrypted by S3 by default)."""
        assert self.bucket is not None
        params: dict[str, Any] = {"Bucket": self.bucket}
        if region and region != "us-east-1":
            params["CreateBucketConfiguration"] = {"LocationConstraint": region}
        self.client.create_bucket(**params)
        self.client.put_public_access_block(
            Bucket=self.bucket,
            PublicAccessBlockConfiguration={
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            },
        )

    # --- errors ----------------------------------------------------------------------------
    @contextmanager
    def _translated(self, action: str) -> Iterator[None]:
        try:
            yield
        except ClientError as exc:
            code = _code(exc)
            if code in _MISSING:
                raise PayloadMissingError(
                    f"an S3 object of a memory is gone ({action}): the memory changed while "
                    "it was read; retry"
                ) from exc
            raise UnavailableError(_advice(action, code)) from exc
        except BotoCoreError as exc:
            raise UnavailableError(
                f"cannot reach S3 ({action}: {exc}); check the region, the network, "
                "credentials and AWS_ENDPOINT_URL_S3, then retry"
            ) from exc


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _advice(action: str, code: str) -> str:
    if code == "NoSuchBucket":
        return (
            f"the S3 bucket for large memories does not exist ({action}); create it, deploy "
            "template.yaml, or set HINDSIGHT_BLOB_BUCKET to an existing bucket"
        )
    if code in {"AccessDenied", "InvalidAccessKeyId", "ExpiredToken", "SignatureDoesNotMatch"}:
        return (
            f"S3 refused {action} ({code}); check the credentials and that the role may "
            "read and write the bucket named by HINDSIGHT_BLOB_BUCKET"
        )
    if code in {"SlowDown", "ServiceUnavailable", "RequestTimeout"}:
        return f"S3 is throttling or busy ({action}); retry in a moment"
    return f"S3 failed {action} ({code}); retry later"
