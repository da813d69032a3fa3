"""``kiln cache stats | verify | gc [--max-size SIZE]``.

Exit status: 0 on success; ``verify`` exits 1 when it found (and removed) corrupt entries — blobs
whose bytes do not match their digest or unreadable records — so a cron job notices a failing disk.
Dangling records (a record whose blob is gone, which Redis ``maxmemory`` eviction makes routine)
are removed and reported but do not fail the run. 2: usage error (a bad ``--max-size``).
A backend that cannot be reached prints ``cache_unavailable: ...`` on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, TextIO

from kiln.errors import CacheUnavailable
from kiln.sizes import parse_size as _parse_size

__all__ = ["add_parser", "format_size", "parse_size", "run"]

def parse_size(text: str) -> int:
    """``500M``, ``1.5G``, ``64KiB``, ``10kb``, ``4096`` → bytes (``kiln.sizes``)."""
    try:
        return _parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def format_size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``kiln cache`` with its subcommands; the shared options go before or after the subcommand
    (``kiln cache --cache-dir D stats`` and ``kiln cache stats --cache-dir D`` both work)."""
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument(
        "--cache-dir",
        default=argparse.SUPPRESS,
        help="cache directory (default: KILN_CACHE_DIR, else ~/.cache/kiln)",
    )
    common.add_argument(
        "--redis-url",
        default=argparse.SUPPRESS,
        help="also inspect this shared Redis cache (default: KILN_REDIS_URL)",
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the result as JSON"
    )
    p: argparse.ArgumentParser = subparsers.add_parser(
        "cache", allow_abbrev=False, parents=[common], help="inspect, check and trim the artifact cache"
    )
    sub = p.add_subparsers(dest="cache_command", required=True)
    sub.add_parser("stats", parents=[common], help="entries and bytes per backend")
    sub.add_parser(
        "verify", parents=[common], help="re-hash every blob; remove corrupt and dangling entries"
    )
    gc = sub.add_parser(
        "gc", parents=[common], help="evict least recently used entries (pinned ones are kept)"
    )
    gc.add_argument(
        "--max-size",
        type=parse_size,
        default=None,
        metavar="SIZE",
        help="bound for the disk cache, e.g. 500M or 20G (default: KILN_CACHE_MAX_BYTES)",
    )
    return p


def run(args: argparse.Namespace, *, stdout: TextIO, stderr: TextIO) -> int:
    from kiln.cache import open_cache
    from kiln.cache.kinds import is_known

    # The shared options default to "absent" (so a subcommand's copy cannot clobber the other).
    args.cache_dir = getattr(args, "cache_dir", None)
    args.redis_url = getattr(args, "redis_url", None) or os.environ.get("KILN_REDIS_URL")
    args.json = getattr(args, "json", False)
    # A one-shot command: no catch-up timer (close copies what an outage left noted).
    cache = open_cache(cache_dir=args.cache_dir, redis_url=args.redis_url, accept_blob=is_known)
    try:
        if args.cache_command == "stats":
            return _stats(cache, args, stdout)
        if args.cache_command == "verify":
            return _verify(cache, args, stdout)
        return _gc(cache, args, stdout, stderr)
    except CacheUnavailable as exc:
        print(f"kiln: {exc.code}: {exc.message}", file=stderr)
        return 1
    finally:
        cache.close()


def _stats(cache: Any, args: argparse.Namespace, out: TextIO) -> int:
    st = cache.stats()
    if args.json:
        print(json.dumps(st.to_json(), indent=2), file=out)
        return 0
    print(
        f"{'backend':8} {'records':>8} {'blobs':>8} {'size':>11} {'pinned':>6}  location", file=out
    )
    for b in st.backends:
        if b is None:
            print(f"{'redis':8} {'unreachable':>37}", file=out)
            continue
        bound = f" (max {format_size(b.max_size)})" if b.max_size else ""
        print(
            f"{b.backend:8} {b.records:8d} {b.blobs:8d} {format_size(b.bytes):>11} "
            f"{b.pinned:6d}  {b.location}{bound}",
            file=out,
        )
    return 0


def _verify(cache: Any, args: argparse.Namespace, out: TextIO) -> int:
    rep = cache.verify()
    if args.json:
        print(json.dumps(rep.to_json(), indent=2), file=out)
    else:
        print(
            f"ok: {rep.ok_records} records, {rep.ok_blobs} blobs; corrupt: {rep.corrupt}; "
            f"dangling: {rep.dangling}",
            file=out,
        )
        for path in rep.removed:
            print(f"removed {path}", file=out)
    return 1 if rep.corrupt else 0


def _gc(cache: Any, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    bound = args.max_size
    # One name for the bound: the daemon's KILN_CACHE_MAX_BYTES (a size such as 20G or bytes).
    # KILN_CACHE_MAX_SIZE, its old name here, still works and says so.
    for var in ("KILN_CACHE_MAX_BYTES", "KILN_CACHE_MAX_SIZE"):
        if bound is not None or not os.environ.get(var):
            continue
        if var == "KILN_CACHE_MAX_SIZE":
            print("kiln: KILN_CACHE_MAX_SIZE is the old name of KILN_CACHE_MAX_BYTES", file=err)
        try:
            bound = parse_size(os.environ[var])
        except argparse.ArgumentTypeError as exc:
            print(f"kiln cache: bad setting {var}={os.environ[var][:64]!r}: {exc}", file=err)
            return 2
    rep = cache.gc(bound)
    swept = 0
    if cache.disk is not None:  # the temporary directories of daemons that died (SIGKILL)
        from kiln.compiler.workers import sweep_stale_temps

        swept = sweep_stale_temps(cache.disk.root / "tmp")
    if args.json:
        print(json.dumps(rep.to_json(), indent=2), file=out)
        return 0
    print(
        f"{format_size(rep.size_before)} -> {format_size(rep.size_after)}: removed "
        f"{rep.removed_records} records, {rep.removed_blobs} blobs"
        + (f"; pinned {format_size(rep.pinned_bytes)}" if rep.pinned_bytes else "")
        + (f"; {swept} stale worker temp directories" if swept else ""),
        file=out,
    )
    if bound is not None and rep.size_after > bound:
        print("kiln: pinned entries alone exceed --max-size; they were kept", file=err)
    return 0
