#!/usr/bin/env bash
# Refresh the locks in requirements/: the exact version and hashes of every package that
# scripts/bootstrap.sh installs, one file per extra set it installs (requirements/<extras>.txt,
# the commas written as '-'). pyproject.toml keeps the compatible ranges; this resolves them anew
# (the newest versions they allow) with uv, pinned here. The upgrade path is this script, then
# scripts/test.sh (and CI) on the new locks; commit the locks with what they needed.
#
# torch comes from its CPU build (torch==2.13.0+cpu, PyTorch's CPU wheel index or a local copy:
# KILN_LOCK_FIND_LINKS, default /opt/wheels where it exists); PyPI's torch is a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
SETS=("server" "server,test,bench")

tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools/venv"
"$tools/venv/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION" 2>/dev/null
links=()
find_links="${KILN_LOCK_FIND_LINKS:-/opt/wheels}"
[ -d "$find_links" ] && links=(--find-links "$find_links")
for extras in "${SETS[@]}"; do
  args=()
  IFS=, read -ra names <<<"$extras"
  for name in "${names[@]}"; do args+=(--extra "$name"); done
  out="requirements/${extras//,/-}.txt"
  "$tools/venv/bin/uv" pip compile -q pyproject.toml requirements/tools.in "${args[@]}" \
    "${links[@]}" --generate-hashes --python-version 3.11 --custom-compile-command scripts/lock.sh \
    -o "$out"
  echo "lock: $out ($(grep -c '^[A-Za-z0-9].*==' "$out") packages)" >&2
done
