"""The baselines on real media: the perception agent through `run-b` (T1 = 1 on the first case of every
game: the pixel-level check of the cases), and `video-arena baselines` end to end on one case."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from video_arena.baselines import run as R
from video_arena.core import tasks as T

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"

pytestmark = pytest.mark.slow


def _first(game: str) -> str:
    return T.load_cases(game, TASKS)[0]["case_id"]


@pytest.fixture(scope="module")
def media_root(tmp_path_factory) -> Path:
    """Where the first case of every game has its video: the checkout's tasks/ when they are rendered
    there, else a fresh render from the committed ground truth (a clean clone has no media), checked
    against the manifest by build-cases itself."""
    from video_arena.cases import build as B

    if all((TASKS / g / "media" / f"{_first(g)}.mp4").is_file() for g in R.perception_games(TASKS)):
        return TASKS
    root = tmp_path_factory.mktemp("media")
    for g in R.perception_games(TASKS):
        res = B.build_game(g, TASKS, root, media_only=True, only={_first(g)}, jobs=1)
        assert res and all(r["media_matches_manifest"] for r in res), g
    return root


@pytest.mark.parametrize("game", R.perception_games(TASKS))
def test_perception_agent_reads_every_event_of_a_case_through_run_b(tmp_path: Path, game: str, J, media_root) -> None:
    cid = _first(game)
    R.run_b(tmp_path / "out", R.perception_cmd(), "perception", [game], 1, TASKS, media_root, 1)
    gt = J.load_gt(TASKS / game / "gt" / f"{cid}.json")
    rec = J.judge(gt, (tmp_path / "out" / game / cid / "answer.json").read_bytes())
    assert not rec["format_error"]
    assert rec["t1_f1"] == 1.0, (rec["n_gt"], rec["n_pred"], rec["n_matched"])


def test_baselines_command_writes_the_doc_for_one_case(tmp_path: Path, media_root) -> None:
    argv = ["--games", "gomoku", "--limit", "1", "--out", str(tmp_path / "out"), "--doc", str(tmp_path / "R.md"),
            "--pictures", str(tmp_path / "pics"), "--media-root", str(media_root)]
    assert R.main(argv) == 0
    doc = (tmp_path / "R.md").read_text()
    t1 = doc.split("## T1", 1)[1].split("\n## ", 1)[0]
    row = lambda label: re.search(rf"^\| {re.escape(label)} \|.*$", t1, re.M).group(0)  # noqa: E731
    assert "| 1.000 [1.000, 1.000] (n=1) |" in row("oracle")
    assert "| 0.000 [0.000, 0.000] (n=1) |" in row("nop (empty answer)")
    assert "(n=1)" in row("perception agent") and "(n=1)" in row("grid ceiling")
    assert len(re.findall(r"^\| (chance|majority) \| [AB] \|.*\(n=1\)", t1, re.M)) == 4
    assert (tmp_path / "pics" / "perception-gomoku.png").stat().st_size > 1000
    # chance and majority are reproducible: a second run (forced) writes the same doc
    assert R.main(argv + ["--force"]) == 0
    assert (tmp_path / "R.md").read_text() == doc


def test_baselines_runs_a_game_without_a_perception_reader(tmp_path: Path) -> None:
    """Badminton has no perception reader: every other system runs on it, and the doc says the agent did not."""
    from video_arena.cases import build as B

    cid = _first("badminton")
    media_root = TASKS
    if not (TASKS / "badminton" / "media" / f"{cid}.mp4").is_file():
        media_root = tmp_path / "media"
        res = B.build_game("badminton", TASKS, media_root, media_only=True, only={cid}, jobs=1)
        assert res and all(r["media_matches_manifest"] for r in res)
    argv = ["--games", "badminton", "--limit", "1", "--skip", "chance-b,majority-b", "--out", str(tmp_path / "out"),
            "--doc", str(tmp_path / "R.md"), "--pictures", str(tmp_path / "pics"), "--media-root", str(media_root),
            "--no-progress"]
    assert R.main(argv) == 0
    doc = (tmp_path / "R.md").read_text()
    t1 = doc.split("## T1", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^\| oracle \| A/B \| 1\.000 \[1\.000, 1\.000\] \(n=1\)", t1, re.M)
    assert len(re.findall(r"^\| (chance|majority) \| A \|.*\(n=1\)", t1, re.M)) == 2
    assert "perception agent" not in t1 and "Not run on badminton: the agent has no reader" in doc


def test_a_stale_baseline_cell_is_made_again_never_kept(tmp_path: Path, media_root, capsys) -> None:
    """Issue 28: every baseline cell records the digest of its inputs (task files, agent, judge); a cell
    whose digest is not the one its inputs give now is made again on the next run, never kept, and a
    system that would keep one (--skip) is refused."""
    import json

    from video_arena.baselines import cell_inputs as CI
    from video_arena.digests import sha256_bytes

    out = tmp_path / "out"
    argv = ["--games", "gomoku", "--limit", "1", "--out", str(out), "--doc", str(tmp_path / "R.md"),
            "--pictures", str(tmp_path / "pics"), "--media-root", str(media_root), "--no-progress",
            "--skip", "perception-b,chance-a,majority-a"]
    assert R.main(argv) == 0
    doc = (tmp_path / "R.md").read_text()
    cell = out / "chance-b" / "gomoku" / _first("gomoku")
    run = json.loads((cell / "run.json").read_text())
    assert len(run[CI.KEY]) == 64
    assert json.loads((out / "oracle" / "gomoku" / _first("gomoku") / "run.json").read_text())[CI.KEY]
    # a cell made from other inputs, holding a better answer (its digests consistent, as a run left it)
    oracle = (out / "oracle" / "gomoku" / _first("gomoku") / "answer.json").read_bytes()
    (cell / "answer.json").write_bytes(oracle)
    (cell / "run.json").write_text(json.dumps(dict(run, **{CI.KEY: "0" * 64, "answer_sha256": sha256_bytes(oracle)})))
    capsys.readouterr()
    assert R.main(argv) == 0
    assert "chance-b: 1 cell(s) made from other inputs removed" in capsys.readouterr().err
    assert (tmp_path / "R.md").read_text() == doc     # recomputed: the same numbers as the first run
    assert json.loads((cell / "run.json").read_text())[CI.KEY] == run[CI.KEY]
    # kept by --skip, it is refused
    (cell / "run.json").write_text(json.dumps(dict(run, **{CI.KEY: "0" * 64})))
    assert R.main(argv[:-1] + ["perception-b,chance-a,majority-a,chance-b"]) == 2
    assert "chance-b: 1 cell(s) were made from other inputs" in capsys.readouterr().err
