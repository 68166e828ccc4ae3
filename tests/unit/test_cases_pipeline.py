"""The shared case-build pipeline (video_arena.cases) on a tiny synthetic game: ids, pacing, ground
truth, V_t caching, media-only rebuilds, manifest and the frame contract. Fast: a few seconds."""
from __future__ import annotations

import dataclasses

import hashlib
import json
import random
import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from video_arena.cases import build as B
from video_arena.media import frames as F
from video_arena.media.pacing import MIN_GAP_S, positions_at_frames, schedule, time_to_frame
from video_arena.core.tasks import CASE_ID_RE, parse_game_toml
from video_arena.games.base import GamePlugin, Step

TOML = """
name = "toy"
title = "Toy"
family = "board"
sides = ["red", "blue"]
render_size = [64, 48]
[instruction]
about = "toy"
example_row = '{}'
[events]
types = ["move", "pass"]
precedence = "x"
where = "a cell a0..a9"
types_without_where = ["pass"]
[events.descriptions]
move = "a move"
pass = "a pass"
[value]
definition = "P(red wins)"
neutral = 0.5
band = 0.05
state_above = "red"
state_below = "blue"
state_even = "even"
"""
DEF = parse_game_toml(TOML)


class Toy(GamePlugin):
    name = "toy"
    fps = 5
    lead_in_s = 2.0
    tail_s = 3.0

    def __init__(self):
        self.evaluations = 0

    @property
    def definition(self):
        return DEF

    def select_records(self, n, seed):
        rng = random.Random(seed)
        recs = []
        for i in range(40):
            k = rng.randint(3, 9)
            recs.append({"source": {"collection": "toy", "id": f"g{i}", "winner": "red"},
                         "moves": [rng.choice(["a1", "a2", "a3", "pass"]) for _ in range(k)]})
        return rng.sample(recs, n)

    def replay(self, record):
        return [Step("pass" if m == "pass" else "move", ("red", "blue")[i % 2], "" if m == "pass" else m)
                for i, m in enumerate(record["moves"])]

    def evaluate(self, record, progress=None):
        self.evaluations += 1
        n = len(record["moves"])
        vals = [0.5 + 0.45 * (i / n) * (1 if i % 3 else -1) for i in range(n + 1)]
        if progress:
            progress(n + 1, n + 1)
        return vals

    def render(self, record):
        for i in range(len(record["moves"]) + 1):
            yield self.render_position(record, i)

    def render_position(self, record, index):
        img = Image.new("RGB", (64, 48), (20, 20, 20))
        d = ImageDraw.Draw(img)
        for j in range(index):  # one bar per move made: every position looks different
            d.rectangle([4 + 6 * j, 8, 8 + 6 * j, 40], fill=(240, 200 - 20 * (j % 5), 60))
        return img

    def think_times(self, record, rng):
        return [rng.uniform(0.5, 6.0) for _ in record["moves"]]

    def provenance(self):
        return {"source": "synthetic", "licence": "CC0-1.0", "engine": "toy"}

    def evaluator(self):
        return {"engine": "toy", "version": "1"}


class Toy2(Toy):
    """A second toy game, continuous play (its frames weigh more in a media-only run's order)."""
    name = "toy2"
    continuous = True


@pytest.fixture
def toy(tmp_path, monkeypatch):
    plugin = Toy()
    monkeypatch.setitem(B._PLUGINS, "toy", plugin)
    (tmp_path / "tasks" / "toy").mkdir(parents=True)
    (tmp_path / "tasks" / "toy" / "game.toml").write_text(TOML)
    return plugin, tmp_path / "tasks"


def test_case_ids_are_random_looking_stable_and_distinct():
    ids = [B.case_id_for("chess", 1, f"src{i}") for i in range(200)]
    assert all(CASE_ID_RE.match(c) for c in ids)
    assert len(set(ids)) == 200
    assert ids == [B.case_id_for("chess", 1, f"src{i}") for i in range(200)]
    assert B.case_id_for("chess", 2, "src0") != ids[0]
    assert B.case_id_for("go", 1, "src0") != ids[0]
    taken = {ids[0]}
    assert B.case_id_for("chess", 1, "src0", taken) not in taken


def test_schedule_is_on_the_grid_and_respects_the_min_gap():
    rng = random.Random(3)
    gaps = [rng.uniform(0.01, 30) for _ in range(300)]
    s = schedule(gaps, fps=5, lead_in_s=4.0, tail_s=6.0)
    assert len(s.event_frames) == 300
    diffs = [b - a for a, b in zip(s.event_frames, s.event_frames[1:])]
    assert min(diffs) >= MIN_GAP_S * 5
    assert s.event_frames[0] >= 4 * 5
    assert all(abs(t * 5 - round(t * 5)) < 1e-9 for t in s.times)
    assert s.n_frames == s.event_frames[-1] + 30 + 1
    # long gaps are kept (rounded to the grid), not squeezed
    big = schedule([10.0, 20.0], fps=5, lead_in_s=0, tail_s=1)
    assert big.event_frames == (50, 150)
    with pytest.raises(ValueError):
        schedule([1.0, float("nan")], fps=5, lead_in_s=0, tail_s=1)
    with pytest.raises(ValueError):
        schedule([1.0, 0.0], fps=5, lead_in_s=0, tail_s=1)


def test_positions_at_frames_and_time_to_frame():
    assert positions_at_frames((2, 5), 7) == [0, 0, 1, 1, 1, 2, 2]
    assert time_to_frame(12.4, 5) == 62  # 12.4 * 5 = 61.99999... in floats
    assert time_to_frame(12.39, 5) == 61


def test_build_writes_gt_cases_manifest_and_media(toy):
    plugin, root = toy
    res = B.build_game("toy", root, root, n_cases=3, seed=7)
    assert len(res) == 3 and plugin.evaluations == 3
    gdir = root / "toy"
    cases = json.loads((gdir / "cases.json").read_text())
    ids = [c["case_id"] for c in cases["cases"]]
    assert ids == [cid for cid, _ in B.select("toy", 3, 7)]
    for c in cases["cases"]:
        assert set(c) == {"case_id", "duration_s", "n_events", "source"}
        assert "winner" not in json.dumps(c) and "moves" not in json.dumps(c)  # nothing about the match
    manifest = json.loads((gdir / "manifest.json").read_text())
    assert [e["case_id"] for e in manifest["cases"]] == ids
    assert list(manifest)[:3] == ["format", "game", "game_version"] and manifest["game_version"] == 1
    for cid in ids:
        gt_path, mp4 = gdir / "gt" / f"{cid}.json", gdir / "media" / f"{cid}.mp4"
        entry = next(e for e in manifest["cases"] if e["case_id"] == cid)
        assert entry["gt_sha256"] == hashlib.sha256(gt_path.read_bytes()).hexdigest()
        assert entry["media_sha256"] == hashlib.sha256(mp4.read_bytes()).hexdigest()
        assert entry["licence"] == "CC0-1.0" and entry["evaluator"] == {"engine": "toy", "version": "1"}
        gt = json.loads(gt_path.read_text())
        assert gt["format"] == "video-arena-gt/1" and gt["case_id"] == cid and gt["spec"] == DEF.judge_spec()
        assert gt["game_version"] == DEF.version == 1
        steps = plugin.replay(gt["record"])
        assert len(gt["events"]) == len(steps) and len(gt["v_series"]) == len(steps) + 1
        ts = [e["t"] for e in gt["events"]]
        assert ts == sorted(ts) and all(b - a >= MIN_GAP_S - 1e-9 for a, b in zip(ts, ts[1:]))
        for e, s, (t, v) in zip(gt["events"], steps, gt["v_series"][1:]):
            assert (e["type"], e["actor"], e["where"]) == (s.type, s.actor, s.where)
            assert e["delta"] == DEF.delta_of(e["v_before"], e["v_after"])
            assert e["state"] == DEF.state_of(e["v_after"])
            assert t == e["t"] and v == e["v_after"]
        assert gt["duration_s"] == gt["video"]["n_frames"] / 5
        info = F.video_info(mp4)
        assert (info["width"], info["height"], info["codec"], info["pix_fmt"]) == (64, 48, "h264", "yuv420p")
        assert info["n_frames"] == gt["video"]["n_frames"]


def test_frame_contract_after_at_event_before_one_second_earlier(toy):
    plugin, root = toy
    B.build_game("toy", root, root, n_cases=2, seed=7)
    for c in json.loads((root / "toy" / "cases.json").read_text())["cases"]:
        gt = json.loads((root / "toy" / "gt" / f"{c['case_id']}.json").read_text())
        mp4 = root / "toy" / "media" / f"{c['case_id']}.mp4"
        times = [e["t"] for e in gt["events"]] + [e["t"] - 1.0 for e in gt["events"]]
        got = F.decode_frames(mp4, times)
        for i, e in enumerate(gt["events"]):
            after, before = plugin.render_position(gt["record"], i + 1), plugin.render_position(gt["record"], i)
            assert F.position_index_at(gt, e["t"]) == i + 1 and F.position_index_at(gt, e["t"] - 1.0) == i
            assert F.frame_distance(got[e["t"]], after) < 8  # the whole frame is the re-render (H.264 noise)
            d_after, d_wrong = F.masked_distances(got[e["t"]], after, before)
            assert d_after < 30 and d_wrong > 2 * d_after, (i, d_after, d_wrong)
            d_before, d_wrong = F.masked_distances(got[e["t"] - 1.0], before, after)
            assert d_before < 30 and d_wrong > 2 * d_before, (i, d_before, d_wrong)


def test_rebuild_reuses_committed_values_and_is_byte_identical(toy):
    plugin, root = toy
    B.build_game("toy", root, root, n_cases=2, seed=7)
    gdir = root / "toy"
    before = {p.name: p.read_bytes() for p in sorted(gdir.rglob("*")) if p.is_file()}
    plugin.evaluations = 0
    res = B.build_game("toy", root, root, n_cases=2, seed=7)
    assert plugin.evaluations == 0 and not any(r["evaluated"] for r in res)
    after = {p.name: p.read_bytes() for p in sorted(gdir.rglob("*")) if p.is_file()}
    assert after == before
    # --force-values runs the engine again (same values here, so same bytes)
    B.build_game("toy", root, root, n_cases=2, seed=7, force_values=True)
    assert plugin.evaluations == 2
    # another evaluator identity invalidates the cache
    plugin.evaluator = lambda: {"engine": "toy", "version": "2"}
    plugin.evaluations = 0
    B.build_game("toy", root, root, n_cases=2, seed=7)
    assert plugin.evaluations == 2
    # so do other events for the same record (a change of the plugin's event rules)
    replay = plugin.replay
    plugin.replay = lambda rec: [dataclasses.replace(s, actor=plugin.definition.sides[1 - plugin.definition.sides.index(s.actor)])
                                 for s in replay(rec)]
    plugin.evaluations = 0
    B.build_game("toy", root, root, n_cases=2, seed=7)
    assert plugin.evaluations == 2


def test_media_only_renders_from_gt_without_the_engine_and_checks_the_manifest(toy, monkeypatch):
    plugin, root = toy
    B.build_game("toy", root, root, n_cases=2, seed=7)
    gdir = root / "toy"
    mp4s = sorted((gdir / "media").glob("*.mp4"))
    ref = {p.name: p.read_bytes() for p in mp4s}
    for p in mp4s:
        p.unlink()

    def boom(*a, **k):
        raise AssertionError("--media-only must not evaluate")

    monkeypatch.setattr(plugin, "evaluate", boom)
    monkeypatch.setattr(plugin, "select_records", boom)
    res = B.build_game("toy", root, root, media_only=True)
    assert all(r["media_matches_manifest"] for r in res)
    assert {p.name: p.read_bytes() for p in sorted((gdir / "media").glob("*.mp4"))} == ref
    # a tampered manifest is reported
    man = json.loads((gdir / "manifest.json").read_text())
    man["cases"][0]["media_sha256"] = "0" * 64
    (gdir / "manifest.json").write_text(json.dumps(man))
    logs = []
    res = B.build_game("toy", root, root, media_only=True, log=logs.append)
    assert sum(not r["media_matches_manifest"] for r in res) == 1 and len(logs) == 1
    # --record-media writes the rendered digest back (and only it); the next check passes
    logs = []
    res = B.build_game("toy", root, root, media_only=True, log=logs.append, record_media=True)
    assert all(r["media_matches_manifest"] for r in res) and len(logs) == 1 and "recorded" in logs[0]
    after = json.loads((gdir / "manifest.json").read_text())
    assert after["cases"][0]["media_sha256"] == hashlib.sha256(ref[f"{after['cases'][0]['case_id']}.mp4"]).hexdigest()
    assert after["cases"][1:] == man["cases"][1:]


def test_subset_rebuild_keeps_the_other_cases_and_stale_cases_are_removed(toy):
    plugin, root = toy
    B.build_game("toy", root, root, n_cases=3, seed=7)
    gdir = root / "toy"
    manifest = (gdir / "manifest.json").read_bytes()
    ids = [c["case_id"] for c in json.loads((gdir / "cases.json").read_text())["cases"]]
    (gdir / "gt" / f"{ids[1]}.json").unlink()
    B.build_game("toy", root, root, n_cases=3, seed=7, only={ids[1]})
    assert (gdir / "manifest.json").read_bytes() == manifest
    B.build_game("toy", root, root, n_cases=2, seed=8)
    left = sorted(p.stem for p in (gdir / "gt").glob("*.json"))
    assert left == sorted(c["case_id"] for c in json.loads((gdir / "cases.json").read_text())["cases"])


def test_values_outside_the_range_or_vocabulary_fail_the_build(toy, monkeypatch):
    plugin, root = toy
    monkeypatch.setattr(plugin, "evaluate", lambda record, progress=None: [1.5] * (len(record["moves"]) + 1))
    with pytest.raises(B.BuildError, match="outside"):
        B.build_game("toy", root, root, n_cases=1, seed=7)
    monkeypatch.setattr(plugin, "evaluate", lambda record, progress=None: [0.5] * len(record["moves"]))
    with pytest.raises(B.BuildError, match="steps"):
        B.build_game("toy", root, root, n_cases=1, seed=7)


def test_cli_main_builds_and_rejects_unknown_games(toy, capsys):
    plugin, root = toy
    assert B.main(["--games", "toy", "--tasks-root", str(root), "--cases", "1"]) == 0
    assert len(json.loads((root / "toy" / "cases.json").read_text())["cases"]) == 1
    capsys.readouterr()
    assert B.main(["--games", "toy", "--tasks-root", str(root), "--media-only"]) == 0
    size = json.loads((root / "toy" / "manifest.json").read_text())["cases"][0]["media_bytes"]
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("toy: "))
    assert line.endswith(f"1 match the manifest; {size / 1e6:.1f} MB, {size / 1e6:.2f}-{size / 1e6:.2f} MB each"), line
    with pytest.raises(SystemExit):
        B.main(["--games", "nosuchgame", "--tasks-root", str(root)])


def test_class_shares_count_every_event_of_the_built_cases(toy):
    plugin, root = toy
    B.build_game("toy", root, root, n_cases=3, seed=7)
    sh = B.class_shares(root, "toy")
    n = sum(len(json.loads(p.read_text())["events"]) for p in (root / "toy" / "gt").glob("*.json"))
    assert sh["n_events"] == n > 0
    assert abs(sum(sh["delta"].values()) - 1) < 0.01 and abs(sum(sh["state"].values()) - 1) < 0.01
    assert set(sh["delta"]) <= {"up", "down", "flat"} and set(sh["state"]) <= {"red", "blue", "even"}
    assert sum(sh["types"].values()) == n and set(sh["types"]) <= set(plugin.definition.event_types)


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_parallel_build_gives_the_same_bytes_as_one_process(toy, tmp_path):
    plugin, root = toy
    B.build_game("toy", root, root, n_cases=3, seed=7, jobs=1)
    one = _tree_bytes(root / "toy")
    par = tmp_path / "par"
    shutil.copytree(root / "toy", par / "toy", ignore=shutil.ignore_patterns("gt", "media", "*.json"))
    res = B.build_game("toy", par, par, n_cases=3, seed=7, jobs=3)
    assert len(res) == 3
    assert _tree_bytes(par / "toy") == one
    # media-only in parallel, longest first: same bytes, every case checked against the manifest
    res = B.build_game("toy", par, par, media_only=True, jobs=2)
    assert len(res) == 3 and all(r["media_matches_manifest"] for r in res)
    assert _tree_bytes(par / "toy") == one


def test_cli_progress_total_covers_every_planned_case_and_is_quiet_off_a_terminal(toy, capsys):
    plugin, root = toy
    assert B.planned_cases(root, ["toy"], 4, False, None) == 4
    assert B.main(["--games", "toy", "--tasks-root", str(root), "--cases", "2"]) == 0
    assert B.planned_cases(root, ["toy"], 4, True, None) == 2  # media-only: the cases in cases.json
    cid = json.loads((root / "toy" / "cases.json").read_text())["cases"][0]["case_id"]
    assert B.planned_cases(root, ["toy"], 4, True, {cid}) == 1
    assert B.default_jobs() >= 1
    with pytest.raises(SystemExit):
        B.main(["--games", "toy", "--tasks-root", str(root), "--jobs", "0"])
    err = capsys.readouterr().err
    assert "case/s" not in err and "it/s" not in err  # no bar when stderr is not a terminal


def test_media_carry_the_encoder_settings_the_manifest_records(toy):
    """x264 writes the options it really used into the stream (an SEI): they must be the chosen ones
    (ultrafast + aq-mode=0:mbtree=0, one thread, a keyframe every KEYFRAME_S s) and what
    manifest.json["encoder"] says, so a silently ignored option or a stale manifest fails here."""
    import re

    from video_arena.media import encode as E

    plugin, root = toy
    B.build_game("toy", root, root, n_cases=1, seed=7)
    manifest = json.loads((root / "toy" / "manifest.json").read_text())
    assert manifest["encoder"] == json.loads(json.dumps(E.encoder_info()))
    enc = manifest["encoder"]
    assert (enc["preset"], enc["x264_params"], enc["keyframe_s"]) == (E.PRESET, E.X264_PARAMS, E.KEYFRAME_S)
    cid = manifest["cases"][0]["case_id"]
    data = (root / "toy" / "media" / f"{cid}.mp4").read_bytes()
    m = re.search(rb"x264 - core \d+.*? options: ([^\x00\x80]+)", data)
    assert m, "no x264 options SEI in the file"
    opts = dict(kv.split("=", 1) for kv in m.group(1).decode("ascii").split() if "=" in kv)
    assert E.PRESET == "ultrafast" and opts["me"] == "dia" and opts["subme"] == "0"   # ultrafast's search
    assert opts["cabac"] == "0" and opts["bframes"] == "0"                         # ultrafast's coding
    assert opts["aq"] == "0" and opts["mbtree"] == "0"  # no adaptive quantization, no macroblock tree
    assert opts["threads"] == "1" and opts["lookahead_threads"] == "1" and opts["sliced_threads"] == "0"
    assert opts["keyint"] == str(E.KEYFRAME_S * plugin.fps) and opts["keyint_min"] == str(plugin.fps)
    assert opts["crf"].startswith(f"{E.CRF}.")


def test_media_only_for_several_games_runs_the_costliest_cases_first_across_games(toy, monkeypatch):
    """One pool for every game's cases, ordered by frames (x CONTINUOUS_FRAME_COST for continuous play), each
    game checked against its manifest when its last case is done; a game that cannot start fails alone."""
    plugin, root = toy
    monkeypatch.setitem(B._PLUGINS, "toy2", Toy2())
    (root / "toy2").mkdir()
    (root / "toy2" / "game.toml").write_text(TOML.replace('name = "toy"', 'name = "toy2"'))
    B.build_game("toy", root, root, n_cases=3, seed=7)
    B.build_game("toy2", root, root, n_cases=2, seed=8)
    (root / "broken").mkdir()
    monkeypatch.setitem(B._PLUGINS, "broken", Toy())
    cost = {}
    for g, w in (("toy", 1), ("toy2", B.CONTINUOUS_FRAME_COST)):
        for p in (root / g / "gt").glob("*.json"):
            cost[(g, p.stem)] = w * json.loads(p.read_text())["video"]["n_frames"]
    order, real = [], B.media_only_case
    monkeypatch.setattr(B, "media_only_case", lambda g, cid, *a: order.append((g, cid)) or real(g, cid, *a))
    finished, logs = [], []
    done, failed = B.render_media_all(["toy", "broken", "toy2"], root, root, jobs=1, log=logs.append,
                                      on_game_done=lambda g, res: finished.append((g, len(res))))
    assert [cost[k] for k in order] == sorted(cost.values(), reverse=True) and len(order) == 5
    assert {g for g, _ in order} == {"toy", "toy2"}
    assert sorted(finished) == [("toy", 3), ("toy2", 2)] and not logs
    assert all(r["media_matches_manifest"] for res in done.values() for r in res)
    assert list(failed) == ["broken"] and "game.toml" in str(failed["broken"])
    monkeypatch.setattr(B, "media_only_case", real)   # the pool's workers pickle it
    # the CLI: a line per game and exit 1 for the broken one; with the good games only, exit 0
    assert B.main(["--media-only", "--games", "toy,toy2,broken", "--tasks-root", str(root), "--jobs", "2"]) == 1
    assert B.main(["--media-only", "--games", "toy,toy2", "--tasks-root", str(root), "--jobs", "2"]) == 0


def test_gt_only_restamps_the_ground_truth_and_manifest_with_the_definitions_version(toy, monkeypatch, capsys):
    plugin, root = toy
    B.build_game("toy", root, root, n_cases=2, seed=7)
    gdir = root / "toy"
    before = {p.relative_to(gdir): p.read_bytes() for p in sorted(gdir.rglob("*")) if p.is_file()}
    assert B.restamp_game("toy", root) == 0  # the same definition: the same bytes
    assert {p.relative_to(gdir): p.read_bytes() for p in sorted(gdir.rglob("*")) if p.is_file()} == before
    v2 = dataclasses.replace(DEF, version=2)
    monkeypatch.setattr(Toy, "definition", property(lambda self: v2))
    plugin.evaluations = 0
    assert B.main(["--games", "toy", "--tasks-root", str(root), "--gt-only"]) == 0
    assert "toy: 3 file(s) rewritten from the committed ground truth (game version 2)" in capsys.readouterr().out
    assert plugin.evaluations == 0  # no engine
    manifest = json.loads((gdir / "manifest.json").read_text())
    old_manifest = json.loads(before[Path("manifest.json")])
    assert manifest["game_version"] == 2 and list(manifest)[:3] == ["format", "game", "game_version"]
    for new_e, old_e in zip(manifest["cases"], old_manifest["cases"]):
        cid = new_e["case_id"]
        gt, old_gt = (json.loads((gdir / "gt" / f"{cid}.json").read_text()),
                      json.loads(before[Path("gt") / f"{cid}.json"]))
        assert gt["game_version"] == 2 and {**gt, "game_version": 1} == old_gt
        assert new_e["gt_sha256"] == hashlib.sha256((gdir / "gt" / f"{cid}.json").read_bytes()).hexdigest()
        assert new_e["media_sha256"] == old_e["media_sha256"] and new_e["gt_sha256"] != old_e["gt_sha256"]
    assert (gdir / "media" / f"{cid}.mp4").read_bytes() == before[Path("media") / f"{cid}.mp4"]
    # a ground truth whose events the plugin no longer makes is not re-stamped: it needs the engine
    monkeypatch.setattr(plugin, "replay", lambda rec: Toy.replay(plugin, rec)[:-1])
    with pytest.raises(B.BuildError, match="cannot be re-made from itself"):
        B.restamp_game("toy", root)
