"""The games' pixel readers on the built-in cases: CPU per case against the video's duration (the goal: at most a
tenth, on one core), and what each finds against the ground truth at the judge's tolerance (recall and precision
per event type over the cases read, and each case's T1 F1: type, actor and where matched within the tolerance).

    python benchmarks/pixel_reader_speed.py [--games dota2,..] [--limit N]

CPU is the reader's process and its ffmpeg child together (user + system).  Media come from $VA_MEDIA_ROOT or the
tasks tree; a case without its video is skipped and said.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from video_arena import paths  # noqa: E402
from video_arena.core.judge_loader import load_judge  # noqa: E402
from video_arena.core.tasks import TasksTree  # noqa: E402
from video_arena.games.base import game_names  # noqa: E402
from video_arena.games.readers import load_reader, reader_games  # noqa: E402


def cpu() -> float:
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", default="", help="comma-separated games (default: every game with a reader)")
    ap.add_argument("--limit", type=int, default=0, help="at most N cases per game")
    a = ap.parse_args(argv)
    games = [g for g in (a.games.split(",") if a.games else game_names()) if g in reader_games()]
    tree = TasksTree(paths.default_tasks_root(), os.environ.get("VA_MEDIA_ROOT") or paths.default_tasks_root())
    judge = load_judge()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for game in games:
        reader = load_reader(game)
        tp, n_pred, n_gt, ratios, skipped, f1s = Counter(), Counter(), Counter(), [], [], []
        gts = tree.gt_files(game)[:a.limit or None]
        for gt_path in gts:
            gt = json.loads(gt_path.read_text(encoding="utf-8"))
            video = tree.media(game, gt["case_id"])
            if not video.is_file():
                skipped.append(gt["case_id"])
                continue
            with tempfile.TemporaryDirectory() as tmp:
                answer = Path(tmp) / "answer.json"
                writer = reader.P.Writer(answer)
                c0 = cpu()
                reader.read(video, writer, lambda msg: None)
                writer.flush()
                spent = cpu() - c0
                rec = judge.judge(gt, answer.read_bytes())
                rows = json.loads(answer.read_text())["events"]
            ratios.append(spent / gt["duration_s"])
            f1s.append(2 * rec["n_matched"] / (rec["n_pred"] + rec["n_gt"]) if rec["n_pred"] + rec["n_gt"] else 1.0)
            for _, gi in rec["matches"]:
                tp[gt["events"][gi]["type"]] += 1
            n_pred.update(r["type"] for r in rows)
            n_gt.update(e["type"] for e in gt["events"])
            print(f"{game} {gt['case_id']}: {gt['duration_s']:.0f} s of video, {spent:.1f} s CPU, ratio {spent / gt['duration_s']:.4f}; "
                  f"{rec['n_matched']} of {rec['n_gt']} events found, {rec['n_pred']} rows, F1 {f1s[-1]:.3f}", flush=True)
        if skipped:
            print(f"{game}: {len(skipped)} cases without their video skipped: {', '.join(skipped)}")
        if not ratios:
            continue
        print(f"{game}: {len(ratios)} cases, CPU / video duration: worst {max(ratios):.4f}, mean {sum(ratios) / len(ratios):.4f} "
              f"(goal <= 0.1: worst case {max(ratios) / 0.1:.3f} of the goal); T1 F1 of the reader's rows: mean "
              f"{sum(f1s) / len(f1s):.3f}, {sum(1 for f in f1s if f == 1.0)} cases exact")
        for t in sorted(n_gt | n_pred):
            print(f"{game} {t}: recall {tp[t] / n_gt[t] if n_gt[t] else float('nan'):.3f} ({tp[t]} of {n_gt[t]}), "
                  f"precision {tp[t] / n_pred[t] if n_pred[t] else float('nan'):.3f} ({n_pred[t]} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
