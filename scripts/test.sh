#!/usr/bin/env bash
# The test command (CI runs exactly this): bootstrap what is missing, the static checks (ruff,
# mypy), the whole suite, then, when the whole suite was asked for, the defaults guard.
#
# The guard (bench/guard.py, issue 16) is a benchmark CI runs and reports, not part of the
# suite: Kiln's default against IREE's defaults and every allow-listed preset on a CNN, a
# depthwise CNN and a transformer, for AVX2 and this machine's CPU (about 3-4 minutes on 2
# cores). It prints its table and fails only on a wrong answer or a cliff (1.5x the baseline,
# 2x the fastest preset, beyond the noise it measures). KILN_GUARD=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/lint.sh
.venv/bin/python -m pytest -q --durations=15 "$@"
if [ $# -eq 0 ] && [ "${KILN_GUARD:-1}" != 0 ]; then
    echo "bench/guard.py (Kiln's default against baseline and the fastest preset):"
    .venv/bin/python bench/guard.py --repeats 5
fi
