"""What produced a run: the toolkit and judge versions and the checkout's git commit and dirty flag.

Every run record (Protocol A and B, native and Harbor) carries `toolkit_provenance()` under the key
`toolkit`, so a number in a paper can be traced to the code that made it (docs/PROTOCOLS.md,
"Results and run.json"; lmms-eval and inspect_ai record the same).  A checkout without git, or a copy
outside one, records `git_commit: null` and `git_dirty: null`: unknown is never written as clean.
"""
from __future__ import annotations

import functools
import re
import subprocess
from typing import Any

from video_arena import __version__, paths

_JUDGE_VERSION_RE = re.compile(r'^JUDGE_VERSION\s*=\s*"([^"]+)"', re.M)


def judge_version() -> str | None:
    """The `JUDGE_VERSION` of judge/judge.py, read from its text (no import needed)."""
    try:
        m = _JUDGE_VERSION_RE.search(paths.judge_path().read_text(encoding="utf-8"))
    except (OSError, paths.ResourceMissing):
        return None
    return m.group(1) if m else None


def _git(*args: str) -> str | None:
    try:
        p = subprocess.run(["git", "-C", str(paths.REPO_ROOT), *args], capture_output=True,
                           text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def toolkit_provenance() -> dict[str, Any]:
    """{"toolkit_version", "judge_version", "git_commit", "git_dirty"} (cached for the process)."""
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "toolkit_version": __version__,
        "judge_version": judge_version(),
        "git_commit": commit.strip() if commit else None,
        "git_dirty": None if status is None else bool(status.strip()),
    }
