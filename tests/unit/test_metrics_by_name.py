"""A metric is one entry where the judge names it (judge/judge.py REWARD_KEYS): a metric added there, and
nowhere else, shows in every output: the score table, the CSV and JSON, the md report, the explorer's
pages, the timeline, the baselines' RESULTS tables and the Harbor-facing summary.

The metric is added in a scratch copy of the package and the judge (never in the checkout), and every
command runs on that copy in a child process, on the results-contract fixtures."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from video_arena.paths import REPO_ROOT

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "results_contract"
NEW = "probe_share"  # the added metric's name: found nowhere in the toolkit
VALUE = "0.625"

#: appended to the scratch judge: one more reward key, a constant computed from the record's own fields
ADD_METRIC = f'''

REWARD_KEYS = REWARD_KEYS + ("{NEW}",)
_record_before_{NEW} = _empty_record


def _empty_record(n_gt, tolerance, format_error):
    rec = _record_before_{NEW}(n_gt, tolerance, format_error)
    rec["{NEW}"] = {VALUE} if rec["tolerance_s"] == TOLERANCE_S else 0.0
    return rec
'''

#: the baselines' RESULTS document (video_arena/baselines/run.py render_doc) over one scored folder
BASELINES_DOC = """
import sys
from pathlib import Path
from video_arena.baselines import run as B
from video_arena.scoring.scorer import score_results
s = score_results(sys.argv[1], sys.argv[2], n_boot=20, progress=False)
print(B.render_doc({"oracle": s}, ["chess"], {}, "digest", None, 0, {}, [], "", tasks_root=Path(sys.argv[2])))
"""

#: the timeline's title line of one judged case
TIMELINE_TITLE = """
import sys
from video_arena.core.judge_loader import load_judge
from video_arena.scoring import timeline
J = load_judge()
print(timeline.scores_line(J.judge_files(sys.argv[1], sys.argv[2])))
"""


def _scratch(tmp: Path) -> Path:
    root = tmp / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO_ROOT / "video_arena", root / "video_arena", ignore=ignore)
    shutil.copytree(REPO_ROOT / "judge", root / "judge", ignore=ignore)
    (root / "tasks").symlink_to(REPO_ROOT / "tasks", target_is_directory=True)  # read only (the games' sites)
    judge = root / "judge" / "judge.py"
    judge.write_text(judge.read_text(encoding="utf-8") + ADD_METRIC, encoding="utf-8")
    return root


def _run(root: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root), MPLBACKEND="Agg", VA_TASKS_ROOT=str(FIXTURES / "tasks"))
    p = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-2000:])
    return p


def test_a_metric_added_in_the_judge_alone_shows_in_every_output(tmp_path):
    root = _scratch(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    tasks = FIXTURES / "tasks"
    p = _run(root, work, "-c", "from video_arena import paths; from video_arena.scoring import cells as SC; "
                               "print(paths.judge_path(), SC.METRICS)")
    assert p.stdout.startswith(str(root)) and NEW in p.stdout  # the scratch package loads the scratch judge

    # the score table, CSV (per game and per cell), JSON and md report, with a comparison
    p = _run(root, work, "-m", "video_arena.cli", "score", str(FIXTURES / "run_a"), "--tasks-root", str(tasks),
             "--bootstrap", "20", "--csv", "g.csv", "--cells-csv", "c.csv", "--json", "s.json",
             "--compare", str(FIXTURES / "run_b"), "--allow-mixed")
    table = p.stdout
    assert NEW in table.split("\n  game ", 1)[1].splitlines()[0], table  # a column of the table
    assert sum(NEW in line for line in table.splitlines()) >= 2, table   # and a row of the comparison
    game_csv = (work / "g.csv").read_text().splitlines()
    assert {NEW, f"{NEW}_ci_lo", f"{NEW}_ci_hi"} <= set(game_csv[0].split(",")), game_csv[0]
    row = dict(zip(game_csv[0].split(","), game_csv[1].split(",")))
    assert float(row[NEW]) == float(VALUE), row
    assert NEW in (work / "c.csv").read_text().splitlines()[0]
    doc = json.loads((work / "s.json").read_text())
    system = doc["systems"][0]
    assert system["overall"]["means"][NEW] == float(VALUE)
    assert system["games"]["chess"]["means"][NEW] == float(VALUE)
    assert NEW in system["cells"][0] and NEW in doc["compare"]["overall_shared"]

    _run(root, work, "-m", "video_arena.cli", "score", str(FIXTURES / "run_a"), "--tasks-root", str(tasks),
         "--bootstrap", "20", "--report", "md", "--report-out", "r.md")
    md = (work / "r.md").read_text()
    assert any(line.startswith("| game |") and NEW in line for line in md.splitlines()), md[:3000]

    # the Harbor-facing summary: a Harbor job's harbor means (reward.json's convention) carry it
    _run(root, work, "-m", "video_arena.cli", "score", str(FIXTURES / "job_a"), "--tasks-root", str(tasks),
         "--bootstrap", "20", "--json", "h.json")
    h = json.loads((work / "h.json").read_text())["systems"][0]
    assert NEW in h["games"]["chess"]["harbor_means"], h["games"]["chess"]["harbor_means"]

    # the explorer: the score table, the game page and a case page
    _run(root, work, "-m", "video_arena.cli", "explore", str(FIXTURES / "run_a"), "--tasks-root", str(tasks),
         "--compare", str(FIXTURES / "run_b"), "--allow-mixed", "-o", "site")
    site = work / "site"
    index = (site / "index.html").read_text()
    assert index.count(f'data-metric="{NEW}"') >= 3, "index: score table and comparison"  # table rows, compare
    assert f"<th>{NEW}</th>" in index
    assert f'data-metric="{NEW}"' in (site / "games" / "chess.html").read_text()
    case = next((site / "cases" / "chess").glob("*.html")).read_text()
    assert f'data-metric="{NEW}"' in case

    # the timeline: its title and what the command prints
    gt, answer = tasks / "chess" / "gt" / "Fx7kQ2aB.json", FIXTURES / "run_a" / "chess" / "Fx7kQ2aB" / "answer.json"
    p = _run(root, work, "-c", TIMELINE_TITLE, str(gt), str(answer))
    assert f"{NEW} {VALUE}" in p.stdout, p.stdout
    p = _run(root, work, "-m", "video_arena.cli", "timeline", str(gt), str(answer), "-o", "t.png")
    assert f"{NEW} {VALUE}" in p.stdout, p.stdout

    # the baselines' RESULTS document: a table of its own
    p = _run(root, work, "-c", BASELINES_DOC, str(FIXTURES / "run_a"), str(tasks))
    assert f"## {NEW}" in p.stdout, p.stdout[:3000]
