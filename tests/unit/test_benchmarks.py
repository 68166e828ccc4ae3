"""benchmarks/: the full-size tasks tree they measure on is valid, and run_all's README table is generated
into its own block only."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.core.tasks import load_game
from video_arena.games.base import game_names
from video_arena.harbor import generate as G
from video_arena.harbor import validate as V
from video_arena.importing.rules import where_error

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_tree  # noqa: E402
import run_all  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_tasks_env")


def test_bench_tree_is_a_valid_tasks_tree_with_every_game(tmp_path):
    """Every game gets exactly N cases (real ones first); the synthetic ones follow the game's own
    vocabulary and coordinate rule, and make-harbor + validate accept the whole tree."""
    from video_arena.core.judge_loader import load_judge

    src = paths.default_tasks_root()
    tree = tmp_path / "tasks"
    summary = bench_tree.build_tree(tree, src, per_game=2)
    assert set(summary) == set(game_names())
    assert all(s["real"] + s["copies"] + s["synthetic"] == 2 for s in summary.values())
    judge = load_judge()
    for game, s in summary.items():
        cases = json.loads((tree / game / "cases.json").read_text())["cases"]
        assert len(cases) == 2
        d = load_game(game, tree)
        for c in cases[s["real"]:]:
            gt = judge.load_gt(str(tree / game / "gt" / f"{c['case_id']}.json"))
            assert gt["case_id"] == c["case_id"]
            for row in gt["events"]:
                assert where_error(d, row["type"], row["where"]) is None, (game, row)
                assert row["delta"] == d.delta_of(row["v_before"], row["v_after"])
                assert row["state"] == d.state_of(row["v_after"])
            if s["synthetic"]:
                assert "SYNTHETIC" in gt["v_definition"]
    assert not any(p.is_symlink() for p in tree.rglob("*"))  # Harbor's lint flags mounts through links
    out = tmp_path / "ds"
    G.generate(G.Options(out=out, protocol="B", net="compose-none", tasks_root=tree, progress=False))
    reports, dproblems = V.Validator(tree, V.compose_available()).check_dataset(out, progress=False)
    assert dproblems == [] and len(reports) == 2 * len(summary)
    assert all(r.ok for r in reports), [(r.path.name, r.problems) for r in reports if not r.ok]


def test_write_readme_replaces_only_its_generated_block(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\nhand-written text\n")
    monkeypatch.setattr(run_all, "README", readme)
    run_all.write_readme("first table")
    run_all.write_readme("second table")
    text = readme.read_text()
    assert text.startswith("# Benchmarks\n\nhand-written text\n")
    assert "second table" in text and "first table" not in text
    assert text.count(run_all.BEGIN) == 1 and text.count(run_all.END) == 1


def test_run_all_rejects_an_unknown_section(capsys):
    with pytest.raises(SystemExit) as e:
        run_all.main(["--skip", "medai"])
    assert e.value.code == 2
    assert "unknown sections ['medai']" in capsys.readouterr().err
