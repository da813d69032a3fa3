"""Fleet-wide tuning records: ``POST /v1/tuning`` and ``GET /v1/tuning/{graph_hex}``.

A client that autotuned a graph (kiln/client/autotune.py) posts what it measured: the graph
digest, the normalized target, its runtime version, the preset it chose and each preset's median
time with its sample count, and what it ran on. The server keeps the records per (graph, target,
runtime), signed, in the cache's shared store, and answers the evidence and the current choice,
so the next client on the same graph and target uses the choice without tuning
(kiln/client/tuning.py).

Who may post: a client with a bearer token when the server has tokens (the middleware refuses
the others, 401); a server without tokens refuses every record (``TuningForbidden``, 403)
unless ``KILN_TUNING_ACCEPT=any``, because one anonymous record would steer every later client.
The server's own records (its idle tuning, service/idle_tuning.py) skip that admission
(``submit(..., trusted=True)``) and meet every other rule below.

What is refused. ``TuningRejected`` (422, ``detail.reason``): a chosen preset that is not the
fastest of its own times (``not_fastest``), a preset that is not allow-listed or a record without
the ``default`` preset's time (``preset``), fewer than ``MIN_SAMPLES`` samples (``samples``), a
time outside [``MIN_MS``, ``MAX_MS``] or not finite (``times``), a preset more than
``MAX_SPEEDUP`` times faster or slower than ``default`` (``implausible``). The HTTP route checks
the time bounds first, in the request model (400 ``invalid_request``). ``TuningOutlier`` (409):
a record whose speedup (default's time / the chosen preset's) is more than ``OUTLIER_FACTOR``
away, either way, from the median of the trusted submitters of its device class when there are
any; else from most (a strict majority) of the other submitters of its device class, once there
are ``MIN_PEERS`` of them. Each submitter is one vote, the median of its own records, and the
poster's own records are never its peers: one token cannot vouch for itself, outvote the others
by volume, or make honest records outliers with forged ones. Trusted records (below) are not
judged as outliers.

Device class: the device kind (cpu, gpu) and the normalized target, which names the CPU's
architecture and model or the GPU's vendor and architecture. The free-text device name is kept
as information only: renaming a device changes nothing.

Who decides the choice. Each submitter is one vote per preset: the median of its own records'
ratios (default's time / the preset's). A preset's ``median_speedup`` is the median of those
votes. A preset other than ``default`` can be the choice only when its median is above 1 and
either at least ``quorum`` submitters found it faster than ``default`` or a trusted submitter
did; among those, the highest median wins (more agreeing submitters, then the allow-list's
order break ties). When none qualifies, the choice is ``default`` once ``quorum`` submitters
(or a trusted one) reported, else there is no choice (null): one client's word alone steers no
one, and the next client tunes for itself and adds its own record. Trusted submitters are the
server's own records (``submit(..., trusted=True)``, its idle tuning) and the tokens the operator
names (``KILN_TUNING_TRUSTED_TOKENS``); a record says so in its signed ``trusted`` field.

Every number served is finite: the bounds above hold for every record kept, and a stored record
that breaks them is dropped on read like a forged one.

Storage (cluster-wide when Redis is configured): each record is its own DSSE envelope over an
in-toto statement (predicate ``TUNING_PREDICATE_TYPE``, ``kind: "report"``) signed by the
server's ``Authority``, in a Redis hash ``kiln:v1:tuning:<key>`` (record id → envelope), else in
``DIR/v1/tuning/<key[:2]>/<key>.json`` of the disk cache (``{"reports": {id: envelope}}``,
rewritten atomically under a lock file). ``key`` is the sha256 of the canonical JSON of
(graph, target, runtime). A stored record whose signature does not verify with a trusted key, or
that names another key or id, is removed on read and counted (``forged``). Record ids start with
the arrival time, so the oldest are dropped first past ``max_reports``; one submitter (token,
else address, hashed) keeps at most a quarter of them. The evidence a GET answers is signed as a
whole (``kind: "evidence"``), so a client with trusted keys can refuse a forged choice.

Failure semantics: store errors propagate (Redis down: ``CacheUnavailable``, 503); every call is
blocking (file system, Redis): run it in a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from kiln.errors import IntegrityError, TuningForbidden, TuningOutlier, TuningRejected
from kiln.files import atomic_write
from kiln.provenance import STATEMENT_TYPE, TUNING_PREDICATE_TYPE, Authority
from kiln.targets import parse_target
from kiln.targets.presets import PRESETS

__all__ = [
    "MAX_MS",
    "MAX_SPEEDUP",
    "MIN_MS",
    "MIN_PEERS",
    "MIN_SAMPLES",
    "OUTLIER_FACTOR",
    "QUORUM",
    "DiskTuningStore",
    "RedisTuningStore",
    "TuningService",
    "token_submitter",
    "tuning_key",
]

log = logging.getLogger("kiln.service.tuning")

MIN_SAMPLES = 3
#: Other submitters a record is judged against (when no trusted one reported).
MIN_PEERS = 2
OUTLIER_FACTOR = 2.0
#: Bounds of a median time, milliseconds: 100 ns to an hour.
MIN_MS = 1e-4
MAX_MS = 3.6e6
#: The most one preset may be faster (or slower) than ``default`` in one record.
MAX_SPEEDUP = 10.0
#: Default number of independent submitters whose agreement makes a choice.
QUORUM = 2
KEY_VERSION = 1


def tuning_key(graph_hex: str, target: str, runtime: str) -> str:
    """Hex sha256 of the canonical JSON of what a choice is for."""
    doc = {"v": KEY_VERSION, "graph": graph_hex, "target": target, "runtime": runtime}
    return hashlib.sha256(
        json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def token_submitter(token: str) -> str:
    """The submitter a bearer token posts as: ``token:`` and the first 16 hex digits of its
    sha256, as the routes name a client (never the token in clear)."""
    return "token:" + hashlib.sha256(token.strip().encode()).hexdigest()[:16]


class TuningStore(Protocol):
    """Signed records per key: record id → envelope (JSON text)."""

    def reports(self, key: str) -> dict[str, str]: ...
    def add(self, key: str, rid: str, envelope: str) -> None: ...
    def remove(self, key: str, rids: list[str]) -> None: ...


class DiskTuningStore:
    """One JSON document per key under the disk cache, rewritten atomically under a lock file
    (several processes may share the directory)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.dir = Path(root) / "v1" / "tuning"

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def reports(self, key: str) -> dict[str, str]:
        try:
            doc = json.loads(self._path(key).read_bytes())
            reports = doc["reports"]
            return {str(k): str(v) for k, v in reports.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write(self, key: str, reports: Mapping[str, str]) -> None:
        atomic_write(self._path(key), json.dumps({"reports": dict(reports)},
                                                 sort_keys=True).encode(), durable=True)

    def add(self, key: str, rid: str, envelope: str) -> None:
        with self._locked(key):
            reports = self.reports(key)
            reports[rid] = envelope
            self._write(key, reports)

    def remove(self, key: str, rids: list[str]) -> None:
        if not rids:
            return
        with self._locked(key):
            reports = self.reports(key)
            for rid in rids:
                reports.pop(rid, None)
            self._write(key, reports)


class RedisTuningStore:
    """A Redis hash per key (``<prefix>tuning:<key>``) on the cache's Redis connection; every
    call goes through ``RedisStorage.call`` (failures become ``CacheUnavailable``)."""

    def __init__(self, redis: Any) -> None:
        self.redis = redis

    def _k(self, key: str) -> str:
        return f"{self.redis.prefix}tuning:{key}"

    def reports(self, key: str) -> dict[str, str]:
        raw = self.redis.call(self.redis.client.hgetall, self._k(key))
        return {_text(k): _text(v) for k, v in raw.items()}

    def add(self, key: str, rid: str, envelope: str) -> None:
        self.redis.call(self.redis.client.hset, self._k(key), rid, envelope)

    def remove(self, key: str, rids: list[str]) -> None:
        if rids:
            self.redis.call(self.redis.client.hdel, self._k(key), *rids)


def _text(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else v


class TuningService:
    """The rules of the module docstring over a ``TuningStore``. ``hook(event)`` is called with
    ``accepted``, ``rejected``, ``asked`` (a GET answered), ``served`` (that answer held a
    choice) or ``forged``."""

    def __init__(
        self,
        store: TuningStore,
        authority: Authority,
        *,
        auth_enabled: bool,
        accept_any: bool = False,
        max_reports: int = 32,
        quorum: int = QUORUM,
        trusted_submitters: frozenset[str] = frozenset(),
        hook: Callable[[str], None] | None = None,
        normalize: Callable[[str], str] | None = None,
    ) -> None:
        self.store = store
        self.authority = authority
        self.auth_enabled = auth_enabled
        self.accept_any = accept_any
        self.max_reports = max_reports
        self.quorum = quorum
        self.trusted_submitters = trusted_submitters
        self.hook = hook
        self._normalize = normalize or (lambda t: parse_target(t).target)

    # -- POST ------------------------------------------------------------------------------------

    def submit(self, record: Mapping[str, Any], *, runtime: str, submitter: str,
               trusted: bool = False) -> dict[str, Any]:
        """Check, sign and keep one record; the accepted record and the evidence after it.
        Raises ``TuningForbidden``, ``TuningRejected``, ``TuningOutlier``, ``UnsupportedTarget``
        (all counted as ``rejected``). ``trusted``: the server's own record (its idle tuning,
        service/idle_tuning.py): no ``admit``, no outlier check, every other check; a
        submitter among ``trusted_submitters`` is trusted too."""
        try:
            accepted = self._submit(record, runtime=runtime, submitter=submitter,
                                    trusted=trusted)
        except Exception:  # counted, then raised unchanged
            self._emit("rejected")
            raise
        self._emit("accepted")
        return accepted

    def admit(self) -> None:
        """``TuningForbidden`` when this server takes no records from its clients (see the
        module docstring); before anything is read."""
        if not self.auth_enabled and not self.accept_any:
            raise TuningForbidden(
                "this server accepts tuning records only from authenticated clients, and it has "
                "no tokens configured (KILN_TOKENS): every record would be anonymous. Configure "
                "tokens, or set KILN_TUNING_ACCEPT=any to accept records from anyone",
                detail={"setting": "KILN_TUNING_ACCEPT", "value": "authenticated"},
            )

    def _submit(self, record: Mapping[str, Any], *, runtime: str, submitter: str,
                trusted: bool) -> dict[str, Any]:
        if not trusted:
            self.admit()
        graph_hex = str(record["graph_digest"]).removeprefix("sha256:")
        target = self._normalize(str(record["target"]))
        times = {str(p): {"median_ms": float(t["median_ms"]), "samples": int(t["samples"])}
                 for p, t in dict(record["times"]).items()}
        preset = str(record["preset"])
        speedup = _sanity(preset, times)
        device = {k: str(v) for k, v in dict(record["device"]).items()}
        device_class = f"{device.get('kind', '')}:{target}"
        trusted = trusted or submitter in self.trusted_submitters
        key = tuning_key(graph_hex, target, runtime)
        kept = self._verified(key)
        if not trusted:
            self._judge(kept, device_class=device_class, submitter=submitter, speedup=speedup,
                        preset=preset)
        now = time.time()
        body = json.dumps([graph_hex, target, runtime, preset, times, device, submitter],
                          sort_keys=True).encode()
        rid = f"{time.time_ns():020d}-{hashlib.sha256(body).hexdigest()[:16]}"
        out = {
            "id": rid, "graph_digest": f"sha256:{graph_hex}", "target": target,
            "runtime": runtime, "preset": preset, "times": times, "device": device,
            "device_class": device_class, "speedup": speedup, "received": now,
            "submitter": submitter, "trusted": trusted,
        }
        envelope = self._sign(graph_hex, {"kind": "report", "key": key, **out})
        self.store.add(key, rid, envelope)
        kept[rid] = out
        self._bound(key, kept, submitter)
        return {"id": rid, "speedup": speedup, "evidence": self._evidence(graph_hex, target,
                                                                          runtime, kept)}

    def _judge(self, kept: Mapping[str, dict[str, Any]], *, device_class: str, submitter: str,
                speedup: float, preset: str) -> None:
        """``TuningOutlier`` when ``speedup`` strays from its device class (module docstring):
        more than ``OUTLIER_FACTOR`` from the trusted submitters' median when there are any,
        else from most (a strict majority) of at least ``MIN_PEERS`` other submitters' votes."""
        same = [r for r in kept.values()
                if r["device_class"] == device_class and r["submitter"] != submitter]
        trusted = [r for r in same if r.get("trusted")]
        votes = _votes(trusted or same, lambda r: float(r["speedup"]))
        if not votes or (not trusted and len(votes) < MIN_PEERS):
            return

        def off(v: float) -> float:
            return max(speedup / v, v / speedup)

        med = statistics.median(votes.values())
        apart = sum(1 for v in votes.values() if off(v) > OUTLIER_FACTOR)
        refused = off(med) > OUTLIER_FACTOR if trusted else 2 * apart > len(votes)
        if refused:
            whose = "trusted submitters" if trusted else "other submitters"
            raise TuningOutlier(
                f"this record's speedup ({speedup:.3g}x for {preset}) is more than "
                f"{OUTLIER_FACTOR:g}x away from {'the median' if trusted else 'most'} of "
                f"{len(votes)} {whose} on the same device class (median {med:.3g}x)",
                detail={"reason": "outlier", "speedup": speedup, "median": med,
                        "peers": len(votes), "apart": apart, "trusted": bool(trusted),
                        "device_class": device_class},
            )

    def _bound(self, key: str, kept: dict[str, dict[str, Any]], submitter: str) -> None:
        """Drop the oldest records past ``max_reports``, and the submitter's own oldest past a
        quarter of it."""
        mine = sorted(r for r, rec in kept.items() if rec["submitter"] == submitter)
        drop = mine[: max(0, len(mine) - max(1, self.max_reports // 4))]
        rest = sorted(r for r in kept if r not in drop)
        drop += rest[: max(0, len(rest) - self.max_reports)]
        if drop:
            self.store.remove(key, drop)
            for rid in drop:
                kept.pop(rid, None)

    # -- GET -------------------------------------------------------------------------------------

    def evidence(self, graph_hex: str, target: str, runtime: str) -> dict[str, Any]:
        """The accepted records for (graph, target, runtime), the per-preset medians and the
        choice, with a signed envelope over all of it (None when there are no records)."""
        target = self._normalize(target)
        kept = self._verified(tuning_key(graph_hex, target, runtime))
        out = self._evidence(graph_hex, target, runtime, kept)
        self._emit("asked")
        if out["choice"] is not None:
            self._emit("served")
        return out

    def has_records(self, graph_hex: str, target: str, runtime: str) -> bool:
        """Whether any verified record is kept for (graph, target, runtime); counts nothing
        but forged records."""
        return bool(self._verified(tuning_key(graph_hex, self._normalize(target), runtime)))

    def _evidence(self, graph_hex: str, target: str, runtime: str,
                  kept: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
        records = [kept[r] for r in sorted(kept)]
        # preset -> submitter -> that submitter's median ratio (default's time / the preset's)
        votes: dict[str, dict[str, float]] = {}
        for p in PRESETS:
            timed = [r for r in records if p in r["times"]]
            if timed:
                votes[p] = _votes(timed, lambda r, p=p: r["times"]["default"]["median_ms"]
                                  / r["times"][p]["median_ms"])
        trusted = {r["submitter"] for r in records if r.get("trusted")}
        medians = {p: round(statistics.median(v.values()), 4) for p, v in votes.items()}
        agree = {p: sum(1 for x in v.values() if x > 1.0) for p, v in votes.items()}
        reports = {p: sum(1 for r in records if p in r["times"]) for p in votes}
        presets = [{"preset": p, "median_speedup": medians[p], "reports": reports[p],
                    "reporters": len(votes[p])} for p in votes]

        def qualifies(p: str) -> bool:
            return p != "default" and medians[p] > 1.0 and (
                agree[p] >= self.quorum
                or any(votes[p].get(t, 0.0) > 1.0 for t in trusted))

        best = max(filter(qualifies, votes), default=None,
                   key=lambda p: (medians[p], agree[p], -PRESETS.index(p)))
        reporters = len({r["submitter"] for r in records})
        if best is None and (reporters >= self.quorum or trusted):
            best = "default"
        choice = None
        if best is not None:
            choice = {"preset": best, "median_speedup": medians[best],
                      "reports": reports[best], "reporters": len(votes[best]),
                      "options": {} if best == "default" else {"preset": best}}
        doc: dict[str, Any] = {
            "graph_digest": f"sha256:{graph_hex}", "target": target, "runtime": runtime,
            "choice": choice, "quorum": self.quorum, "presets": presets,
            "records": records,
        }
        doc["provenance"] = (
            json.loads(self._sign(graph_hex, {"kind": "evidence", **doc}))
            if choice is not None and self.authority.signer is not None else None
        )
        return doc

    # -- signing ---------------------------------------------------------------------------------

    def _sign(self, graph_hex: str, predicate: Mapping[str, Any]) -> str:
        if self.authority.signer is None:
            return ""
        env = self.authority.signer.sign({
            "_type": STATEMENT_TYPE,
            "subject": [{"name": "graph.mlir (canonical form)",
                         "digest": {"sha256": graph_hex}}],
            "predicateType": TUNING_PREDICATE_TYPE,
            "predicate": dict(predicate),
        })
        return json.dumps(env, sort_keys=True, separators=(",", ":"))

    def _verified(self, key: str) -> dict[str, dict[str, Any]]:
        """The stored records of ``key`` whose signatures verify (the others are removed)."""
        kept: dict[str, dict[str, Any]] = {}
        forged: list[str] = []
        for rid, envelope in self.store.reports(key).items():
            try:
                stmt = self.authority.ring.open(envelope, predicate_type=TUNING_PREDICATE_TYPE)
                pred = dict(stmt["predicate"])
                if pred.get("kind") != "report" or pred.get("key") != key or pred.get("id") != rid:
                    raise IntegrityError("a signed record of another key or id")
                pred.pop("kind")
                pred.pop("key")
                _sanity(pred["preset"], pred["times"])
                kept[rid] = pred
            except (IntegrityError, TuningRejected, KeyError, TypeError, ValueError) as exc:
                log.warning("tuning record %s of %s refused: %s", rid[:64], key, exc)
                forged.append(rid)
                self._emit("forged")
        if forged:
            self.store.remove(key, forged)
        return kept

    def _emit(self, event: str) -> None:
        if self.hook is not None:
            self.hook(event)


def _votes(records: list[dict[str, Any]],
           value: Callable[[dict[str, Any]], float]) -> dict[str, float]:
    """Submitter -> the median of ``value`` over its records: one vote each."""
    per: dict[str, list[float]] = {}
    for r in records:
        per.setdefault(r["submitter"], []).append(float(value(r)))
    return {sub: statistics.median(v) for sub, v in per.items()}


def _sanity(preset: str, times: Mapping[str, Mapping[str, Any]]) -> float:
    """The record's speedup (default's time / the chosen preset's), or ``TuningRejected``."""
    unknown = sorted({preset, *times} - set(PRESETS))
    if unknown or "default" not in times or preset not in times:
        raise TuningRejected(
            f"a tuning record names allow-listed presets only, with the default preset's time "
            f"and the chosen one's; unknown: {unknown}, timed: {sorted(times)}",
            detail={"reason": "preset", "allowed": list(PRESETS), "unknown": unknown},
        )
    for p, t in times.items():
        ms, n = t["median_ms"], t["samples"]
        if not (isinstance(ms, int | float) and math.isfinite(ms) and MIN_MS <= ms <= MAX_MS):
            raise TuningRejected(
                f"the time of {p} must be finite, from {MIN_MS:g} to {MAX_MS:g} ms, not {ms!r}",
                detail={"reason": "times", "preset": p, "min_ms": MIN_MS, "max_ms": MAX_MS})
        if not isinstance(n, int) or n < MIN_SAMPLES:
            raise TuningRejected(
                f"{p} was timed {n} times; at least {MIN_SAMPLES} samples per preset",
                detail={"reason": "samples", "preset": p, "min_samples": MIN_SAMPLES})
    base = float(times["default"]["median_ms"])
    for p, t in times.items():
        ratio = base / float(t["median_ms"])
        if not 1 / MAX_SPEEDUP <= ratio <= MAX_SPEEDUP:
            raise TuningRejected(
                f"{p} is {ratio:.3g}x the speed of default in this record; a preset more than "
                f"{MAX_SPEEDUP:g}x faster or slower than default is not plausible",
                detail={"reason": "implausible", "preset": p, "max_speedup": MAX_SPEEDUP})
    fastest = min(t["median_ms"] for t in times.values())
    if times[preset]["median_ms"] > fastest:
        raise TuningRejected(
            f"the chosen preset {preset} is not the fastest of the record's own times",
            detail={"reason": "not_fastest", "preset": preset,
                    "fastest": min(times, key=lambda p: times[p]["median_ms"])},
        )
    return base / float(times[preset]["median_ms"])
