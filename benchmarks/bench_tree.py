"""A full-size tasks tree for the benchmarks: every game with exactly N cases (default 9 x 20).

The tree is a temporary copy. Each game's definition files (game.toml, instruction.md,
answer_seed.json) come from the source tasks tree. Its real cases (ground truth and video) are used
first, up to N; the rest are **synthetic stand-ins**, clearly so:

  * a game with real cases is topped up with copies of them under new case ids (R0000001, ...):
    the same ground truth and video, a new name;
  * a game without cases (the five whose matches come from an external tree) gets seeded synthetic
    matches on its own definition: ~`events` rows of its event types, sides and `where` rule (values
    chosen so the importer's coordinate rule accepts them), V_t consistent with delta and state, and
    a stand-in video (one real built-in video, hard-linked: mount-mode tasks only need it readable).

Nothing here is a real match; it exists so that a command's cost for the full benchmark can be
measured on this checkout's own code before the real cases exist.
"""
from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

from video_arena.core.tasks import GT_FORMAT, load_cases, load_game
from video_arena.games.base import game_names
from video_arena.importing.rules import NoWhereRule, where_error

GAME_FILES = ("game.toml", "instruction.md", "answer_seed.json")
#: where values tried for synthetic rows; each game keeps those its importer rule accepts per type
WHERE_POOL = ("e4", "d5", "g1", "c8", "h8", "a1", "d4", "q16", "k10", "h7", "a", "b",
              "top_t1", "mid_t2", "bot_t3", "base_t4", "top_melee", "bot_ranged", "1a", "3b", "6c",
              "front", "mid", "back", "net", "out", "3", "77", "888", "tjqka", "br")


def _new_id(k: int) -> str:
    return f"R{k:07d}"


def _synthetic_gt(game: str, case_id: str, rng: random.Random, n_events: int, tasks_root: Path) -> dict:
    d = load_game(game, tasks_root)
    wheres: dict[str, list[str]] = {}
    for etype in d.event_types:
        try:
            ok = [w for w in ("",) + WHERE_POOL if where_error(d, etype, w) is None]
        except NoWhereRule:
            ok = []
        if ok:
            wheres[etype] = ok
    if not wheres:
        raise SystemExit(f"bench tree: no where value fits any {game} event type; extend WHERE_POOL")
    types = sorted(wheres)
    t, v, events = 0.0, d.value_neutral, []
    for k in range(n_events):
        t += rng.uniform(2, 12)
        v2 = min(1.0, max(0.0, v + rng.gauss(0, 0.06)))
        etype = rng.choice(types)
        events.append({"t": round(t, 1), "type": etype, "actor": d.sides[k % len(d.sides)],
                       "where": rng.choice(wheres[etype]), "delta": d.delta_of(v, v2), "state": d.state_of(v2),
                       "v_before": round(v, 4), "v_after": round(v2, 4)})
        v = events[-1]["v_after"]
    return {"format": GT_FORMAT, "game": game, "case_id": case_id, "spec": d.judge_spec(),
            "duration_s": round(t + 5, 1), "events": events,
            "v_series": [[0.0, d.value_neutral]] + [[e["t"], e["v_after"]] for e in events],
            "v_definition": "SYNTHETIC benchmark stand-in, not a real match", "record": {}}


def _place_video(video: Path, dst: Path, placed: dict[Path, Path]) -> None:
    """A real file (never a symlink: Harbor's lint flags a bind mount through one); a video already
    placed in the tree is hard-linked, not copied again."""
    if not video.exists():
        return
    real = video.resolve()
    if real in placed:
        try:
            os.link(placed[real], dst)
            return
        except OSError:
            pass
    shutil.copyfile(real, dst)
    placed.setdefault(real, dst)


def build_tree(dst: Path, src: Path, per_game: int = 20, games: list[str] | None = None,
               events: int = 100, seed: int = 14) -> dict[str, dict[str, int]]:
    """Write the tree under dst (created); returns {game: {"real": n, "copies": n, "synthetic": n}}."""
    rng = random.Random(seed)
    games = games or game_names()
    stand_in: Path | None = None
    for g in games:  # one real video stands in for the synthetic matches' videos
        for c in load_cases(g, src):
            p = src / g / "media" / f"{c['case_id']}.mp4"
            if p.is_file():
                stand_in = p.resolve()
                break
        if stand_in:
            break
    summary: dict[str, dict[str, int]] = {}
    placed: dict[Path, Path] = {}
    next_id = 1
    for g in games:
        gdir = dst / g
        (gdir / "gt").mkdir(parents=True)
        (gdir / "media").mkdir()
        for name in GAME_FILES:
            shutil.copyfile(src / g / name, gdir / name)
        real = [c for c in load_cases(g, src)
                if (src / g / "gt" / f"{c['case_id']}.json").is_file()][:per_game]
        entries, n_copy, n_syn = [], 0, 0
        for k in range(per_game):
            if k < len(real):
                cid = real[k]["case_id"]
                entries.append(dict(real[k]))
                shutil.copyfile(src / g / "gt" / f"{cid}.json", gdir / "gt" / f"{cid}.json")
                _place_video(src / g / "media" / f"{cid}.mp4", gdir / "media" / f"{cid}.mp4", placed)
                continue
            cid = _new_id(next_id)
            next_id += 1
            if real:  # a copy of a real case under a new id
                orig = real[k % len(real)]
                gt = json.loads((src / g / "gt" / f"{orig['case_id']}.json").read_text(encoding="utf-8"))
                gt["case_id"] = cid
                video = src / g / "media" / f"{orig['case_id']}.mp4"
                entries.append(dict(orig, case_id=cid))
                n_copy += 1
            else:
                gt = _synthetic_gt(g, cid, rng, events, src)
                video = stand_in
                entries.append({"case_id": cid, "duration_s": gt["duration_s"], "n_events": len(gt["events"]),
                                "source": {"collection": "synthetic benchmark stand-in"}})
                n_syn += 1
            (gdir / "gt" / f"{cid}.json").write_text(json.dumps(gt, indent=1) + "\n", encoding="utf-8")
            if video is not None:
                _place_video(video, gdir / "media" / f"{cid}.mp4", placed)
        (gdir / "cases.json").write_text(json.dumps({"game": g, "cases": entries}, indent=1) + "\n",
                                         encoding="utf-8")
        summary[g] = {"real": len(real), "copies": n_copy, "synthetic": n_syn}
    return summary


def describe(summary: dict[str, dict[str, int]]) -> str:
    real = sum(s["real"] for s in summary.values())
    copies = sum(s["copies"] for s in summary.values())
    syn = sum(s["synthetic"] for s in summary.values())
    return (f"{len(summary)} games, {real + copies + syn} cases: {real} real, {copies} copies of real cases "
            f"under new ids, {syn} synthetic stand-ins")
