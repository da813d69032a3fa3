#!/usr/bin/env bash
# The test command: bootstrap what is missing, the static checks (ruff, mypy), then the whole
# suite (CI runs exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/lint.sh
exec .venv/bin/python -m pytest -q "$@"
