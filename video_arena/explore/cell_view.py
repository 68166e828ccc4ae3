"""Everything the explorer shows about one cell, read from its folder and made safe to share.

A cell is one run of one case: a native results folder's `<results>/<game>/<case_id>/` or a Harbor
trial folder.  `CellFiles` says where its files are for either layout; `events_table` merges the
ground truth and the answer into one chronological table with every row marked; `Scrubber` removes
host paths, keys and environments from anything written into the site.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from video_arena import safe_io
from video_arena.safe_io import real_dir, regular_file
from video_arena.core import results as R
from video_arena.harbor_api import trials as TR
from video_arena.scoring import cells as SC
from video_arena.scoring import statistics as SS

#: The most of any text file the site shows (a log's tail, a reply's head).
TEXT_CAP = 64 * 1024

ROW_MATCHED = "matched"
ROW_LABEL_WRONG = "label wrong"
ROW_MISSED = "missed"
ROW_EXTRA = "extra"


# --------------------------------------------------------------------------------------------------
# files of a cell: regular files inside the results folder, reached through no link, counted and capped
# --------------------------------------------------------------------------------------------------
#: The most log files a cell page shows, and the most folder entries looked at to find them.
MAX_LOG_FILES = 8
MAX_WALK_ENTRIES = 10_000


@dataclass
class CellFiles:
    """Where one cell's files are.  Any of them may be absent (None): absent, not a regular file, or
    reached through a symbolic link.  reply, receipt and frames_dir are Protocol A's only (and, in a
    Harbor trial, the prompt: any other agent writes its agent/ folder itself)."""

    dir: Path
    answer: Path | None
    run: Path | None = None          # the toolkit's run record (native, or a ProtocolA agent's)
    harbor_result: Path | None = None
    reply: Path | None = None
    prompt: Path | None = None
    receipt: Path | None = None
    frames_dir: Path | None = None   # a Harbor ProtocolA agent's copied-out stills
    logs: list[Path] = field(default_factory=list)


def files_under(root: Path, folder: Path, keep=lambda p: True, limit: int = MAX_LOG_FILES) -> list[Path]:
    """Regular files under `folder` (itself checked with real_dir), never through a link, in name order,
    looking at no more than MAX_WALK_ENTRIES entries and returning at most `limit` of them."""
    if real_dir(root, folder) is None:
        return []
    found, seen, stack = [], 0, [folder]
    while stack and seen < MAX_WALK_ENTRIES:
        d = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            seen += 1
            if seen > MAX_WALK_ENTRIES:
                break
            if e.is_symlink():
                continue
            if e.is_dir(follow_symlinks=False):
                subdirs.append(Path(e.path))
            elif e.is_file(follow_symlinks=False) and keep(Path(e.path)):
                found.append(Path(e.path))
        stack.extend(reversed(subdirs))
    return sorted(found)[:limit]


def cell_files(system: SS.SystemScore, cell: SC.Cell) -> CellFiles:
    root = Path(system.results).resolve()
    trial = getattr(cell, "trial", "")
    is_a = cell.protocol == "A"  # what the task is (the run record's protocol), never what a file claims
    if system.harbor is not None and trial:
        t = TR.Trial(dir=root / trial, result=None, config=None)
        d, agent = t.dir, t.agent_dir
        own = [f for f in (regular_file(root, d / "verifier" / "test-stdout.txt"),
                           regular_file(root, d / "exception.txt")) if f is not None]
        logs = files_under(root, agent, lambda p: p.suffix in (".txt", ".log")
                           and p.name not in (R.REPLY_FILE, R.PROMPT_FILE, R.REASONING_FILE))
        run = t.agent_run_path(cell.protocol)
        return CellFiles(dir=d, answer=regular_file(root, t.answer_path),
                         run=regular_file(root, run) if run is not None else None,
                         harbor_result=regular_file(root, t.result_path),
                         reply=regular_file(root, agent / R.REPLY_FILE) if is_a else None,
                         prompt=regular_file(root, agent / R.PROMPT_FILE) if is_a else None,
                         receipt=regular_file(root, agent / R.RECEIPT_FILE) if is_a else None,
                         frames_dir=real_dir(root, agent / "frames") if is_a else None,
                         logs=(logs + own)[:MAX_LOG_FILES])
    d = R.cell_dir(root, cell.game, cell.case_id)
    if real_dir(root, d) is None:  # no folder, or one that is a link: nothing of it is shown
        return CellFiles(dir=d, answer=None)
    run_path = regular_file(root, d / R.RUN_FILE)
    rec = R.read_run(d)[0] if run_path is not None else None
    logs: list[Path] = []
    recorded_logs = rec.protocol_b.logs if rec is not None else R.UNSET  # Protocol B's typed key
    declared = recorded_logs if isinstance(recorded_logs, dict) else {}
    for rel in list(declared.values())[:MAX_LOG_FILES]:
        p = _inside(d, rel)
        if p is not None and regular_file(root, p) is not None:
            logs.append(p)
    if not logs:
        logs = files_under(root, d / "logs")
    return CellFiles(dir=d, answer=regular_file(root, d / R.ANSWER_FILE), run=run_path,
                     reply=regular_file(root, d / R.REPLY_FILE) if is_a else None,
                     prompt=regular_file(root, d / R.PROMPT_FILE),  # both runners write the prompt they sent
                     receipt=regular_file(root, d / R.RECEIPT_FILE) if is_a else None, logs=logs)


def _inside(base: Path, rel: Any) -> Path | None:
    """base/rel when rel is a relative path that stays inside base (a run record is data, not trusted)."""
    if not isinstance(rel, str) or not rel or os.path.isabs(rel):
        return None
    p = Path(os.path.normpath(base / rel))
    return p if base in p.parents else None


def read_json(path: Path | None) -> dict[str, Any] | None:
    """A JSON object read with the scorer's bound; None when absent or not one."""
    return None if path is None else safe_io.read_json_object(path)[0]


def read_bounded(path: Path | None, cap: int) -> bytes | None:
    """At most `cap` + 1 bytes of a regular file (not through a symlink); None if absent."""
    if path is None:
        return None
    try:
        return safe_io.read_bounded(path, cap)[0]
    except OSError:
        return None


def text_head(path: Path | None, cap: int = TEXT_CAP) -> tuple[str | None, bool]:
    data = read_bounded(path, cap)
    if data is None:
        return None, False
    return data[:cap].decode("utf-8", "replace"), len(data) > cap


def text_tail(path: Path | None, cap: int = TEXT_CAP) -> tuple[str | None, bool]:
    """The last `cap` bytes of a regular file, never through a symlink (an agent's folder may hold one
    pointing at a host file) and never blocking on a FIFO; (None, False) otherwise."""
    if path is None:
        return None, False
    try:
        data, size = safe_io.read_tail(path, cap)
    except OSError:
        return None, False
    return data.decode("utf-8", "replace"), size > cap


# --------------------------------------------------------------------------------------------------
# events table
# --------------------------------------------------------------------------------------------------
def events_table(gt: dict[str, Any], pred: list[dict[str, Any]], record: dict[str, Any]) -> list[dict[str, Any]]:
    """Truth and answer rows in time order, each marked matched / label wrong / missed / extra.

    A matched pair is one row (the truth's and the answer's labels side by side); `label wrong` is a
    T1 match whose `delta` or `state` differs.  `pred` are the answer's rows as the judge read them."""
    gt_rows = gt.get("events") or []
    matches = {int(g): int(p) for p, g in record.get("matches") or []}
    matched_pred = set(matches.values())
    rows = []
    for gi, g in enumerate(gt_rows):
        p = matches.get(gi)
        if p is not None and p < len(pred):
            a = pred[p]
            right = a["delta"] == g["delta"] and a["state"] == g["state"]
            rows.append({"t": float(g["t"]), "gt": g, "pred": a, "dt": float(a["t"]) - float(g["t"]),
                         "mark": ROW_MATCHED if right else ROW_LABEL_WRONG,
                         "wrong": [k for k in ("delta", "state") if a[k] != g[k]]})
        else:
            rows.append({"t": float(g["t"]), "gt": g, "pred": None, "dt": None, "mark": ROW_MISSED, "wrong": []})
    for pi, a in enumerate(pred):
        if pi not in matched_pred:
            rows.append({"t": float(a["t"]), "gt": None, "pred": a, "dt": None, "mark": ROW_EXTRA, "wrong": []})
    rows.sort(key=lambda r: (r["t"], r["gt"] is None))
    return rows


def mark_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    out = {m: 0 for m in (ROW_MATCHED, ROW_LABEL_WRONG, ROW_MISSED, ROW_EXTRA)}
    for r in rows:
        out[r["mark"]] += 1
    return out


# --------------------------------------------------------------------------------------------------
# sharing: no host paths, keys or environments
# --------------------------------------------------------------------------------------------------
_ABS_PATH = re.compile(r"(?<![\w.~:/-])/(?:[\w.+@%-]+/)+[\w.+@%-]*")
_BEARER = re.compile(r"(?i)\b(bearer\s+)\S+")
_SK = re.compile(r"\b(sk-[A-Za-z0-9_-]{4})[A-Za-z0-9_-]+")
_ENV_KEYS = re.compile(r"(?i)^(env|environ|environment|env_scrubbed|base_env|headers)$")


class Scrubber:
    """Rewrites text and JSON for a site that can be shared.

    Known roots (the results folder, tasks tree, media root, home, temp dir, working directory) become
    `<results>`, `<tasks>`, ...; any other absolute path keeps only its last component (`.../name`);
    key/token/password assignments, bearer tokens and `sk-` keys are masked; keys named like an
    environment or headers are dropped from records."""

    def __init__(self, roots: dict[str, Path | str]):
        pairs = []
        for label, root in roots.items():
            for variant in {str(root), os.path.realpath(str(root))}:
                if variant and variant != "/":
                    pairs.append((variant.rstrip("/"), f"<{label}>"))
        self.roots = sorted(pairs, key=lambda p: -len(p[0]))

    def text(self, s: str) -> str:
        for root, label in self.roots:
            s = s.replace(root, label)
        s = _ABS_PATH.sub(lambda m: ".../" + m.group(0).rstrip("/").rsplit("/", 1)[-1], s)
        s = _BEARER.sub(lambda m: m.group(1) + "***", s)
        s = _SK.sub(lambda m: m.group(1) + "***", s)
        return R.redact(s)

    def record(self, obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: self.record(v) for k, v in obj.items() if not _ENV_KEYS.match(str(k))}
        if isinstance(obj, list):
            return [self.record(v) for v in obj]
        if isinstance(obj, str):
            return self.text(obj)
        return obj
