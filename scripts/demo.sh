#!/usr/bin/env bash
# The main job: build engram and show what it does on the bundled example.
#
# Until `engram demo` lands (the actor runtime), this imports the bundled
# turn records (examples/turns.jsonl) into a fresh data dir and shows what
# the log holds. Idempotent: every run starts from a new temp data dir
# (pass --keep DIR to keep it there instead).
set -euo pipefail
cd "$(dirname "$0")/.."

keep=""
if [[ "${1:-}" == "--keep" ]]; then keep="${2:?--keep needs a DIR}"; fi

command -v cargo >/dev/null || { echo "demo: cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
cargo build --release --locked --bin engram
engram=target/release/engram

data="${keep:-$(mktemp -d -t engram-demo.XXXXXX)}"
[[ -n "$keep" ]] || trap 'rm -rf "$data"' EXIT

echo "== importing examples/turns.jsonl into $data"
"$engram" --data "$data" import examples/turns.jsonl
echo "== importing it again: nothing new (ids are derived from the records)"
"$engram" --data "$data" import examples/turns.jsonl --json
echo "== stats"
"$engram" --data "$data" stats
echo "== the first turn, event by event"
"$engram" --data "$data" replay --to 13
echo "== verdicts and session ends of session s-002"
"$engram" --data "$data" replay --session s-002 --kind 'eval.*' --kind 'session.*'
echo "== verify"
"$engram" --data "$data" verify
if [[ -n "$keep" ]]; then
  echo "data kept in $data; try: $engram --data $data replay --kind 'turn.*'"
fi
