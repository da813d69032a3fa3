#!/usr/bin/env bash
# Static checks, run by scripts/test.sh before the suite (CI runs that): ruff on the whole tree,
# mypy --strict on the packages of the house layout (kiln/compiler, kiln/client, kiln/cli,
# kiln/cluster, kiln/torch and kiln's own modules). Any finding fails.
#
# mypy needs the installed layout (the folders install as kiln.<folder>, pyproject.toml), so it
# runs on a tree of links that mirrors it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${KILN_VENV:-.venv}"

"$VENV/bin/ruff" check . || { echo "lint: ruff findings (ruff check --fix . fixes most)" >&2; exit 1; }

tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/kiln"
for entry in kiln/*; do
  [ "$(basename "$entry")" = "__pycache__" ] || ln -s "$PWD/$entry" "$tree/kiln/"
done
for pkg in dialects lowering targets cache service; do
  ln -s "$PWD/$pkg" "$tree/kiln/$pkg"
done
strict=()
for path in kiln/compiler kiln/client kiln/cli kiln/cluster kiln/torch kiln/errors.py kiln/files.py \
            kiln/provenance.py kiln/__init__.py; do
  [ -e "$path" ] && strict+=("$path")
done
(cd "$tree" && "$OLDPWD/$VENV/bin/mypy" --config-file "$OLDPWD/pyproject.toml" --strict \
  --follow-imports=silent --cache-dir "$OLDPWD/.mypy_cache" "${strict[@]}")
