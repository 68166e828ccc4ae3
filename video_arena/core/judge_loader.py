"""Load THE judge (`judge/judge.py`) as a module.

The judge is one stdlib-only file that is copied unchanged into every Harbor task, so it is not part
of the package; everything in the package that scores (scorer, timeline, oracle checks) loads that
same file through here, so the offline numbers and Harbor's reward.json come from the same code.

    J = load_judge()
    record = J.judge(gt, answer_bytes)
"""
from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType

from video_arena import paths

#: The stable name the judge is registered under in sys.modules (pickling records, dataclasses and
#: tracebacks need a real module name; "judge" alone would clash with anything else called judge).
MODULE_NAME = "video_arena_judge"

#: What the package relies on (docs/ARCHITECTURE.md, "Judge").
REQUIRED_API = ("judge", "judge_files", "reward_of", "oracle_answer", "load_gt")
#: The judge's constants the package reads instead of writing them again.
REQUIRED_CONSTANTS = ("REWARD_KEYS", "MAX_ANSWER_BYTES", "JUDGE_VERSION", "TOLERANCE_S")

_lock = threading.Lock()
_cache: dict[str, ModuleType] = {}


class JudgeUnavailable(ImportError):
    """judge/judge.py is missing, does not import, or lacks part of its documented API."""


def load_judge(path: str | Path | None = None) -> ModuleType:
    """The judge module (cached per resolved path; the default path is the checkout's judge/judge.py)."""
    try:
        judge_file = Path(path) if path is not None else paths.judge_path()
    except paths.ResourceMissing as exc:
        raise JudgeUnavailable(str(exc)) from exc
    judge_file = judge_file.resolve()
    key = str(judge_file)
    with _lock:
        mod = _cache.get(key)
        if mod is not None:
            return mod
        if not judge_file.is_file():
            raise JudgeUnavailable(f"judge file {judge_file} does not exist")
        default = path is None or key == str(_default_path_or_none())
        name = MODULE_NAME if default else f"{MODULE_NAME}_{len(_cache)}"
        spec = importlib.util.spec_from_file_location(name, judge_file)
        if spec is None or spec.loader is None:
            raise JudgeUnavailable(f"cannot load {judge_file} as a Python module")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise JudgeUnavailable(f"{judge_file} failed to import: {exc!r}") from exc
        missing = [f for f in REQUIRED_API if not callable(getattr(mod, f, None))]
        missing += [c for c in REQUIRED_CONSTANTS if not hasattr(mod, c)]
        if missing:
            sys.modules.pop(name, None)
            raise JudgeUnavailable(f"{judge_file} lacks {', '.join(missing)} (API in docs/ARCHITECTURE.md)")
        _cache[key] = mod
        return mod


def _default_path_or_none() -> Path | None:
    try:
        return paths.judge_path().resolve()
    except paths.ResourceMissing:
        return None

