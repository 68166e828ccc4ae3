"""The dataset metric script (harbor_templates/metric.py) computes `video-arena score`'s headline
(scoring/statistics.py: attempts of a case averaged, the mean of cases per game, the mean of games),
and its contract constants equal the verifier's and the judge's."""
from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys

import numpy as np

from video_arena.core.judge_loader import load_judge
from video_arena.safe_io import finite_number
from video_arena.harbor import spec as S
from video_arena.paths import repo_resource
from video_arena.scoring.statistics import case_means


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


METRIC = _load(S.metric_script(), "va_metric_script")
VERIFIER = _load(repo_resource("harbor_templates", "tests", "score_harbor.py"), "va_score_harbor")


def test_contract_constants_equal():
    assert METRIC.CASE_KEY_PREFIX == VERIFIER.CASE_KEY_PREFIX
    assert METRIC.METRICS == load_judge().REWARD_KEYS[:1]
    assert VERIFIER.case_key({"game": "chess", "case_id": "Ab1"}) == "case:chess/Ab1"
    assert VERIFIER.case_key({"game": "chess"}) is None


def test_the_script_reads_a_number_as_safe_io_does():
    """metric.py runs in Harbor's environment, without the package: its `_number` is a copy of
    safe_io.finite_number (no bounds), held equal here on what a hand-edited reward file can hold."""
    for v in (0.5, 0, 1, -2.5, True, False, None, "0.5", [1.0], {}, float("nan"), float("inf"), -float("inf"),
              10 ** 400, -(10 ** 400), 10 ** 300, json.loads("1e999")):
        assert METRIC._number(v) == finite_number(v), v
    lines = ['{"reward": NaN, "case:a/x": 1}', '{"reward": 1e999, "case:a/y": 1}',
             '{"reward": %s, "case:b/z": 1}' % ("9" * 401), '{"reward": 0.25, "case:b/w": 1}']
    assert METRIC.headline(lines) == {"reward": 0.25, "reward/b": 0.25, "n_games": 2, "n_cases": 4,
                                      "n_trials": 4, "n_unnamed": 0}


def test_headline_is_mean_of_game_means():
    rng = random.Random(7)
    lines, by_game = [], {}
    for g, n_cases in (("chess", 5), ("go", 2), ("poker", 1)):
        for c in range(n_cases):
            for _ in range(rng.randint(1, 3)):  # attempts
                v = rng.random()
                by_game.setdefault(g, {}).setdefault(f"c{c}", []).append(v)
                lines.append(json.dumps({"reward": v, "t1_f1": 0.0, f"case:{g}/c{c}": 1}))
    lines += ["null", json.dumps({"reward": 1.0})]  # a trial without rewards; one that names no case
    out = METRIC.headline(lines)
    game_means = {g: float(np.mean(list(case_means(cs).values()))) for g, cs in by_game.items()}
    assert abs(out["reward"] - float(np.mean(list(game_means.values())))) < 1e-12
    assert all(abs(out[f"reward/{g}"] - m) < 1e-12 for g, m in game_means.items())
    assert out["n_games"] == 3 and out["n_cases"] == 8 and out["n_unnamed"] == 1
    flat = float(np.mean([v for cs in by_game.values() for vs in cs.values() for v in vs]))
    assert abs(out["reward"] - flat) > 1e-3  # the case this exists for: not Harbor's flat mean


def test_script_runs_as_harbor_runs_it(tmp_path):
    (tmp_path / "r.jsonl").write_text('{"reward": 0.5, "case:a/x": 1}\n{"reward": 1, "case:b/y": 1}\n')
    p = subprocess.run([sys.executable, "-I", str(S.metric_script()), "-i", str(tmp_path / "r.jsonl"),
                        "-o", str(tmp_path / "m.json")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "m.json").read_text())["reward"] == 0.75
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    p = subprocess.run([sys.executable, "-I", str(S.metric_script()), "-i", str(tmp_path / "bad.jsonl"),
                        "-o", str(tmp_path / "m2.json")], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_uv_is_a_dependency_pinned_as_setup_installs_it():
    """Harbor runs the metric with `uv`: the project depends on it, at the version setup.sh installs."""
    import re
    pyproject = repo_resource("pyproject.toml").read_text()
    setup = repo_resource("scripts", "setup.sh").read_text()
    (pinned,) = re.findall(r'"uv==([^"]+)"', pyproject)
    assert re.findall(r"^UV_VERSION=(\S+)$", setup, re.M) == [pinned]
