#!/usr/bin/env python3
"""Harbor verifier for one Video-Arena task: score the collected answer with the task's judge.py.

Standard library only (Python 3.11+); copied unchanged into every task's tests/ and run by test.sh
as root in the separate verifier container:

    python3 -I -S -B /tests/score_harbor.py --gt /tests/gt.json --case /tests/case.json \
        --answer /app/answer.json --out-dir /logs/verifier

Writes, in --out-dir:
  reward.json   Harbor's reward: reward, t1_f1, t2_macro_acc, t3_macro_acc, always four finite
                numbers (a tier the judge could not compute, a missing or unparseable answer: 0.0),
                plus the key "case:GAME/CASE_ID" = 1 naming the task's case (Harbor passes a dataset
                metric only the reward dicts; the dataset's metric.py groups by it: the headline is
                the mean of per-game means, attempts of one case averaged first)
  judge.json    the judge's full record plus what Harbor does not keep: the answer's state
                (wrote / never_wrote / missing / not_regular / unreadable, seed 000 "Protocol B"),
                its size and SHA-256, the case, and any verifier error

The answer is read once, through the judge's bounded reader: opened without following a symlink
(a symlinked /app/answer.json is no answer: `not_regular`, 0.0), its size checked on the open file
before reading, and never more than the judge's cap + 1 byte read; the bytes hashed are the bytes
judged.

The exit status is 0 when the answer was judged (whatever its score) and 1 when the verifier itself
failed (a malformed ground truth, a broken judge); reward.json holds zeros then, and judge.json says
why. Harbor ignores the exit status, so the oracle check is what catches the second kind.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REWARD_KEYS = ("reward", "t1_f1", "t2_macro_acc", "t3_macro_acc")
#: the reward key naming the case (harbor_templates/metric.py reads it; a test holds the two equal)
CASE_KEY_PREFIX = "case:"


def case_key(case: dict) -> str | None:
    """"case:GAME/CASE_ID" when case.json names both as plain strings, else None."""
    game, case_id = case.get("game"), case.get("case_id")
    if not (isinstance(game, str) and isinstance(case_id, str) and game and case_id):
        return None
    return f"{CASE_KEY_PREFIX}{game}/{case_id}"


def load_judge(path: Path):
    spec = importlib.util.spec_from_file_location("video_arena_task_judge", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def finite(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    value = float(value)
    return value if math.isfinite(value) else 0.0


def answer_state(data: bytes | None, kind: str | None, seed_sha256: str | None) -> tuple[str, str | None]:
    """(state, sha256) of what the judge's reader returned: `missing` (never collected or deleted),
    `not_regular` (a symlink, a folder, a FIFO), `unreadable`, `never_wrote` (still the seed's bytes),
    `wrote` (anything else, an oversized file included, scored as it is)."""
    if data is None:
        return ("wrote" if kind == "too_large" else kind or "unreadable"), None
    digest = hashlib.sha256(data).hexdigest()
    return ("never_wrote" if seed_sha256 and digest == seed_sha256 else "wrote"), digest


def file_size(path: Path) -> int | None:
    try:
        return os.lstat(path).st_size
    except OSError:
        return None


def write_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=1, allow_nan=False)
        fh.write("\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="score_harbor.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--gt", type=Path, default=HERE / "gt.json")
    ap.add_argument("--case", type=Path, default=HERE / "case.json")
    ap.add_argument("--answer", type=Path, default=Path("/app/answer.json"))
    ap.add_argument("--judge", type=Path, default=HERE / "judge.py")
    ap.add_argument("--out-dir", type=Path, default=Path("/logs/verifier"))
    args = ap.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)

    rewards = {key: 0.0 for key in REWARD_KEYS}
    report: dict = {"format": "video-arena-harbor-verifier/1", "error": None}
    named: dict = {}  # {case_key: 1} once case.json is read: every reward.json written after names its case
    try:
        case = json.loads(args.case.read_text(encoding="utf-8"))
        report["case"] = {k: case.get(k) for k in ("game", "case_id", "protocol", "task_name")}
        key = case_key(case) if isinstance(case, dict) else None
        named = {key: 1} if key else {}
        judge = load_judge(args.judge)
        gt = judge.load_gt(str(args.gt))
        data, reason, kind = judge.read_answer_file(str(args.answer), follow_symlinks=False)
        size = len(data) if data is not None else (file_size(args.answer) if kind == "too_large" else None)
        state, digest = answer_state(data, kind, case.get("answer_seed_sha256"))
        report.update(answer_state=state, answer_bytes=size, answer_sha256=digest)
        record = judge.judge(gt, data) if reason is None else judge.no_answer_record(gt, reason)
        rewards = {key: finite(value) for key, value in judge.reward_of(record).items()
                   if key in REWARD_KEYS}
        for key in REWARD_KEYS:
            rewards.setdefault(key, 0.0)
        report["record"] = record
    except Exception as exc:  # the verifier's own failure: zeros, and say why
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()
        rewards = {key: 0.0 for key in REWARD_KEYS}
    rewards.update(named)
    report["rewards"] = rewards
    try:
        write_json(args.out_dir / "judge.json", report)
    except (OSError, ValueError) as exc:
        print(f"score_harbor: cannot write judge.json: {exc}", file=sys.stderr)
    write_json(args.out_dir / "reward.json", rewards)

    record = report.get("record") or {}
    print(f"answer: {report.get('answer_state')} ({report.get('answer_bytes')} bytes)"
          f"  rows: {record.get('n_pred')}  gt rows: {record.get('n_gt')}"
          f"  format_error: {record.get('format_error')}")
    print("reward: " + json.dumps(rewards))
    if report["error"]:
        print(f"score_harbor: verifier error: {report['error']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
