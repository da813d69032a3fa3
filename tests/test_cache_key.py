"""The compile key: every input changes it, nothing else does (one test per field)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kiln.cache import KEY_VERSION, CompileKey

G1 = "sha256:" + "1" * 64
G2 = "sha256:" + "2" * 64
H1 = "sha256:" + "a" * 64
H2 = "sha256:" + "b" * 64


def base(**changes: object) -> CompileKey:
    fields: dict[str, object] = {
        "graph_digest": G1,
        "target": "cuda:sm_90",
        "options": {"opt_level": 3, "strip_debug": True},
        "flags": ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_90"),
        "compiler_version": "3.13.0",
        "compiler_hash": H1,
    }
    fields.update(changes)
    return CompileKey(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("graph_digest", G2),
        ("target", "cuda:sm_80"),
        ("options", {"opt_level": 2, "strip_debug": True}),
        ("flags", ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80")),
        ("compiler_version", "3.13.1"),
        ("compiler_hash", H2),
        ("key_version", KEY_VERSION + 1),
        ("rewrites", ("depthwise-nhwc",)),
    ],
)
def test_each_field_changes_the_key(field: str, value: object) -> None:
    a, b = base(), base(**{field: value})
    assert a.digest() != b.digest()
    assert a.diff(b) == [field]


def test_every_field_is_covered_by_the_parametrized_test() -> None:
    tested = {"graph_digest", "target", "options", "flags", "compiler_version", "compiler_hash",
              "key_version", "rewrites"}  # fmt: skip
    assert {f.name for f in dataclasses.fields(CompileKey)} == tested


def test_adding_an_option_changes_the_key() -> None:
    assert base().digest() != base(options={"opt_level": 3, "strip_debug": True, "x": 1}).digest()


def test_option_order_and_container_type_do_not_change_the_key() -> None:
    a = base(options={"opt_level": 3, "strip_debug": True, "features": ["+avx2", "+fma"]})
    b = base(options={"features": ("+avx2", "+fma"), "strip_debug": True, "opt_level": 3})
    c = base(options=(("strip_debug", True), ("features", ["+avx2", "+fma"]), ("opt_level", 3)))
    assert a.digest() == b.digest() == c.digest()
    assert hash(a) == hash(b)


def test_bare_hex_digests_are_normalized() -> None:
    assert base(graph_digest="1" * 64, compiler_hash="A" * 64).digest() == base().digest()


def test_digest_is_sha256_of_canonical_json_and_roundtrips() -> None:
    k = base()
    doc = k.to_json()
    assert k.canonical() == json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    assert CompileKey.from_json(json.loads(k.canonical())) == k
    assert len(k.digest()) == 64 and doc["key_version"] == KEY_VERSION


def test_debug_lines_explain_a_miss() -> None:
    a, b = base(), base(target="cuda:sm_80")
    la, lb = a.debug_lines(), b.debug_lines()
    assert la[0].startswith(f"key {a.digest()}")
    changed = [x for x, y in zip(la[1:], lb[1:], strict=True) if x != y]
    assert len(changed) == 1 and changed[0].strip().startswith("target:")
    assert all("[sha256 " in line for line in la[1:])


@pytest.mark.parametrize(
    "bad",
    [
        {"graph_digest": "md5:abc"},
        {"graph_digest": "sha256:../../etc/passwd"},
        {"flags": "--one-string"},
        {"options": {"nested": {"a": 1}}},
        {"options": {"nan": float("nan")}},
        {"target": ""},
    ],
)
def test_invalid_inputs_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises((ValueError, TypeError)):
        base(**bad)
