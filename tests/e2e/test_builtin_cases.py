"""The built-in cases of every game that has a plugin and cases in tasks/ (generic: a new game's cases
are checked as soon as they are built).

Cheap checks run on every case: the ground truth agrees with the record (replaying the record gives each
event's type, actor and where), V_t is in range and the final V_t agrees with a decisive result, the
files match the manifest, and the oracle answer scores 1.0 with THE judge. The frame contract (the frame
at an event's time shows the position after it, 1 s earlier the position before it) is checked on two
cases per game, and a rebuild of one case per game (selection, pacing, gt, media) must be byte-identical.
"""
from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.cases import build as B
from video_arena.media import frames as F
from video_arena.core.tasks import CASE_ID_RE, load_game
from video_arena.games.base import game_names, load_plugin

pytestmark = pytest.mark.slow

TASKS = paths.default_tasks_root()
FRAME_CASES_PER_GAME = 2


def _games() -> list[str]:
    out = []
    for g in game_names():
        if load_plugin(g) is not None and (TASKS / g / "cases.json").is_file():
            if json.loads((TASKS / g / "cases.json").read_text())["cases"]:
                out.append(g)
    return out


GAMES = _games()


def _case_ids(game: str) -> list[str]:
    return [c["case_id"] for c in json.loads((TASKS / game / "cases.json").read_text())["cases"]]


ALL_CASES = [(g, c) for g in GAMES for c in _case_ids(g)]
FRAME_CASES = [(g, c) for g in GAMES for c in _case_ids(g)[:FRAME_CASES_PER_GAME]]


@lru_cache(maxsize=None)
def _gt(game: str, case_id: str) -> dict:
    return json.loads((TASKS / game / "gt" / f"{case_id}.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _manifest(game: str) -> dict:
    return json.loads((TASKS / game / "manifest.json").read_text(encoding="utf-8"))


def _entry(game: str, case_id: str) -> dict:
    return next(e for e in _manifest(game)["cases"] if e["case_id"] == case_id)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_some_game_has_built_in_cases():
    assert "chess" in GAMES, "tasks/chess has no built-in cases: run `video-arena build-cases --games chess`"


@pytest.mark.parametrize("game", GAMES)
def test_cases_file_and_manifest_cover_the_same_cases(game):
    cases = json.loads((TASKS / game / "cases.json").read_text())["cases"]
    ids = [c["case_id"] for c in cases]
    assert len(ids) == len(set(ids)) and all(CASE_ID_RE.match(i) for i in ids)
    assert [e["case_id"] for e in _manifest(game)["cases"]] == ids
    assert sorted(p.stem for p in (TASKS / game / "gt").glob("*.json")) == sorted(ids)
    for c in cases:  # cases.json says nothing about the match's events
        assert set(c) == {"case_id", "duration_s", "n_events", "source"}
        gt = _gt(game, c["case_id"])
        assert c["n_events"] == len(gt["events"]) and c["duration_s"] == gt["duration_s"]
        text = json.dumps(c["source"])
        assert not any(e["where"] and f'"{e["where"]}"' in text for e in gt["events"])
        assert all(k not in c["source"] for k in ("result", "white", "black", "winner", "moves"))
    prov = _manifest(game)["provenance"]
    assert prov.get("licence") and prov.get("source") and prov.get("engine")


@pytest.mark.parametrize("game,case_id", ALL_CASES)
def test_gt_agrees_with_the_record_and_the_manifest(game, case_id):
    plugin, d = load_plugin(game), load_game(game, TASKS)
    gt = _gt(game, case_id)
    assert _sha(TASKS / game / "gt" / f"{case_id}.json") == _entry(game, case_id)["gt_sha256"]
    assert gt["format"] == "video-arena-gt/1" and gt["game"] == game and gt["case_id"] == case_id
    assert gt["spec"] == d.judge_spec(), "gt spec differs from tasks/<game>/game.toml: rebuild"
    assert gt["evaluator"] == _entry(game, case_id)["evaluator"] and gt["evaluator"]
    steps = plugin.replay(gt["record"])
    assert len(steps) == len(gt["events"]) > 0
    fps = gt["video"]["fps"]
    prev = -math.inf
    for i, (e, s) in enumerate(zip(gt["events"], steps)):
        assert (e["type"], e["actor"], e["where"]) == (s.type, s.actor, s.where), f"event {i}"
        assert e["t"] > prev and abs(e["t"] * fps - round(e["t"] * fps)) < 1e-6, f"event {i} time {e['t']}"
        prev = e["t"]
        assert e["delta"] == d.delta_of(e["v_before"], e["v_after"]) and e["state"] == d.state_of(e["v_after"])
    assert gt["events"][-1]["t"] < gt["duration_s"] == round(gt["video"]["n_frames"] / fps, 4)
    assert tuple(d.render_size) == (gt["video"]["width"], gt["video"]["height"])


@pytest.mark.parametrize("game,case_id", ALL_CASES)
def test_values_in_range_and_final_value_agrees_with_the_result(game, case_id):
    plugin, d = load_plugin(game), load_game(game, TASKS)
    gt = _gt(game, case_id)
    lo, hi = plugin.value_range
    series = gt["v_series"]
    assert len(series) == len(gt["events"]) + 1 and series[0][0] == 0.0
    assert all(lo <= v <= hi and math.isfinite(v) for _, v in series)
    for e, (t, v), (_, v_prev) in zip(gt["events"], series[1:], series):
        assert (t, v, v_prev) == (e["t"], e["v_after"], e["v_before"])
    final = plugin.final_value(gt["record"])
    if final is not None:
        assert d.state_of(series[-1][1]) == d.state_of(final), (
            f"final V_t {series[-1][1]} disagrees with the recorded result (V = {final})")


@pytest.mark.parametrize("game,case_id", ALL_CASES)
def test_oracle_answer_scores_one(J, game, case_id):
    gt = J.load_gt(str(TASKS / game / "gt" / f"{case_id}.json"))
    oracle = J.oracle_answer(gt)
    rec = J.judge(gt, json.dumps(oracle))
    assert rec["format_error"] is None
    assert J.reward_of(rec) == {"reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}
    # and the judge does look at delta: one flipped label costs reward
    rows = oracle["events"]
    rows[0]["delta"] = "up" if rows[0]["delta"] != "up" else "down"
    assert J.judge(gt, oracle)["reward"] < 1.0


@pytest.fixture(scope="module")
def media_dir(tmp_path_factory):
    """Media of the frame-check cases: tasks/<game>/media when it matches the manifest, else rebuilt
    from the committed ground truth (media are gitignored)."""
    root = tmp_path_factory.mktemp("media")
    out, need = {}, []
    for game, cid in FRAME_CASES:
        mp4 = TASKS / game / "media" / f"{cid}.mp4"
        if mp4.is_file() and _sha(mp4) == _entry(game, cid).get("media_sha256"):
            out[(game, cid)] = mp4
        else:
            need.append((game, cid))
    if need:  # one pool on every core, as build-cases --media-only renders them
        _, failed = B.render_media_all(sorted({g for g, _ in need}), TASKS, root, jobs=B.default_jobs(),
                                       only={c for _, c in need}, log=lambda s: None)
        assert not failed, failed
        out |= {(g, c): root / g / "media" / f"{c}.mp4" for g, c in need}
    return out


@pytest.mark.parametrize("game,case_id", FRAME_CASES)
def test_frame_at_event_shows_after_and_one_second_before_shows_before(media_dir, game, case_id):
    plugin, gt = load_plugin(game), _gt(game, case_id)
    mp4 = media_dir[(game, case_id)]
    info = F.video_info(mp4)
    assert (info["codec"], info["pix_fmt"]) == ("h264", "yuv420p")
    assert (info["width"], info["height"]) == (gt["video"]["width"], gt["video"]["height"])
    assert info["n_frames"] == gt["video"]["n_frames"]
    events = gt["events"]
    got = F.decode_frames(mp4, [e["t"] for e in events] + [e["t"] - 1.0 for e in events])
    if plugin.continuous:  # continuous play: each frame is the re-render of the record's state at that frame
        fps = gt["video"]["fps"]
        for i, e in enumerate(events):
            for t in (e["t"], e["t"] - 1.0):
                want = plugin.frame_image(gt["record"], round(t * fps))
                assert F.frame_distance(got[t], want) < 6, f"event {i} at {e['t']}: frame at {t} is not the re-render"
        return
    images = list(plugin.render(gt["record"]))  # position i = after i events
    assert len(images) == len(events) + 1
    for i, e in enumerate(events):
        after, before = images[i + 1], images[i]
        assert F.position_index_at(gt, e["t"]) == i + 1 and F.position_index_at(gt, e["t"] - 1.0) == i
        assert F.frame_distance(got[e["t"]], after) < 6, f"event {i}: the frame is not the re-render"
        d_ok, d_bad = F.masked_distances(got[e["t"]], after, before)
        assert d_ok < 25 and d_bad > 2 * d_ok, f"event {i} at {e['t']}: frame does not show the position after"
        d_ok, d_bad = F.masked_distances(got[e["t"] - 1.0], before, after)
        assert d_ok < 25 and d_bad > 2 * d_ok, f"event {i} at {e['t']} - 1 s: frame does not show the position before"


@pytest.mark.parametrize("game", GAMES)
def test_rebuilding_a_case_is_byte_identical(tmp_path, game):
    """Selection, case id, pacing, gt and media of the shortest case, rebuilt from scratch into a fresh
    tree (V_t from the committed gt, as a rebuild does): every byte equals the manifest."""
    manifest = _manifest(game)
    ids = _case_ids(game)
    selected = B.select(game, len(ids), manifest["seed"])
    assert [cid for cid, _ in selected] == ids, "the seeded selection no longer gives cases.json's cases"
    records = dict(selected)
    cid = min(ids, key=lambda c: _gt(game, c)["duration_s"])
    assert json.loads(json.dumps(records[cid])) == _gt(game, cid)["record"]
    (tmp_path / game / "gt").mkdir(parents=True)
    (tmp_path / game / "gt" / f"{cid}.json").write_bytes((TASKS / game / "gt" / f"{cid}.json").read_bytes())
    summary = B.build_case(game, records[cid], cid, tmp_path, tmp_path)
    assert not summary["evaluated"], "the rebuild ran the engine although the gt holds V_t"
    entry = _entry(game, cid)
    assert _sha(tmp_path / game / "gt" / f"{cid}.json") == entry["gt_sha256"]
    assert _sha(tmp_path / game / "media" / f"{cid}.mp4") == entry["media_sha256"], (
        "media differ from the manifest (encoder versions in manifest.json['encoder'])")


@pytest.mark.parametrize("game", GAMES)
def test_protocol_a_grid_takes_the_reference_frames_of_every_video(media_dir, game):
    """The encoder settings never move a frame: for every video of the game present in tasks/ (and
    matching the manifest; in a clean clone, the frame-check cases rendered by `media_dir`), Protocol A's
    grid, planned from the file's own probe, takes still k at t_k of the reference definition from source
    frame floor(t_k * fps) of the ground truth's frame grid, and the cases' sparse keyframes keep it on
    the one-pass path."""
    from fractions import Fraction

    from video_arena.media import grid as G

    present = {cid: TASKS / game / "media" / f"{cid}.mp4" for cid in _case_ids(game)
               if (TASKS / game / "media" / f"{cid}.mp4").is_file()
               and _sha(TASKS / game / "media" / f"{cid}.mp4") == _entry(game, cid).get("media_sha256")}
    present = present or {cid: mp4 for (g, cid), mp4 in media_dir.items() if g == game}
    assert present, f"no {game} video to check"
    spec = G.GridSpec()
    for cid, mp4 in present.items():
        video = _gt(game, cid)["video"]
        fps, n = int(video["fps"]), int(video["n_frames"])
        info = G.probe(mp4)
        assert info.pts == [Fraction(k, fps) for k in range(n)], f"{cid}: frame timestamps moved"
        assert info.duration == Fraction(n, fps)
        plan = G.plan_grid(info, spec)
        times, _ = G.grid_times(Fraction(n, fps), spec)
        assert plan.video_ts == times
        assert plan.source_index == [min(n - 1, math.floor(t * fps)) for t in times], cid
        assert G.choose_mode(plan, info.pts, info.key_pts) == "pass", cid
