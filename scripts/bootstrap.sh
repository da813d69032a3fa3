#!/usr/bin/env bash
# Set up a fresh machine for Kiln, and nothing more:
#   1. Debian packages the tests use (Vulkan loader + Mesa lavapipe, redis-server, nginx-light
#      for the nginx-front test, and — with the test extra — OpenStack Swift with memcached: the
#      S3 store tests/swift.py starts, and Chromium: the status page's headless screenshot test),
#      installed with apt-get only when missing;
#   2. a virtual environment (.venv, or $KILN_VENV) with Kiln and exactly the versions locked in
#      requirements/<extras>.txt (scripts/lock.sh writes them from pyproject.toml's ranges).
# Used by the README, scripts/test.sh and the Dockerfile (KILN_BOOTSTRAP_APT=0 skips step 1 when
# the image installs the packages itself). Idempotent: a second run changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${KILN_VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
# The suite needs the server, its test tools and the bench extra (torch for kiln.torch and the zoo).
EXTRAS="${KILN_EXTRAS:-server,test,bench}"

if [ "${KILN_BOOTSTRAP_APT:-1}" = "1" ]; then
  missing=()
  for pkg in mesa-vulkan-drivers libvulkan1 redis-server nginx-light; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  # For the tests only, so not in the daemon image: Swift (with its s3api) and memcached, and
  # Chromium (tests/test_status_page.py screenshots the status page headless).
  if [[ ",$EXTRAS," == *,test,* ]]; then
    for test_pkg in swift swift-proxy swift-account swift-container swift-object memcached \
                    chromium; do
      dpkg-query -W -f='${Status}' "$test_pkg" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$test_pkg")
    done
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" = "0" ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q >/dev/null || true
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "bootstrap: Kiln needs Python >= 3.11 ($PYTHON is $("$PYTHON" -V 2>&1))" >&2
  exit 1
fi
lock="requirements/${EXTRAS//,/-}.txt"
if [ ! -f "$lock" ]; then
  echo "bootstrap: no lock for the extras '$EXTRAS' ($lock): add the set to scripts/lock.sh" >&2
  exit 1
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
stamp="$VENV/.kiln-installed"
# The exact versions and hashes of the lock (scripts/lock.sh refreshes it), nothing resolved
# here; then Kiln itself, editable, built by the locked setuptools without build isolation.
if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ] \
   || [ "$(cat "$stamp")" != "$lock" ]; then
  pip=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
  # (pip's notes about configured local indexes that lack a package are dropped.)
  quiet() { "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2); }
  quiet "${pip[@]}" --require-hashes --no-deps -r "$lock"
  quiet "${pip[@]}" --no-deps --no-build-isolation -e .
  "$VENV/bin/python" -m pip check >/dev/null \
    || { "$VENV/bin/python" -m pip check >&2; echo "bootstrap: $lock is inconsistent" >&2; exit 1; }
  echo "$lock" > "$stamp"
fi
echo "bootstrap: ready ($VENV/bin/kiln)" >&2
