#!/usr/bin/env bash
# The test command (CI runs exactly this): bootstrap what is missing, the static checks (ruff,
# mypy), then, with no arguments, three stages, each timed:
#   1. the default suite (pytest, every test not marked bench);
#   2. the fault, fairness and load suites (the tests marked bench: a worker killed mid-compile,
#      a dead replica, a Redis outage under load, overload, remembered timeouts, fairness);
#   3. the defaults guard (bench/guard.py): Kiln's default against IREE's defaults and every
#      allow-listed preset on a CNN, a depthwise CNN and a transformer, for AVX2 and this
#      machine's CPU. It prints its table and fails only on a wrong answer or a cliff (1.5x the
#      baseline, 2x the fastest preset, beyond the noise it measures). KILN_GUARD=0 skips it.
# With arguments, they go to pytest alone (`scripts/test.sh tests/test_cli.py`, `-m bench`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/lint.sh
if [ $# -gt 0 ]; then
    exec .venv/bin/python -m pytest -q --durations=15 "$@"
fi

stage() {  # stage NAME COMMAND...: run it, then say how long it took
    local name="$1" start=$SECONDS
    shift
    echo "== stage: $name"
    "$@"
    echo "== stage: $name passed in $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
}
stage "default suite" .venv/bin/python -m pytest -q --durations=15
# tests/test_guard.py is the guard of stage 3 inside pytest: not run twice.
stage "fault, fairness and load suites (-m bench)" \
    .venv/bin/python -m pytest -q --durations=10 -m bench --ignore=tests/test_guard.py
if [ "${KILN_GUARD:-1}" != 0 ]; then
    stage "defaults guard (bench/guard.py)" .venv/bin/python bench/guard.py --repeats 5
fi
