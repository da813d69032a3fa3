"""S3 backend: the blobs of a cluster in an S3-compatible object store (AWS S3, Swift's s3api,
MinIO, Ceph RGW), with Redis keeping the action-cache records when there is one.

``s3://BUCKET[/PREFIX]`` lays out (``v1`` is the layout version, as on disk)::

    PREFIX/v1/cas/ab12…ef          blob, named by the hex sha256 of its bytes
    PREFIX/v1/ac/cd34…90.json      action record (only without Redis: records live there otherwise)
    PREFIX/v1/prov/ab12…ef.json    a blob's provenance envelope (only without Redis)

With ``records`` (a :class:`RedisStorage`) the bucket holds blobs only; records and provenance
envelopes stay in Redis, as do the single-flight leases. Always used with the disk tier in front
(``TieredStorage``): every blob read from the bucket is copied to disk.

Invariants:

* A blob is uploaded with one ``PutObject`` carrying ``Content-MD5``: an object store makes an
  object visible only once the whole PUT has arrived and matched, so no reader ever sees half a
  blob. No conditional PUT is needed (Swift ignores ``If-None-Match: *``): the name is the content,
  so two writers racing on one key write the same bytes. A blob already present (HEAD, same size)
  is not uploaded again. A blob from a file (``put_blob_file``, a parameter archive) is streamed
  from it: one ``PutObject`` up to ``SINGLE_PUT_MAX`` bytes, else a multipart upload whose parts
  each carry their ``Content-MD5`` (the object appears only when the upload completes; a failed
  one is aborted). The file is hashed before anything is sent.
* Every read re-hashes the bytes; a blob that does not match its name is deleted, reported to
  ``on_corrupt`` and is absent — never returned. The blob is written before its record, and a
  record whose blob is gone or corrupt is deleted and is a miss.
* With an ``authority`` a record kept in the bucket is a hit only if its provenance verifies (as
  on disk and in Redis); records in Redis are checked by the Redis backend.

Failure semantics: any failure to reach the store (connection refused or reset, timeouts, 5xx,
and also 403/NoSuchBucket, which retrying will not fix) becomes :class:`BlobStoreUnavailable` — a
:class:`kiln.errors.CacheUnavailable` that the tiered wrapper and the facade let through, so a
request the disk tier cannot answer fails with 503 ``cache_unavailable`` instead of compiling
something that could not be shared. A miss proves the store answers (``find`` asks it even when
the record's absence came from Redis). After a connection failure the backend fails fast for
``retry_interval`` seconds, then tries again: nothing is ever disabled, it recovers by itself.
A Redis failure stays a plain ``CacheUnavailable`` (a miss, see tiered.py).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar
from urllib.parse import urlsplit

from kiln.errors import InvalidRequest

from .key import normalize_digest
from .store import (
    BlobStoreUnavailable,
    Outage,
    blob_digest,
    check_blob,
    decode_record,
    encode_record,
    file_chunks,
)
from .types import ActionRecord, Found, RecordAuthority, StoreStats, VerifyReport

if TYPE_CHECKING:
    from .redis import RedisStorage

__all__ = ["S3Storage", "parse_s3_url"]

log = logging.getLogger("kiln.cache.s3")

LAYOUT = "v1"
#: Largest blob sent in one PUT (S3 refuses a single PUT over 5 GiB); part size beyond it.
SINGLE_PUT_MAX = 5 << 30
PART_SIZE = 256 << 20
T = TypeVar("T")


def parse_s3_url(url: str) -> tuple[str, str]:
    """``(bucket, prefix)`` of ``s3://BUCKET[/PREFIX]`` (prefix without slashes at either end).
    InvalidRequest for anything else."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise InvalidRequest(
            f"an S3 cache URL is s3://BUCKET[/PREFIX], not {url!r}", detail={"s3_url": url}
        )
    return parts.netloc, parts.path.strip("/")


def _hex(digest: str) -> str:
    return normalize_digest(digest)[len("sha256:") :]


class S3Storage:
    """CAS (and, without ``records``, AC) in one bucket. Thread-safe (a boto3 client is)."""

    name = "s3"

    def __init__(
        self,
        url: str,
        *,
        endpoint_url: str | None = None,
        records: RedisStorage | None = None,
        connect_timeout: float = 2.0,
        read_timeout: float = 30.0,
        retry_interval: float = 1.0,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        """Credentials and region come from the standard AWS environment (``AWS_ACCESS_KEY_ID``,
        ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, profiles, instance roles). With an
        ``endpoint_url`` (any store other than AWS) requests are path-style. Nothing is sent
        before the first operation, so opening succeeds while the store is down."""
        import boto3  # here: importing kiln.cache stays cheap for those without S3
        from botocore.config import Config

        self.url = url
        self.bucket, prefix = parse_s3_url(url)
        self.root = f"{prefix}/{LAYOUT}/" if prefix else f"{LAYOUT}/"
        self.endpoint_url = endpoint_url
        self.records = records
        self.retry_interval = retry_interval
        #: Called with each failure (already a BlobStoreUnavailable) — the metrics hook.
        self.on_error = on_error
        #: Called with the object key of every corrupt blob or record found and removed.
        self.on_corrupt: Callable[[str], None] | None = None
        #: Authenticates every record read from the bucket (records in Redis: Redis does).
        self.authority: RecordAuthority | None = None
        #: Called with the object key of every record refused by ``authority`` (and deleted).
        self.on_forged: Callable[[str], None] | None = None
        session = boto3.session.Session()
        region = session.region_name or "us-east-1"
        self.client = session.client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=region,
            config=Config(
                s3={"addressing_style": "path" if endpoint_url else "auto"},
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                # One retry absorbs a pooled connection that died with a restarted server.
                retries={"mode": "standard", "total_max_attempts": 2},
                max_pool_connections=32,
                # Integrity is ours (Content-MD5 on PUT, sha256 on every read); the flexible
                # checksums of recent botocore (aws-chunked uploads) are not understood everywhere.
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ),
        )
        self._outage = Outage(BlobStoreUnavailable)

    def location(self) -> str:
        where = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return f"s3://{self.bucket}/{self.root.removesuffix('/')}{where}"

    def _k_blob(self, digest: str) -> str:
        return f"{self.root}cas/{_hex(digest)}"

    def _k_rec(self, key: str) -> str:
        return f"{self.root}ac/{_hex(key)}.json"

    def _k_prov(self, digest: str) -> str:
        return f"{self.root}prov/{_hex(digest)}.json"

    # -- the one place where boto3 failures are translated ----------------------------------

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one request, translating failures to BlobStoreUnavailable (see module doc)."""
        from botocore.exceptions import BotoCoreError, ClientError
        from urllib3.exceptions import HTTPError

        where = f"the object store {self.location()}"
        self._outage.check(where)
        try:
            result = fn(*args, **kwargs)
        except ClientError as exc:
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            code = exc.response.get("Error", {}).get("Code") or str(status)
            self._failed(f"{code}: {exc}", exc, connection_lost=status >= 500)
        except (BotoCoreError, HTTPError, OSError) as exc:
            self._failed(f"{type(exc).__name__}: {exc}", exc, connection_lost=True)
        self._outage.ok(where)
        return result

    def _failed(self, why: str, exc: Exception, *, connection_lost: bool) -> NoReturn:
        where = f"the object store {self.location()}"
        self._outage.failed(f"{where}: {why}", where, exc, connection_lost=connection_lost,
                            retry_interval=self.retry_interval, on_error=self.on_error)

    def _get(self, okey: str) -> bytes | None:
        from botocore.exceptions import ClientError

        def get() -> bytes | None:
            try:
                resp = self.client.get_object(Bucket=self.bucket, Key=okey)
            except ClientError as exc:
                if _absent(exc):
                    return None
                raise
            with contextlib.closing(resp["Body"]) as body:
                return bytes(body.read())

        return self.call(get)

    def _head(self, okey: str) -> int | None:
        """The object's size, or None if absent."""
        from botocore.exceptions import ClientError

        def head() -> int | None:
            try:
                return int(self.client.head_object(Bucket=self.bucket, Key=okey)["ContentLength"])
            except ClientError as exc:
                if _absent(exc):
                    return None
                raise

        return self.call(head)

    def _put(self, okey: str, data: bytes) -> None:
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        self.call(
            self.client.put_object, Bucket=self.bucket, Key=okey, Body=data, ContentMD5=md5,
            ContentType="application/octet-stream",
        )  # fmt: skip

    def _delete(self, okey: str) -> None:
        self.call(self.client.delete_object, Bucket=self.bucket, Key=okey)

    def _list(self, kind: str) -> Iterator[tuple[str, int]]:
        """``(object key, size)`` of every object under ``<root><kind>/``."""
        pages = iter(
            self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=f"{self.root}{kind}/"
            )
        )
        while True:
            page = self.call(next, pages, None)
            if page is None:
                return
            for obj in page.get("Contents", ()):
                yield str(obj["Key"]), int(obj["Size"])

    def ping(self) -> bool:
        """True if the bucket answers (readiness probes); never raises."""
        try:
            self.call(self.client.head_bucket, Bucket=self.bucket)
            return True
        except BlobStoreUnavailable:
            return False

    # -- reads -------------------------------------------------------------------------------

    def find(self, key: str, *, load: bool = False) -> Found | None:
        rec = self.get_record(key)
        if rec is None:
            if self.records is not None:
                # Redis said "miss"; a miss is an answer only while the blobs' home answers.
                self.call(self.client.head_bucket, Bucket=self.bucket)
            return None
        data = self.get_blob(rec.digest)
        if data is None:  # gone (lifecycle rule, deleted) or corrupt: the record is not a hit
            self.delete_record(key)
            return None
        return Found(rec, "s3", data)

    def get_record(self, key: str) -> ActionRecord | None:
        if self.records is not None:
            return self.records.get_record(key)
        okey = self._k_rec(key)
        raw = self._get(okey)
        if raw is None:
            return None
        rec = decode_record(raw, key=_hex(key))
        if rec is None:
            self._corrupt(okey)
            return None
        return rec if self._authentic(rec, okey) else None

    def get_provenance(self, digest: str) -> str | None:
        """The stored provenance envelope (JSON text) of a blob, unverified; None if absent."""
        if self.records is not None:
            return self.records.get_provenance(digest)
        raw = self._get(self._k_prov(digest))
        try:
            return None if raw is None else raw.decode()
        except UnicodeDecodeError:
            return None

    def get_blob(self, digest: str) -> bytes | None:
        digest = normalize_digest(digest)
        okey = self._k_blob(digest)
        data = self._get(okey)
        if data is None:
            return None
        if blob_digest(data) != digest:
            self._corrupt(okey)
            return None
        return data

    def has_blob(self, digest: str) -> bool:
        return self._head(self._k_blob(digest)) is not None

    def blob_path(self, digest: str) -> None:
        return None

    def _authentic(self, rec: ActionRecord, okey: str) -> bool:
        if self.authority is None:
            return True
        why = self.authority.check(rec)
        if why is None:
            return True
        log.warning("kiln cache: refusing the s3 record %s: %s", okey, why)
        self._delete(okey)
        if self.on_forged is not None:
            self.on_forged(okey)
        return False

    # -- writes ------------------------------------------------------------------------------

    def put(self, record: ActionRecord, data: bytes) -> None:
        """The blob (skipped if present), then the record: in Redis when there is one."""
        self.put_blob(record.digest, data)
        self.put_record(record)

    def put_blob(self, digest: str, data: bytes) -> None:
        digest = normalize_digest(digest)
        check_blob(digest, data)
        okey = self._k_blob(digest)
        if self._head(okey) == len(data):
            return  # content-addressed: the same bytes are there (every read re-checks them)
        self._put(okey, data)

    def put_blob_file(self, digest: str, path: str | os.PathLike[str]) -> None:
        """Upload the file, streamed (see the module doc); ValueError, nothing sent, if its
        bytes do not match ``digest``."""
        digest = normalize_digest(digest)
        okey = self._k_blob(digest)
        size = os.path.getsize(path)
        md5 = hashlib.md5(usedforsecurity=False)
        for chunk in file_chunks(path, digest):
            md5.update(chunk)
        if self._head(okey) == size:
            return
        if size <= SINGLE_PUT_MAX:
            with open(path, "rb") as f:
                self.call(
                    self.client.put_object, Bucket=self.bucket, Key=okey, Body=f,
                    ContentLength=size, ContentMD5=base64.b64encode(md5.digest()).decode(),
                    ContentType="application/octet-stream",
                )  # fmt: skip
            return
        self._put_multipart(okey, path)

    def _put_multipart(self, okey: str, path: str | os.PathLike[str]) -> None:
        up = self.call(self.client.create_multipart_upload, Bucket=self.bucket, Key=okey,
                       ContentType="application/octet-stream")
        uid = up["UploadId"]
        parts = []
        try:
            with open(path, "rb") as f:
                n = 0
                while part := f.read(PART_SIZE):
                    n += 1
                    md5 = base64.b64encode(hashlib.md5(part, usedforsecurity=False).digest())
                    resp = self.call(self.client.upload_part, Bucket=self.bucket, Key=okey,
                                     UploadId=uid, PartNumber=n, Body=part,
                                     ContentMD5=md5.decode())
                    parts.append({"PartNumber": n, "ETag": resp["ETag"]})
                    del part
            self.call(self.client.complete_multipart_upload, Bucket=self.bucket, Key=okey,
                      UploadId=uid, MultipartUpload={"Parts": parts})
        except BaseException:
            with contextlib.suppress(Exception):
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=okey, UploadId=uid)
            raise

    def put_provenance(self, digest: str, provenance: str) -> None:
        """The provenance envelope of a blob stored without a record (a parameter archive): in
        Redis when there is one, as for records."""
        if self.records is not None:
            self.records.put_provenance(digest, provenance)
            return
        self._put(self._k_prov(digest), provenance.encode())

    def put_record(self, record: ActionRecord) -> None:
        if self.records is not None:
            self.records.put_record(record)
            return
        if record.provenance:
            self._put(self._k_prov(record.digest), record.provenance.encode())
        self._put(self._k_rec(record.key), encode_record(record))

    def delete_record(self, key: str) -> None:
        if self.records is not None:
            self.records.delete_record(key)
        else:
            self._delete(self._k_rec(key))

    def delete_blob(self, digest: str) -> None:
        self._delete(self._k_blob(digest))

    # -- iteration, stats, verify ------------------------------------------------------------

    def iter_blobs(self) -> Iterator[tuple[str, int]]:
        for okey, size in self._list("cas"):
            yield "sha256:" + okey.rsplit("/", 1)[1], size

    def iter_records(self) -> Iterator[ActionRecord]:
        if self.records is not None:
            yield from self.records.iter_records()
            return
        for okey, _ in self._list("ac"):
            raw = self._get(okey)
            rec = None if raw is None else decode_record(raw, key=_record_key(okey))
            if rec is not None and self._authentic(rec, okey):
                yield rec

    def stats(self) -> StoreStats:
        """Lists the bucket (one request per 1000 objects). Records in Redis count there."""
        blobs = list(self._list("cas"))
        recs = [] if self.records is not None else list(self._list("ac"))
        return StoreStats(
            backend=self.name,
            location=self.location(),
            records=len(recs),
            blobs=len(blobs),
            bytes=sum(s for _, s in blobs) + sum(s for _, s in recs),
        )

    def verify(self) -> VerifyReport:
        """Downloads and re-hashes every blob; a record is dangling if its blob is absent."""
        rep = VerifyReport()
        for okey, _ in list(self._list("cas")):
            data = self._get(okey)
            if data is None:
                continue
            if blob_digest(data) == "sha256:" + okey.rsplit("/", 1)[1]:
                rep.ok_blobs += 1
            else:
                rep.corrupt += 1
                rep.removed.append(okey)
                self._corrupt(okey)
        if self.records is not None:
            for record in list(self.records.iter_records()):
                if self.has_blob(record.digest):
                    rep.ok_records += 1
                else:
                    rep.dangling += 1
                    rep.removed.append(self.records._k_rec(record.key))
                    self.records.delete_record(record.key)
            return rep
        for okey, _ in list(self._list("ac")):
            raw = self._get(okey)
            if raw is None:
                continue
            rec = decode_record(raw, key=_record_key(okey))
            if rec is None or not self._authentic(rec, okey):
                rep.corrupt += 1
            elif not self.has_blob(rec.digest):
                rep.dangling += 1
            else:
                rep.ok_records += 1
                continue
            rep.removed.append(okey)
            self._delete(okey)
        return rep

    def close(self) -> None:
        self.client.close()
        if self.records is not None:
            self.records.close()

    def _corrupt(self, okey: str) -> None:
        log.warning("kiln cache: removing corrupt s3 object %s", okey)
        self._delete(okey)
        if self.on_corrupt is not None:
            self.on_corrupt(okey)


def _absent(exc: Any) -> bool:
    """A 404 about the object (not NoSuchBucket: a missing bucket is a configuration error)."""
    code = exc.response.get("Error", {}).get("Code", "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code != "NoSuchBucket" and (status == 404 or code in ("NoSuchKey", "NotFound", "404"))


def _record_key(okey: str) -> str:
    return okey.rsplit("/", 1)[1].removesuffix(".json")


def endpoint_from_env() -> str | None:
    """``$KILN_S3_ENDPOINT_URL`` (None when unset or empty: boto3's own default applies)."""
    return os.environ.get("KILN_S3_ENDPOINT_URL") or None
