"""Signed provenance: who built an executable, from which graph, for which target, with which flags.

Every executable Kiln stores gets a DSSE envelope (securesystemslib's ``dsse.Envelope``, signed
with an Ed25519 key through ``cryptography``) over an in-toto Statement v1 whose subject is the
executable's sha256 and whose predicate is SLSA provenance v1::

    {"_type": "https://in-toto.io/Statement/v1",
     "subject": [{"name": "<target>.vmfb", "digest": {"sha256": "<hex>"},
                  "annotations": {"size": N}}],
     "predicateType": "https://slsa.dev/provenance/v1",
     "predicate": {
       "buildDefinition": {"buildType": BUILD_TYPE,
         "externalParameters": {"graph_digest", "target", "options"},
         "internalParameters": {"flags", "rewrites", "key_version", "compile_key"},
         "resolvedDependencies": [graph (canonical MLIR), iree-compile binary]},
       "runDetails": {"builder": {"id": BUILDER_ID, "version": {"kiln", "iree-compile"}},
         "metadata": {"invocationId": "<compile key>", "startedOn", "finishedOn"},
         "byproducts": [{"name": "warnings", "annotations": {"messages": [...]}}]}}}

A parameter archive (``.irpa``: weights apart from code, docs/caching.md) gets its own envelope
(``params_statement``): subject ``params.irpa`` with the archive's sha256, ``buildType``
``PARAMS_BUILD_TYPE``, ``externalParameters`` ``{"graph_digest", "scope", "format"}`` (the
code-only graph whose import wrote it; every executable compiled from that graph binds it). An
executable's own statement cannot name one archive: with ``params: "external"`` (in its
``options``) one executable serves every weight set of its architecture, so the chain is
executable → graph digest ← archive, each link signed.

The DSSE signature covers ``PAE(payloadType, payload)`` = ``"DSSEv1" SP len(type) SP type SP
len(body) SP body``, so any DSSE verifier accepts it; ``keyid`` is the hex sha256 of the public
key's 32 raw bytes.

Keys: the signing key is a PEM (PKCS#8) file, ``KILN_SIGNING_KEY_FILE`` (default
``~/.config/kiln/signing-key.pem``, honouring ``$XDG_CONFIG_HOME``: outside the cache directory,
so whoever can write the cache cannot read or replace it). It is created 0600 on first use when
missing. Older keys stay trusted for verification while their public PEMs are listed in
``KILN_VERIFY_KEYS_FILES`` (comma-separated paths; rotation: move the old key there, remove it
once nothing signed by it is still served).

Failure semantics: every refusal raises :class:`kiln.errors.IntegrityError` whose message says
why (unknown key, bad signature, subject or predicate mismatch, malformed envelope);
``Authority.check`` returns that reason as a string instead, for the cache's hot path. A key file
that cannot be read or parsed raises ``InvalidRequest`` naming the file.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime
import hashlib
import json
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import CryptoSigner, Key, SSlibKey  # type: ignore[attr-defined]

from kiln.errors import IntegrityError, InvalidRequest

if TYPE_CHECKING:
    from kiln.cache.key import CompileKey
    from kiln.cache.types import ActionRecord

__all__ = [
    "BUILDER_ID",
    "BUILD_TYPE",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "TUNING_PREDICATE_TYPE",
    "Authority",
    "KeyRing",
    "Signer",
    "TrustedKey",
    "check_statement",
    "params_statement",
    "default_signing_key_file",
    "pae",
    "verify_artifact",
]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
BUILD_TYPE = "https://kiln.invalid/compile/v1"
PARAMS_BUILD_TYPE = "https://kiln.invalid/params/v1"
#: The predicate of a tuning statement (the server's fleet-wide autotune evidence and choice,
#: service/tuning.py; verified by kiln/client/tuning.py).
TUNING_PREDICATE_TYPE = "https://kiln.invalid/tuning/v1"
BUILDER_ID = "https://kiln.invalid/builder/kiln"


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what the signature covers."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def keyid_of(public_key: Ed25519PublicKey) -> str:
    """Hex sha256 of the key's 32 raw bytes."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def default_signing_key_file() -> Path:
    """``$KILN_SIGNING_KEY_FILE``, else ``$XDG_CONFIG_HOME/kiln/signing-key.pem`` (default
    ``~/.config``; ``~/Library/Application Support`` on macOS)."""
    env = os.environ.get("KILN_SIGNING_KEY_FILE")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "kiln" / "signing-key.pem"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config"
    return base / "kiln" / "signing-key.pem"


@dataclass(frozen=True)
class TrustedKey:
    """A public key trusted for verification."""

    keyid: str
    public_key: Ed25519PublicKey

    @property
    def pem(self) -> str:
        return self.public_key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()

    def to_json(self) -> dict[str, str]:
        """The ``GET /v1/keys`` entry."""
        return {"keyid": self.keyid, "algorithm": "ed25519", "public_key_pem": self.pem}

    def sslib_key(self) -> SSlibKey:
        return SSlibKey.from_crypto(self.public_key, keyid=self.keyid)

    @classmethod
    def from_public_key(cls, public_key: Ed25519PublicKey) -> TrustedKey:
        return cls(keyid_of(public_key), public_key)

    @classmethod
    def from_pem(cls, pem: str | bytes, *, where: str = "key") -> TrustedKey:
        """A public key PEM, or a private key PEM (its public half). InvalidRequest otherwise."""
        data = pem.encode() if isinstance(pem, str) else pem
        try:
            if b"PRIVATE KEY" in data:
                key: Any = serialization.load_pem_private_key(data, password=None).public_key()
            else:
                key = serialization.load_pem_public_key(data)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            raise InvalidRequest(f"{where} is not a PEM key: {exc}") from exc
        if not isinstance(key, Ed25519PublicKey):
            raise InvalidRequest(f"{where} is not an Ed25519 key")
        return cls.from_public_key(key)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> TrustedKey:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InvalidRequest(f"cannot read the key file {path}: {exc.strerror}") from exc
        return cls.from_pem(data, where=f"the key file {path}")


class KeyRing:
    """The public keys an envelope may be signed by (keyid → key)."""

    def __init__(self, keys: Iterable[TrustedKey]) -> None:
        self.keys: dict[str, TrustedKey] = {k.keyid: k for k in keys}

    @classmethod
    def from_pems(cls, pems: Iterable[str | bytes]) -> KeyRing:
        return cls(TrustedKey.from_pem(p) for p in pems)

    @classmethod
    def from_files(cls, paths: Iterable[str | os.PathLike[str]]) -> KeyRing:
        return cls(TrustedKey.from_file(p) for p in paths)

    def __bool__(self) -> bool:
        return bool(self.keys)

    def to_json(self) -> list[dict[str, str]]:
        return [k.to_json() for k in self.keys.values()]

    def open(
        self, envelope: Mapping[str, Any] | str | bytes, *, predicate_type: str = PREDICATE_TYPE
    ) -> dict[str, Any]:
        """The statement inside ``envelope`` once a trusted key's signature verifies.

        IntegrityError: not a DSSE envelope, another payload type, no signature, signed only by
        unknown keys, a signature that does not verify (tampered payload), or a statement whose
        predicate is not ``predicate_type`` (SLSA provenance unless told otherwise)."""
        env = _envelope(envelope)
        if env.payload_type != PAYLOAD_TYPE:
            raise IntegrityError(
                f"provenance payload type is {env.payload_type!r}, not {PAYLOAD_TYPE!r}"
            )
        if not env.signatures:
            raise IntegrityError("the provenance is not signed")
        known: list[Key] = [self.keys[k].sslib_key() for k in env.signatures if k in self.keys]
        if not known:
            raise IntegrityError(
                "the provenance is signed by an unknown key "
                f"({', '.join(sorted(env.signatures))}); trusted: "
                f"{', '.join(sorted(self.keys)) or 'none'}",
                detail={"keyids": sorted(env.signatures), "trusted": sorted(self.keys)},
            )
        try:
            env.verify(known, 1)
        except VerificationError as exc:
            raise IntegrityError(f"the provenance signature does not verify: {exc}") from exc
        try:
            stmt = json.loads(env.payload)
        except (ValueError, UnicodeDecodeError) as exc:
            raise IntegrityError("the signed payload is not JSON") from exc
        if not isinstance(stmt, dict) or stmt.get("_type") != STATEMENT_TYPE:
            raise IntegrityError("the signed payload is not an in-toto Statement v1")
        if stmt.get("predicateType") != predicate_type:
            raise IntegrityError(f"the statement's predicate is not {predicate_type}")
        return stmt


def check_statement(
    stmt: Mapping[str, Any],
    *,
    sha256: str | None = None,
    target: str | None = None,
    graph_digest: str | None = None,
) -> None:
    """IntegrityError unless the (verified) statement is about these bytes, target and graph.

    ``sha256`` is the hex (or ``sha256:<hex>``) digest of the bytes at hand; ``None`` skips a
    check."""
    subj = _subject(stmt)
    if sha256 is not None and subj != sha256.removeprefix("sha256:"):
        raise IntegrityError(
            f"the provenance is about sha256:{subj}, not these bytes (sha256:"
            f"{sha256.removeprefix('sha256:')}): a swapped or foreign provenance",
            detail={"subject": f"sha256:{subj}", "actual": f"sha256:{sha256}"},
        )
    ext = _params(stmt, "externalParameters")
    if target is not None and ext.get("target") != target:
        raise IntegrityError(
            f"the provenance is for target {ext.get('target')!r}, not {target!r}",
            detail={"provenance": ext.get("target"), "expected": target},
        )
    if graph_digest is not None and ext.get("graph_digest") != graph_digest:
        raise IntegrityError(
            f"the provenance is for graph {ext.get('graph_digest')}, not {graph_digest}",
            detail={"provenance": ext.get("graph_digest"), "expected": graph_digest},
        )


def verify_artifact(
    ring: KeyRing, data: bytes, envelope: Mapping[str, Any] | None, *,
    target: str | None = None, graph_digest: str | None = None,
) -> dict[str, Any]:
    """The verified in-toto statement for ``data``; IntegrityError (saying why) when the
    envelope is missing, signed by no trusted key, tampered, about other bytes, or for another
    target or graph."""
    if envelope is None:
        raise IntegrityError(
            "the artifact has no provenance, and trusted keys are configured: refusing it"
        )
    stmt = ring.open(envelope)
    check_statement(stmt, sha256=hashlib.sha256(data).hexdigest(), target=target,
                    graph_digest=graph_digest)
    return stmt


class Signer:
    """An Ed25519 private key that signs statements into DSSE envelopes."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self.private_key = private_key
        self.trusted = TrustedKey.from_public_key(private_key.public_key())
        self._signer = CryptoSigner(private_key, self.trusted.sslib_key())

    @property
    def keyid(self) -> str:
        return self.trusted.keyid

    @classmethod
    def generate(cls) -> Signer:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def load_or_create(cls, path: str | os.PathLike[str]) -> Signer:
        """The key in ``path``; a new one written there (mode 0600, parents 0700) if missing.

        Two processes starting at once agree on one key: the file is created exclusively and
        the loser reads the winner's. InvalidRequest if the file is unreadable or not an
        Ed25519 private key PEM."""
        p = Path(path).expanduser()
        if not p.exists():
            key = Ed25519PrivateKey.generate()
            pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, pem)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, p)  # fails if another process created it first
            except FileExistsError:
                pass
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise InvalidRequest(f"cannot read the signing key {p}: {exc.strerror}") from exc
        try:
            key_any = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            raise InvalidRequest(f"{p} is not a PEM private key: {exc}") from exc
        if not isinstance(key_any, Ed25519PrivateKey):
            raise InvalidRequest(f"{p} is not an Ed25519 private key")
        return cls(key_any)

    def sign(self, statement: Mapping[str, Any]) -> dict[str, Any]:
        """The DSSE envelope (as JSON) over the statement's canonical JSON."""
        payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
        env = Envelope(payload, PAYLOAD_TYPE, {})
        env.sign(self._signer)
        return dict(env.to_dict())


def statement(
    key: CompileKey,
    *,
    digest: str,
    size: int,
    compile_seconds: float,
    created: float,
    warnings: Sequence[str] = (),
    kiln_version: str | None = None,
) -> dict[str, Any]:
    """The in-toto Statement for the executable ``digest`` built under ``key``."""
    if kiln_version is None:
        from kiln import __version__ as kiln_version
    hexd = digest.removeprefix("sha256:")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{
            "name": f"{key.target}.vmfb",
            "digest": {"sha256": hexd},
            "annotations": {"size": size},
        }],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "graph_digest": key.graph_digest,
                    "target": key.target,
                    "options": key.options_dict,
                },
                "internalParameters": {
                    "flags": list(key.flags),
                    "rewrites": list(key.rewrites),
                    "key_version": key.key_version,
                    "compile_key": key.digest(),
                },
                "resolvedDependencies": [
                    {"name": "graph.mlir (canonical form)",
                     "digest": {"sha256": key.graph_digest.removeprefix("sha256:")}},
                    {"name": "iree-compile",
                     "digest": {"sha256": key.compiler_hash.removeprefix("sha256:")},
                     "annotations": {"version": key.compiler_version}},
                ],
            },
            "runDetails": {
                "builder": {
                    "id": BUILDER_ID,
                    "version": {"kiln": kiln_version, "iree-compile": key.compiler_version},
                },
                "metadata": {
                    "invocationId": key.digest(),
                    "startedOn": _iso(created - compile_seconds),
                    "finishedOn": _iso(created),
                },
                "byproducts": [{"name": "warnings", "annotations": {"messages": list(warnings)}}],
            },
        },
    }


def params_statement(
    digest: str, size: int, *, graph_digest: str, created: float, scope: str = "model",
    kiln_version: str | None = None,
) -> dict[str, Any]:
    """The in-toto Statement for the parameter archive ``digest`` an import of ``graph_digest``
    wrote."""
    if kiln_version is None:
        from kiln import __version__ as kiln_version
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{
            "name": "params.irpa",
            "digest": {"sha256": digest.removeprefix("sha256:")},
            "annotations": {"size": size},
        }],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": PARAMS_BUILD_TYPE,
                "externalParameters": {"graph_digest": graph_digest, "scope": scope,
                                       "format": "irpa"},
                "resolvedDependencies": [
                    {"name": "graph.mlir (canonical form, code only)",
                     "digest": {"sha256": graph_digest.removeprefix("sha256:")}},
                ],
            },
            "runDetails": {
                "builder": {"id": BUILDER_ID, "version": {"kiln": kiln_version}},
                "metadata": {"finishedOn": _iso(created)},
            },
        },
    }


def compile_key_of(stmt: Mapping[str, Any]) -> CompileKey:
    """The compile key the statement's parameters describe (IntegrityError if malformed)."""
    from kiln.cache.key import CompileKey

    ext = _params(stmt, "externalParameters")
    internal = _params(stmt, "internalParameters")
    deps = stmt["predicate"]["buildDefinition"].get("resolvedDependencies") or []
    compiler = next((d for d in deps if d.get("name") == "iree-compile"), None)
    try:
        assert compiler is not None
        return CompileKey(
            graph_digest=ext["graph_digest"],
            target=ext["target"],
            options=dict(ext.get("options") or {}),
            flags=tuple(internal["flags"]),
            compiler_version=str(compiler["annotations"]["version"]),
            compiler_hash="sha256:" + str(compiler["digest"]["sha256"]),
            key_version=int(internal["key_version"]),
            rewrites=tuple(internal.get("rewrites") or ()),
        )
    except (AssertionError, KeyError, TypeError, ValueError) as exc:
        raise IntegrityError(f"the provenance's build parameters are malformed: {exc}") from exc


class Authority:
    """Signs the cache's action records and authenticates them on every hit.

    ``signer`` may be None (verify only, e.g. ``kiln cache verify`` without the key); ``ring``
    holds every trusted public key (the signer's own is added)."""

    #: How many authentic records ``check`` remembers (a hit on one of them costs a dict lookup
    #: instead of a signature verification).
    AUTHENTIC_MEMORY = 4096

    def __init__(self, signer: Signer | None, ring: KeyRing | None = None) -> None:
        self.signer = signer
        keys = list(ring.keys.values()) if ring is not None else []
        if signer is not None:
            keys.insert(0, signer.trusted)
        self.ring = KeyRing(keys)
        self._authentic: OrderedDict[ActionRecord, None] = OrderedDict()
        self._authentic_mu = threading.Lock()

    @classmethod
    def from_files(
        cls,
        signing_key_file: str | os.PathLike[str] | None = None,
        verify_key_files: Iterable[str | os.PathLike[str]] = (),
        *,
        create: bool = True,
    ) -> Authority:
        """The signing key (``default_signing_key_file()`` when None; created when missing if
        ``create``, else left out) plus the extra verification keys."""
        path = Path(signing_key_file) if signing_key_file else default_signing_key_file()
        signer = Signer.load_or_create(path) if create or path.exists() else None
        return cls(signer, KeyRing.from_files(verify_key_files))

    @classmethod
    def from_env(cls, *, create: bool = True) -> Authority:
        """``KILN_SIGNING_KEY_FILE`` and ``KILN_VERIFY_KEYS_FILES`` (comma-separated)."""
        return cls.from_files(None, split_paths(os.environ.get("KILN_VERIFY_KEYS_FILES", "")),
                              create=create)

    def seal(self, key: CompileKey, record: ActionRecord) -> str:
        """The record's provenance envelope as canonical JSON text ("" without a signer)."""
        if self.signer is None:
            return ""
        env = self.signer.sign(statement(
            key, digest=record.digest, size=record.size,
            compile_seconds=record.compile_seconds, created=record.created,
            warnings=record.warnings,
        ))
        return json.dumps(env, sort_keys=True, separators=(",", ":"))

    def seal_params(self, digest: str, size: int, *, graph_digest: str) -> str:
        """A parameter archive's provenance envelope as canonical JSON text ("" without a
        signer)."""
        if self.signer is None:
            return ""
        env = self.signer.sign(params_statement(digest, size, graph_digest=graph_digest,
                                                created=time.time()))
        return json.dumps(env, sort_keys=True, separators=(",", ":"))

    def check(self, record: ActionRecord) -> str | None:
        """None if ``record`` is authentic: a trusted key signed a statement whose subject is
        the record's blob and whose parameters hash to the record's key and match its target,
        flags, rewrites, compiler and warnings. Otherwise why not.

        The signature is verified once per record: a record equal in every field (provenance
        included) to one found authentic before is authentic again, as the ring never changes.
        Refusals are not remembered."""
        if not record.provenance:
            return "the record is not signed"
        with self._authentic_mu:
            if record in self._authentic:
                self._authentic.move_to_end(record)
                return None
        why = self._check(record)
        if why is None:
            with self._authentic_mu:
                self._authentic[record] = None
                while len(self._authentic) > self.AUTHENTIC_MEMORY:
                    self._authentic.popitem(last=False)
        return why

    def _check(self, record: ActionRecord) -> str | None:
        try:
            stmt = self.ring.open(record.provenance)
            check_statement(stmt, sha256=record.digest)
            ck = compile_key_of(stmt)
        except IntegrityError as exc:
            return exc.message
        if ck.digest() != record.key:
            return "the signed build parameters belong to another compile key"
        size = stmt["subject"][0].get("annotations", {}).get("size")
        warnings = _warnings(stmt)
        mismatched = [
            name for name, ok in (
                ("target", ck.target == record.target),
                ("flags", ck.flags == record.flags),
                ("rewrites", ck.rewrites == record.rewrites),
                ("compiler", (ck.compiler_version, ck.compiler_hash)
                 == (record.compiler.version, record.compiler.hash)),
                ("size", size == record.size),
                ("warnings", warnings == record.warnings),
            ) if not ok
        ]
        if mismatched:
            return f"the record's {', '.join(mismatched)} differ from what was signed"
        return None

    def envelope_for(self, provenance: str, digest: str) -> dict[str, Any] | None:
        """The envelope parsed, if it verifies and is about ``digest``; else None."""
        try:
            stmt = self.ring.open(provenance)
            check_statement(stmt, sha256=digest)
        except IntegrityError:
            return None
        return dict(json.loads(provenance))


def split_paths(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


def _envelope(envelope: Mapping[str, Any] | str | bytes) -> Envelope:
    try:
        # A deep copy: securesystemslib's from_dict consumes the dicts it is given.
        text = envelope if isinstance(envelope, str | bytes) else json.dumps(envelope)
        data = json.loads(text)
        if not isinstance(data, dict):
            raise TypeError("not an object")
        env = Envelope.from_dict(data)
        for sig in env.signatures.values():
            base64.b64decode(sig.signature, validate=True)
        return env
    except (ValueError, TypeError, KeyError, AttributeError, binascii.Error) as exc:
        raise IntegrityError(f"the provenance is not a DSSE envelope: {exc}") from exc


def _subject(stmt: Mapping[str, Any]) -> str:
    try:
        subj = stmt["subject"]
        if len(subj) != 1:
            raise ValueError("one subject expected")
        return str(subj[0]["digest"]["sha256"])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise IntegrityError(f"the statement's subject is malformed: {exc}") from exc


def _params(stmt: Mapping[str, Any], which: str) -> dict[str, Any]:
    try:
        value = stmt["predicate"]["buildDefinition"][which]
    except (KeyError, TypeError) as exc:
        raise IntegrityError(f"the provenance has no {which}") from exc
    if not isinstance(value, dict):
        raise IntegrityError(f"the provenance's {which} is not an object")
    return value


def _warnings(stmt: Mapping[str, Any]) -> tuple[str, ...]:
    for b in stmt["predicate"].get("runDetails", {}).get("byproducts") or []:
        if isinstance(b, dict) and b.get("name") == "warnings":
            return tuple(str(m) for m in b.get("annotations", {}).get("messages") or ())
    return ()


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat().replace("+00:00", "Z")
