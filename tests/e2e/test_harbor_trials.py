"""Real Harbor trials on real Docker: both protocols, one case of every game that has cases.

`harbor run -a oracle` must score 1.0 on all four reward keys with solve.sh exiting 0 (it checks that
the video and the B task text reached the sandbox), and `harbor run -a nop` 0.0 on all four with no
exception, with --net compose-none (this machine has no Harbor egress control). The built-in tasks tree is
used when some game has cases and their videos; otherwise the fixture tree (tests/fixtures/harbor_tree).
`video-arena oracle-check --all` runs the same over every case.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from video_arena import paths
from video_arena.core import list_games, load_cases
from video_arena.harbor import spec as S
from video_arena.harbor.generate import Options, generate
from video_arena.harbor.oracle_check import check_jobs, print_table
from video_arena.harbor.validate import Validator, compose_available

pytestmark = [pytest.mark.slow, pytest.mark.docker]

FIXTURE_TREE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_tree"


def tasks_tree_with_cases() -> tuple[Path, list[str]]:
    """The built-in tree's games that have cases whose first video exists, else the fixture tree."""
    root = paths.default_tasks_root()
    games = []
    if root.is_dir():
        for g in list_games(root):
            cases = load_cases(g, root)
            if cases and (root / g / "media" / f"{cases[0]['case_id']}.mp4").is_file():
                games.append(g)
    if games:
        return root, games
    return FIXTURE_TREE, list_games(FIXTURE_TREE)


def test_oracle_scores_one_and_nop_zero_on_real_trials(sandbox_image, tmp_path):
    base_image = sandbox_image  # conftest: builds video-arena/base:latest unless it is current
    root, games = tasks_tree_with_cases()
    datasets = {}
    for protocol in S.PROTOCOLS:
        out = tmp_path / f"dataset-{protocol.lower()}"
        res = generate(Options(out=out, protocol=protocol, net="compose-none", media="mount", base_image=base_image,
                               tasks_root=root, games=games, limit=1, progress=False))
        assert len(res.tasks) == len(games) and not res.missing_media
        reports, dproblems = Validator(root, compose_available()).check_dataset(out, progress=False)
        assert not dproblems and all(r.ok for r in reports), [(r.path.name, r.problems) for r in reports]
        datasets[protocol] = out
    trials = check_jobs(datasets, tmp_path / "jobs", "e2e", paths.media_root(root), n_concurrent=2)
    print_table(trials)
    real = [t for t in trials if t.trial != "-"]
    assert len(real) == 2 * 2 * len(games)  # {A, B} x {oracle, nop} x one case per game
    assert [t for t in trials if not t.ok] == []
    assert all({k: v for k, v in t.rewards.items() if not k.startswith("case:")} == {"reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}
               for t in real if t.agent == "oracle")
    assert all({k: v for k, v in t.rewards.items() if not k.startswith("case:")} == {"reward": 0.0, "t1_f1": 0.0, "t2_macro_acc": 0.0, "t3_macro_acc": 0.0}
               and t.exception is None for t in real if t.agent == "nop")
