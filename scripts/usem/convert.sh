#!/usr/bin/env bash
# Makes a hash-pinned venv (kept out of the user's Python) and runs convert.py.
# Usage: convert.sh [OUT_DIR]    (default ./out beside this script)
# Env: VENV (default ./venv beside this script); PYTHON (default python3.11,
# else python3 if that is 3.11); VERIFY=1 also installs verify-requirements.txt
# (onnxruntime and onnxruntime-extensions, for verify.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${VENV:-$here/venv}"
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null || py=python3
"$py" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' 2>/dev/null ||
    { echo "convert.sh: needs CPython 3.11 (the pins are cp311 wheels); set PYTHON=/path/to/python3.11" >&2; exit 1; }
if [[ ! -x "$venv/bin/python" ]]; then
    "$py" -m venv "$venv" || { echo "convert.sh: cannot make a venv (apt-get install python3-venv)" >&2; exit 1; }
fi
reqs="$here/requirements.txt"
[[ "${VERIFY:-0}" == 1 ]] && reqs="$here/verify-requirements.txt"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes -r "$reqs"
exec "$venv/bin/python" "$here/convert.py" "$@"
