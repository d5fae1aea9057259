#!/usr/bin/env bash
# Installs the hash-pinned conversion packages where only this run sees them
# (a venv, or a plain --target dir when the venv module is missing, as on a
# fresh Debian without python3-venv) and runs convert.py: nothing goes into
# the user's Python.
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
reqs="$here/requirements.txt"
[[ "${VERIFY:-0}" == 1 ]] && reqs="$here/verify-requirements.txt"
pip_flags=(-q --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes -r "$reqs")
if [[ -x "$venv/bin/python" ]] || "$py" -m venv "$venv" >/dev/null 2>&1; then
    "$venv/bin/python" -m pip install "${pip_flags[@]}"
    exec "$venv/bin/python" "$here/convert.py" "$@"
fi
# No venv module: the same pinned wheels into a directory of their own.
rm -rf "$venv"
site="$venv-site"
"$py" -m pip install --target "$site" --upgrade "${pip_flags[@]}"
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" exec "$py" "$here/convert.py" "$@"
