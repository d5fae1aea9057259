#!/usr/bin/env bash
# Makes a pinned venv under this directory and runs convert.py.
# Usage: convert.sh [OUT_DIR]    (default ./out beside this script)
# Env: VENV (default ./venv beside this script), PYTHON (default python3.11).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${VENV:-$here/venv}"
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null || py=python3
"$py" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' ||
    { echo "convert.sh: needs CPython 3.11 (the pins are cp311 wheels)" >&2; exit 1; }
if [[ ! -x "$venv/bin/python" ]]; then
    "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes -r "$here/requirements.txt"
"$venv/bin/python" -m pip check --disable-pip-version-check >/dev/null 2>&1 || true  # tokenizers lacks huggingface-hub on purpose
exec "$venv/bin/python" "$here/convert.py" "$@"
