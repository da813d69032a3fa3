"""The cache's blob kinds (cache/kinds.py): each guard on real blobs, and every kind stored by one
process and read by another through each tier (disk, Redis, S3 on Swift, disk + Redis, disk + S3
+ Redis); a blob of no known kind is not taken from the shared tier."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kiln.cache import open_cache
from kiln.cache.disk import DiskStorage
from kiln.cache.kinds import (
    EXECUTABLE,
    FRONT_END_PHASE,
    KERNEL,
    PARAMETER_ARCHIVE,
    is_known,
    kind_of,
    kinds,
)
from kiln.cache.redis import RedisStorage
from kiln.cache.s3 import S3Storage
from kiln.cache.store import Storage, blob_digest
from kiln.cache.types import ActionRecord, CompilerInfo
from tests.conftest_redis import RedisServer
from tests.server import REPO
from tests.swift import SwiftServer, running_swift

BUCKET = "kiln-kinds"
MLIR = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A real blob of each kind (a kernel framed as the kernel cache frames it), and two of none."""
    from iree.compiler import compile_str, ir
    from iree.compiler.api import Session
    from iree.runtime import ParameterIndex

    from kiln.compiler.kernels import pack_kernel

    vmfb = compile_str(MLIR, target_backends=["llvm-cpu"])
    index = ParameterIndex()
    index.add_buffer("w", b"\x01" * 4096)
    irpa = tmp_path_factory.mktemp("irpa") / "p.irpa"
    index.create_archive_file(str(irpa))
    session = Session()
    try:
        buf = io.BytesIO()
        ir.Module.parse(MLIR, context=session.context).operation.write_bytecode(buf)
        bytecode = buf.getvalue()
    finally:
        session.close()
    stub = ("hal.executable private @k0123456789abcdef01234567 {\n"
            "  hal.executable.variant public @vulkan_spirv_fb target(#hal.executable.target<"
            '"vulkan-spirv", "vulkan-spirv-fb">) objects([#hal.executable.object<{path = '
            '"kiln-kernel.bin"}>]) {\n  }\n}\n')
    spirv = b"\x03\x02\x23\x07" + os.urandom(2048)
    return {
        EXECUTABLE.name: bytes(vmfb),
        PARAMETER_ARCHIVE.name: irpa.read_bytes(),
        KERNEL.name: pack_kernel(stub, spirv, ".spv"),
        FRONT_END_PHASE.name: bytecode,
        "json": b'{"ext": ".spv", "format": 2}\n' + b"hal.executable private @k" + b"\0" * 64,
        "random": os.urandom(4096),
    }


KNOWN = (EXECUTABLE.name, PARAMETER_ARCHIVE.name, KERNEL.name, FRONT_END_PHASE.name)


# -- the guards -----------------------------------------------------------------------------------


def test_each_blob_is_of_its_own_kind_only(samples: dict[str, bytes]) -> None:
    assert [k.name for k in kinds()] == list(KNOWN)
    for name in KNOWN:
        accepted = [k.name for k in kinds() if k(samples[name])]
        assert accepted == [name], name
        assert kind_of(samples[name]) is not None and is_known(samples[name][:512])
    for name in ("json", "random"):
        assert kind_of(samples[name]) is None and not is_known(samples[name])


def test_text_mlir_truncated_and_empty_blobs_are_of_no_kind(samples: dict[str, bytes]) -> None:
    assert not is_known(MLIR.encode())  # a front-end phase is bytecode, never text
    assert not is_known(b"")
    for name in KNOWN:
        assert not is_known(samples[name][:3]), name
    kernel = samples[KERNEL.name]
    head, _, rest = kernel.partition(b"\n")
    meta = json.loads(head)
    assert not is_known(json.dumps({**meta, "extra": 1}).encode() + b"\n" + rest)
    assert not is_known(json.dumps({**meta, "ext": "../x"}).encode() + b"\n" + rest)
    assert not is_known(head + b"\n" + b"module {" + rest)


def test_the_clients_own_checks_agree_with_the_kinds(samples: dict[str, bytes]) -> None:
    from kiln.client.params import is_archive
    from kiln.client.runtime import is_executable

    for name, data in samples.items():
        assert is_executable(data[:512]) == (name == EXECUTABLE.name), name
        assert is_archive(data[:512]) == (name == PARAMETER_ARCHIVE.name), name


# -- one process stores, another reads, per tier --------------------------------------------------


def record_for(name: str, data: bytes, run: str) -> ActionRecord:
    return ActionRecord(
        key=hashlib.sha256(f"{run}-{name}".encode()).hexdigest(), digest=blob_digest(data),
        size=len(data), target="vulkan", flags=(), compiler=CompilerInfo("iree", "3.13.0",
                                                                          "sha256:" + "c" * 64),
        compile_seconds=0.1, created=time.time(),
    )


def open_tier(cfg: dict[str, Any]) -> Storage:
    """The storage of ``cfg["tier"]``: a backend alone, or a tiered cache guarded by the kinds."""
    tier = cfg["tier"]
    if tier == "disk":
        return DiskStorage(cfg["cache_dir"])
    if tier == "redis":
        return RedisStorage(cfg["redis_url"])
    if tier == "s3":
        return S3Storage(cfg["s3_url"], endpoint_url=cfg["endpoint"])
    cache = open_cache(cache_dir=cfg["cache_dir"], redis_url=cfg["redis_url"],
                       s3_url=cfg.get("s3_url"), s3_endpoint_url=cfg.get("endpoint"),
                       accept_blob=is_known)
    return cache.storage


# Stores each blob of the directory argv[2] (file name = kind) under its record, then exits.
WRITER = r"""
import json, sys
from pathlib import Path
from tests.test_cache_kinds import open_tier, record_for
cfg = json.loads(sys.argv[1])
store = open_tier(cfg)
for path in sorted(Path(sys.argv[2]).iterdir()):
    store.put(record_for(path.name, path.read_bytes(), cfg["run"]), path.read_bytes())
store.close()
print("stored", flush=True)
"""


def store_in_another_process(cfg: dict[str, Any], blobs: dict[str, bytes], tmp: Path) -> None:
    folder = tmp / f"blobs-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    for name, data in blobs.items():
        (folder / name).write_bytes(data)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                                    os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", WRITER, json.dumps(cfg), str(folder)], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "stored", out.stderr[-3000:]


@pytest.fixture(scope="module")
def swift(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SwiftServer]:
    with running_swift(tmp_path_factory.mktemp("swift"), BUCKET) as server:
        yield server


TIERS = ["disk", "redis", "s3", "disk+redis", "disk+s3+redis"]


@pytest.fixture(params=TIERS)
def tier(request: pytest.FixtureRequest, tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Where the writer stores (``cache_dir`` is the writer's own; the reader's is another)."""
    name: str = request.param
    cfg: dict[str, Any] = {"tier": name, "run": uuid.uuid4().hex, "cache_dir": str(tmp_path / "w")}
    if "redis" in name:
        cfg["redis_url"] = request.getfixturevalue("redis_server").url
    if "s3" in name:
        swift: SwiftServer = request.getfixturevalue("swift")
        for var, value in swift.env().items():
            monkeypatch.setenv(var, value)
        cfg["s3_url"] = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
        cfg["endpoint"] = swift.endpoint_url
    return cfg


@pytest.mark.redis
def test_every_kind_stored_by_one_process_is_read_by_another(
    tier: dict[str, Any], samples: dict[str, bytes], tmp_path: Path
) -> None:
    store_in_another_process(tier, samples, tmp_path)
    # The reader: the same tier; a tiered reader has its own disk and shares only the remote.
    shared_only = "+" in tier["tier"]
    reader = open_tier({**tier, "cache_dir": str(tmp_path / ("r" if shared_only else "w"))})
    try:
        for name, data in samples.items():
            found = reader.find(record_for(name, data, tier["run"]).key, load=True)
            if name in KNOWN or not shared_only:  # a backend alone stores any bytes
                assert found is not None and found.data == data, (tier["tier"], name)
                assert (kind_of(found.data).name if name in KNOWN else None) == (
                    name if name in KNOWN else None)
            else:  # a blob of no known kind is a miss through the shared tier
                assert found is None, (tier["tier"], name)
        if shared_only:  # what was read through the shared tier is on the reader's disk now
            disk = DiskStorage(tmp_path / "r")
            for name in KNOWN:
                assert disk.get_blob(blob_digest(samples[name])) == samples[name], name
    finally:
        reader.close()


@pytest.mark.redis
def test_a_foreign_blob_of_no_known_kind_in_redis_is_not_served(
    redis_server: RedisServer, samples: dict[str, bytes], tmp_path: Path
) -> None:
    """Bytes someone put straight into the shared tier under a valid record: a miss on a replica,
    and never copied to its disk."""
    rec = record_for("random", samples["random"], "foreign")
    RedisStorage(redis_server.url).put(rec, samples["random"])
    reader = open_tier({"tier": "disk+redis", "cache_dir": str(tmp_path / "r"),
                        "redis_url": redis_server.url})
    try:
        assert reader.find(rec.key, load=True) is None
        assert reader.get_blob(rec.digest) is None
        assert DiskStorage(tmp_path / "r").get_blob(rec.digest) is None
    finally:
        reader.close()
