"""Tables the games' report commands print about their built cases' V_t (sc2, dota2), and the visible ceiling:
what a watcher who reads the picture exactly reaches on T2 and T3 (the plugins' `visible_features` and
`visible_values`)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from video_arena.core.tasks import VALUE_DECIMALS, GameDefinition
from video_arena.core.judge_loader import load_judge


def band_table(pairs: list[tuple[float, float]], d: GameDefinition, bands: Iterable[float]) -> str:
    """Markdown: the shares of `delta` and `state` classes the (v_before, v_after) pairs get at each band
    (the game.toml's band marked), with the definition's neutral value and state labels."""
    lines = [f"| band | delta up | down | flat | state {d.state_above} | {d.state_below} | {d.state_even} |",
             "|---|---|---|---|---|---|---|"]
    for band in bands:
        dc, sc = Counter(), Counter()
        for vb, va in pairs:
            dc["up" if va - vb > band else "down" if vb - va > band else "flat"] += 1
            sc["above" if va > d.value_neutral + band else "below" if va < d.value_neutral - band else "even"] += 1
        f = lambda c, k: f"{100 * c[k] / len(pairs):.1f} %"  # noqa: E731
        mark = " (game.toml)" if abs(band - d.band) < 1e-9 else ""
        lines.append(f"| {band:g}{mark} | {f(dc, 'up')} | {f(dc, 'down')} | {f(dc, 'flat')} | {f(sc, 'above')} | "
                     f"{f(sc, 'below')} | {f(sc, 'even')} |")
    return "\n".join(lines)


def record_meta(gt: dict[str, Any]) -> dict[str, Any]:
    """What a watcher knows of a case before reading any event: the video's frame rate, frame count and length
    (the second argument of a plugin's `visible_values`)."""
    return {"fps": gt["video"]["fps"], "n_frames": gt["video"]["n_frames"], "duration_s": gt["duration_s"]}


def visible_answer(plugin, gt: dict[str, Any]) -> dict[str, Any]:
    """The ground truth's own events (a perfect T1) with `delta` and `state` from the plugin's `visible_values` on
    `visible_features(record)` (kept to the ground truth's decimals): what a watcher who reads the picture exactly
    can answer."""
    d = plugin.definition
    # rounded as the ground truth keeps V_t, so a change exactly at the band is judged alike
    values = [round(v, VALUE_DECIMALS) for v in plugin.visible_values(plugin.visible_features(gt["record"]), record_meta(gt))]
    if len(values) != len(gt["events"]) + 1:
        raise ValueError(f"{gt['game']} {gt['case_id']}: {len(values)} visible values for {len(gt['events'])} events")
    return {"events": [{"t": e["t"], "type": e["type"], "actor": e["actor"], "where": e["where"],
                        "delta": d.delta_of(values[k], values[k + 1]), "state": d.state_of(values[k + 1])}
                       for k, e in enumerate(gt["events"])]}


def visible_ceiling(plugin, gts: list[dict[str, Any]]) -> dict[str, Any]:
    """The judge's T2 and T3 of `visible_answer` per case and their means over the cases."""

    judge = load_judge()
    t2_key, t3_key = judge.REWARD_KEYS[2:4]    # after the headline and T1: T2, T3 (the judge names them)
    rows = []
    for gt in gts:
        reward = judge.reward_of(judge.judge(gt, visible_answer(plugin, gt)))
        rows.append({"case_id": gt["case_id"], "n_events": len(gt["events"]), "t2": reward[t2_key], "t3": reward[t3_key]})
    mean = lambda k: round(sum(r[k] for r in rows) / len(rows), 3) if rows else None  # noqa: E731
    return {"cases": rows, "t2": mean("t2"), "t3": mean("t3")}


def ceiling_markdown(game: str, ceiling: dict[str, Any]) -> str:
    """One line per case and the means: the visible ceiling of T2 and T3 (docs/CASES.md)."""
    lines = ["| case | events | visible T2 | visible T3 |", "|---|---|---|---|"]
    for r in ceiling["cases"]:
        lines.append(f"| {r['case_id']} | {r['n_events']} | {r['t2']:.3f} | {r['t3']:.3f} |")
    lines.append(f"| {game}: mean of {len(ceiling['cases'])} cases | | {ceiling['t2']:.3f} | {ceiling['t3']:.3f} |")
    return "\n".join(lines)
