#!/usr/bin/env bash
# The test command: bootstrap what is missing, then run the whole suite (CI runs exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec .venv/bin/python -m pytest -q "$@"
