#!/usr/bin/env python3
"""What importing one record in its game's own format costs against building a built-in case of the same game
(issue 37: no more, engine time included).

For every game with a record format, one record shipped with the tests (tests/fixtures/records/<game>/, the
OpenDota parse for DOTA 2) is imported by the real command (`video-arena import-cases --game G --FORMAT FILE`)
into a fresh tree, and the built-in case of the median duration is rebuilt by the real command
(`video-arena build-cases --games G --case-ids ID --force-values --jobs 1`) in a copy of the game's folder:
both compute V_t with the game's engine or model (Go's KataGo runs: an empty V_t cache), both render and encode the
video.  Each is a child process; its CPU (user + system, children included) and wall time are printed, with
the video's duration and the V_t points (positions the engine or model valued), and the ratios of the import's
CPU per video minute and per V_t point to the built-in case's: at most 1 meets the goal (records are of
different lengths, so the comparison is per unit of work: the render's per minute of video, the engine's per
position).  What the rebuild does not count: a built-in case whose record the engine made once and the checkout
commits (gfootball's simulated matches, doudizhu's and gomoku's deals and games) is rebuilt from that record,
so its row leaves the simulation out, and the import's row holds the reading of the user's file (a gfootball
dump is 3,001 pickled steps, read by the standard library's pure-Python unpickler on purpose: dump.py) and the
check against the built-in matches (`public_match`; their keys are cached in the checkout after the first
import, so run it twice for the steady figure).

    python benchmarks/record_import_speed.py [--games chess,go]
"""
from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from video_arena.core import tasks as T  # noqa: E402

RECORDS = REPO / "tests" / "fixtures" / "records"
BADMINTON = RECORDS / "badminton" / "set"
HELD_OUT = "CHEN_Yu_Fei_PUSARLA_V._Sindhu_Thailand_Open_2022_SemiFinals"


def _unpacked(src: Path, dest: Path, opener) -> Path:
    with opener(src, "rb") as f:
        dest.write_bytes(f.read())
    return dest


def record_args(game: str, tmp: Path) -> list[str]:
    """The import-cases arguments of the game's shipped record (after --game G)."""
    if game == "chess":
        return ["--pgn", str(RECORDS / "chess" / "kasparov-deep-blue-1997.pgn"), "--pick", "1"]
    if game == "go":
        return ["--sgf", str(RECORDS / "go" / "fox_go_server_handicap.sgf")]
    if game == "gomoku":
        return ["--psq", str(RECORDS / "gomoku" / "engine-seed-1002.psq")]
    if game == "doudizhu":
        return ["--rlcard-showdown", str(RECORDS / "doudizhu" / "rlcard-rule-v1-seed13.json")]
    if game == "gfootball":
        dump = _unpacked(RECORDS / "gfootball" / "11_vs_11_stochastic-seed77.dump.xz", tmp / "episode.dump", lzma.open)
        return ["--gfootball-dump", str(dump)]
    if game == "sc2":
        return ["--sc2replay", str(RECORDS / "sc2" / "Deathaura.SC2Replay")]
    if game == "dota2":
        files = [_unpacked(REPO / "tests" / "fixtures" / "opendota" / f"7490235544_{p}.json.gz", tmp / f"{p}.json", gzip.open)
                 for p in ("parsed", "api")]
        return ["--opendota", *map(str, files)]
    if game == "badminton":
        return ["--shuttleset", str(BADMINTON / "match.csv"), str(BADMINTON / "homography.csv"),
                str(BADMINTON / HELD_OUT / "set1.csv"), str(BADMINTON / HELD_OUT / "set2.csv")]
    raise ValueError(f"no shipped record for {game}")


GAMES = ("badminton", "chess", "dota2", "doudizhu", "gfootball", "go", "gomoku", "sc2")


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU s, wall s) of the command, a child process (its own children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stdout[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def median_case(game: str) -> tuple[str, float]:
    cases = sorted(T.load_cases(game, REPO / "tasks"), key=lambda c: (float(c["duration_s"]), c["case_id"]))
    c = cases[len(cases) // 2]
    return c["case_id"], float(c["duration_s"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", default=",".join(GAMES))
    a = ap.parse_args(argv)
    games = [g for g in a.games.split(",") if g]
    unknown = sorted(set(games) - set(GAMES))
    if unknown:
        print(f"record_import_speed: no shipped record for {', '.join(unknown)}", file=sys.stderr)
        return 2
    cli = [sys.executable, "-m", "video_arena.cli"]
    env = {k: v for k, v in os.environ.items() if k not in ("VIDEO_ARENA_GO_VT_CACHE", "VA_MEDIA_ROOT")}
    env["VA_NO_PROGRESS"] = "1"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print("| game | import: CPU s | wall s | video min | V_t points | built-in case | CPU s | wall s | video min "
          "| V_t points | import / built-in: CPU per video min | per V_t point |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for game in games:
        with tempfile.TemporaryDirectory(prefix=f"va-import-speed-{game}-") as tmp_s:
            tmp = Path(tmp_s)
            args = record_args(game, tmp)
            env["VIDEO_ARENA_GO_VT_CACHE"] = str(tmp / "go-vt")    # empty: KataGo values every position both ways
            i_cpu, i_wall = run([*cli, "import-cases", "--tasks-root", str(tmp / "imported"), "--game", game, *args,
                                 "--licence", "benchmark"], env)
            (gt_path,) = (tmp / "imported" / game / "gt").glob("*.json")
            i_gt = json.loads(gt_path.read_text(encoding="utf-8"))
            i_min, i_pts = i_gt["duration_s"] / 60, len(i_gt["v_series"])
            case_id, dur = median_case(game)
            shutil.copytree(REPO / "tasks" / game, tmp / "builtin" / game, ignore=shutil.ignore_patterns("media"))
            b_cpu, b_wall = run([*cli, "build-cases", "--games", game, "--case-ids", case_id, "--force-values",
                                 "--jobs", "1", "--tasks-root", str(tmp / "builtin"), "--media-root",
                                 str(tmp / "builtin-media"), "--no-progress"], env)
            b_min = dur / 60
            b_gt = json.loads((tmp / "builtin" / game / "gt" / f"{case_id}.json").read_text(encoding="utf-8"))
            b_pts = len(b_gt["v_series"])
            per_min = (i_cpu / i_min) / (b_cpu / b_min)
            per_pt = (i_cpu / i_pts) / (b_cpu / b_pts)
            worst = max(worst, min(per_min, per_pt))
            print(f"| {game} | {i_cpu:.1f} | {i_wall:.1f} | {i_min:.1f} | {i_pts} | {case_id} | {b_cpu:.1f} "
                  f"| {b_wall:.1f} | {b_min:.1f} | {b_pts} | {per_min:.2f} | {per_pt:.2f} |", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"worst game's better ratio (import / built-in case, per video minute or per V_t point; goal at most 1): "
          f"{worst:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
