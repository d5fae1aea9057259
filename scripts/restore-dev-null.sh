#!/usr/bin/env bash
# Restores /dev/null when it is a regular file, as it is in some containers.
#
# Why it matters: cargo runs `rustc -` with its standard input on /dev/null
# to learn the target's details. When /dev/null is a file, every probe whose
# output a build script sends "to /dev/null" (the C compiler's, rustc's) is
# kept in it, the next `rustc -` reads that text as Rust source and the
# build stops with "failed to run `rustc` to learn about target-specific
# information". On a normal machine /dev/null is the character device 1:3
# and this does nothing.
set -euo pipefail

[[ -c /dev/null ]] && exit 0
echo "setup: /dev/null is not the null device (a regular file?): making it one again" >&2
if [[ "$(id -u)" = 0 ]]; then run=(); elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then run=(sudo -n); else
  echo "setup: cannot restore /dev/null without root: builds may fail at random (mknod -m 666 /dev/null c 1 3)" >&2
  exit 0
fi
tmp="/dev/.null.$$"
if "${run[@]}" mknod -m 666 "$tmp" c 1 3 && "${run[@]}" mv -f "$tmp" /dev/null; then
  exit 0
fi
"${run[@]}" rm -f "$tmp" 2>/dev/null || true
echo "setup: cannot restore /dev/null here: builds may fail at random (mknod -m 666 /dev/null c 1 3)" >&2
