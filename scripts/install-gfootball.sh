#!/usr/bin/env bash
# Install Google Research Football (the gfootball case builder's engine) into the gitignored cache:
# <repo>/.cache/gfootball/ (override with VIDEO_ARENA_GFOOTBALL_DIR).
#
#   scripts/install-gfootball.sh         idempotent; prints the engine venv's python on its last line
#
# Only `video-arena build-cases --games gfootball` (without --media-only) needs it: the media are
# rendered by the toolkit from the per-step state committed in the ground truth.
#
# Source: the PyPI sdist gfootball==2.10.2 (Apache-2.0; no wheel exists), fetched with `pip download`.
# Before the build we apply video_arena/games/gfootball/patches/*.patch (see the README there):
#   01  hide the radar, the scoreboard/clock and the on-screen messages ("GOAL for ...", "offside!")
#   02  hide the player-name captions
#   03  GameEnv.reseed(seed): reseed the engine's random generators (rollouts from one restored state)
# The engine is built with cmake + make against Debian's python3.11 and Boost.Python 1.74 (Debian's
# boost-python has only python311, so this is a Python 3.11 venv of its own, outside the project's
# venv), then installed into that venv with pip (--no-deps) as a prebuilt .so, with the Python pins the
# engine needs: gym 0.25.2 (0.26's step API breaks gfootball) and numpy<2.
# A stamp file records the version and the patches' SHA-256: a second run with the same inputs only
# checks that the engine imports.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${VIDEO_ARENA_GFOOTBALL_DIR:-$REPO/.cache/gfootball}"
VERSION=2.10.2
SDIST="gfootball-$VERSION.tar.gz"
PATCH_DIR="$REPO/video_arena/games/gfootball/patches"
VENV="$CACHE/venv"
SRC="$CACHE/src/gfootball-$VERSION"
ENGINE="$SRC/third_party/gfootball_engine"
JOBS="${JOBS:-2}"
PY311="${PYTHON311:-/usr/bin/python3.11}"
PY_PINS=("gym==0.25.2" "numpy<2" "absl-py" "six" "psutil" "opencv-python-headless<4.9")
DEBS=(build-essential cmake python3.11-dev python3.11-venv libgl1-mesa-dev libsdl2-dev libsdl2-image-dev
      libsdl2-ttf-dev libsdl2-gfx-dev libboost-python-dev libboost-system-dev libboost-thread-dev
      libboost-filesystem-dev)
log() { echo "[install-gfootball] $*" >&2; }

stamp_value() {
    { echo "gfootball $VERSION"; printf '%s\n' "${PY_PINS[@]}"; cat "$PATCH_DIR"/*.patch; } | sha256sum | cut -d' ' -f1
}
STAMP="$CACHE/installed.stamp"
WANT="$(stamp_value)"
check_import() {
    "$VENV/bin/python" -c "import gfootball.env, gfootball_engine as e; assert hasattr(e.GameEnv, 'reseed')" 2>/dev/null
}
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && check_import; then
    echo "$VENV/bin/python"
    exit 0
fi

# -- Debian packages (build dependencies of the engine only; not in scripts/apt-packages.txt) --------
missing=()
for p in "${DEBS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        log "apt-get install ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
    else
        log "missing Debian packages (run as root or install them): ${missing[*]}"
        exit 1
    fi
fi

mkdir -p "$CACHE/src"
cd "$CACHE"
[ -x "$VENV/bin/python" ] || { log "python3.11 venv at $VENV"; "$PY311" -m venv "$VENV"; }
if [ ! -f "$SDIST" ]; then
    log "pip download gfootball==$VERSION (sdist)"
    "$VENV/bin/pip" download "gfootball==$VERSION" --no-deps --no-binary :all: -d "$CACHE" >&2
fi

# -- a fresh, patched source tree ---------------------------------------------------------------------
log "extracting $SDIST and applying $(ls "$PATCH_DIR"/*.patch | wc -l) patches"
rm -rf "$SRC"
tar xzf "$SDIST" -C "$CACHE/src"
for p in "$PATCH_DIR"/*.patch; do
    patch -p1 --forward --silent -d "$ENGINE" < "$p" >&2
done

# -- build the engine -----------------------------------------------------------------------------------
log "building the engine (cmake, make -j$JOBS): about 5 minutes on 2 idle cores"
t0=$(date +%s)
(cd "$ENGINE" && cmake . -DCMAKE_BUILD_TYPE=Release >"$CACHE/cmake.log" 2>&1 && make -j"$JOBS" >"$CACHE/make.log" 2>&1) || {
    log "engine build failed; see $CACHE/cmake.log and $CACHE/make.log"; exit 1; }
log "engine built in $(( $(date +%s) - t0 )) s"
mkdir -p "$ENGINE/lib" && cp "$ENGINE/libgame.so" "$ENGINE/lib/prebuilt_gameplayfootball.so"

# -- install into the venv --------------------------------------------------------------------------------
log "pip install ${PY_PINS[*]}"
"$VENV/bin/pip" install --quiet "${PY_PINS[@]}" setuptools wheel >&2
log "pip install gfootball (the engine just built, as a prebuilt .so)"
(cd "$SRC" && GFOOTBALL_USE_PREBUILT_SO=1 "$VENV/bin/pip" install --quiet --no-deps --no-build-isolation . >&2)
check_import || { log "the engine does not import in $VENV"; exit 1; }
# the build tree is ~1 GB; the installed package holds everything the engine needs
rm -rf "$SRC"
echo "$WANT" > "$STAMP"
echo "$VENV/bin/python"
