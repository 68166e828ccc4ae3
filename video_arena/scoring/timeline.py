"""`video-arena timeline GT ANSWER -o PNG`: one case at a glance.

Top panel: the events along time, one pair of lanes per actor (or per event type with --lanes type):
the ground truth's lane above the answer's.  Colours follow the judge's own record:

* ground truth: matched (T1) / missed;
* answer: matched with delta and state right / matched with a wrong delta or state / unmatched
  (a false positive); markers are shaped by event type;
* a thin line joins every matched pair (the judge's `matches`), so time offsets show as slants.

Bottom panel: V_t from the ground truth's `v_series` (a step function: V after each event holds until
the next), with the dead band around the neutral value shaded and the state regions tinted.  The
title carries the four scores and the counts.  `--window START END` zooms into a time range.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, MultipleLocator  # noqa: E402

from video_arena.core.judge_loader import JudgeUnavailable, load_judge  # noqa: E402
from video_arena.core.tasks import parse_game_toml  # noqa: E402
from video_arena.games.base import load_definition  # noqa: E402
from video_arena.safe_io import finite_number, read_bounded  # noqa: E402

GT_MATCHED = "#2e7d32"
GT_MISSED = "#c62828"
PRED_RIGHT = "#2e7d32"
PRED_WRONG_LABEL = "#f0a020"
PRED_UNMATCHED = "#7b1fa2"
PAIR_LINE = "#9e9e9e"
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]
#: answer rows later than this many times the match's length are drawn at the axis' right edge
REACH = 1.5


def _mmss(t: float, _pos=None) -> str:
    t = max(0.0, t)
    return f"{int(t // 60)}:{int(t % 60):02d}"


def _neutral_for(gt: dict[str, Any], gt_path: Path | None) -> float:
    """The neutral V of the game: from the tasks tree's game.toml next to the ground truth, else the
    plugin's definition, else 0.5 (every shipped V_t is a probability)."""

    if gt_path is not None:
        toml = gt_path.resolve().parent.parent / "game.toml"
        if toml.is_file():
            try:
                return parse_game_toml(toml.read_text(encoding="utf-8"), source=str(toml)).value_neutral
            except Exception:  # noqa: BLE001 - fall through to the plugin
                pass
    try:
        return load_definition(str(gt.get("game") or gt.get("spec", {}).get("game"))).value_neutral
    except Exception:  # noqa: BLE001
        return 0.5


def _raw_rows(answer_bytes: bytes | None) -> list[dict[str, Any]]:
    """Best-effort rows of an answer the judge rejected (so a person still sees what it said)."""
    if not answer_bytes:
        return []
    try:
        doc = json.loads(answer_bytes)
        rows = doc.get("events") if isinstance(doc, dict) else None
    except (ValueError, RecursionError):
        return []
    out = []
    for r in rows if isinstance(rows, list) else []:
        # a time no float holds (an integer of 401 digits), or not finite, is no row to draw
        t = finite_number(r.get("t")) if isinstance(r, dict) else None
        if t is not None:
            out.append({k: (str(r.get(k, "")).strip().lower()) for k in ("type", "actor", "where", "delta", "state")}
                       | {"t": t})
    return out[:20000]


def answer_rows(answer_bytes: bytes | None, record: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's rows as the judge's record indexes them (`matches`), normalised as the judge compares
    them; an answer with a format error: whatever rows can be read from it."""
    if record.get("format_error"):
        return _raw_rows(answer_bytes)
    doc = json.loads(answer_bytes) if answer_bytes else {"events": []}
    rows = []
    for r in doc["events"]:
        rows.append({"t": float(r["t"]), **{k: str(r[k]).strip().lower() for k in ("type", "actor", "where", "delta", "state")}})
    return rows


def _score(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def scores_line(record: dict) -> str:
    """The title's scores: every metric the judge names, by its label ("-" for a tier without a match)."""
    # deferred: scoring.cells loads the judge when imported, and main() first reports a judge that cannot load
    from video_arena.scoring.cells import METRICS, TIERS, label_of

    return "   ".join(f"{label_of(m)} {_score(record.get(m) if m in TIERS else record.get(m, 0.0))}"
                       for m in METRICS)


def draw_timeline(gt: dict[str, Any], answer_bytes: bytes | None, record: dict[str, Any], out: Path, *,
                  lanes: str = "actor", window: tuple[float, float] | None = None,
                  neutral: float = 0.5, title: str | None = None, dpi: int = 110) -> Path:
    spec = gt["spec"]
    gt_rows = [{**e, "t": float(e["t"])} for e in gt["events"]]
    pred = answer_rows(answer_bytes, record)
    matches = [(int(p), int(g)) for p, g in record.get("matches", [])]
    gt_matched = {g: p for p, g in matches}
    pred_matched = {p: g for p, g in matches}

    keys = list(spec["sides"]) if lanes == "actor" else list(spec["event_types"])
    field = "actor" if lanes == "actor" else "type"
    extra = sorted({r[field] for r in pred} - set(keys))  # only for a rejected answer's raw rows
    keys += extra
    # lane y: per key two lanes, ground truth on top; a gap between keys
    lane_y: dict[tuple[str, str], float] = {}
    y = 0.0
    for k in reversed(keys):
        lane_y[("pred", k)] = y
        lane_y[("gt", k)] = y + 1.0
        y += 2.7
    types = list(spec["event_types"]) + sorted({r["type"] for r in pred} - set(spec["event_types"]))
    marker_of = {t: MARKERS[i % len(MARKERS)] for i, t in enumerate(types)}

    duration = float(gt.get("duration_s") or 0.0)
    # The axis spans the match (and answer rows a little after it); a row far beyond the video (valid for
    # the judge, e.g. t = 1e300) is drawn at the right edge and counted in the title, never scaled to.
    base = max([duration] + [r["t"] for r in gt_rows] + [1.0])
    t_max = max([base] + [r["t"] for r in pred if r["t"] <= base * REACH])
    beyond = sum(1 for r in pred if r["t"] > base * REACH)
    x0, x1 = (window if window else (0.0, t_max * 1.01))
    span = max(1.0, x1 - x0)
    edge = x1 if not window else x1 + span  # a clipped row stays finite (and, zoomed in, out of view)

    def x_of(t: float) -> float:
        return min(max(t, x0 - span), edge)
    n_lanes = len(keys)
    width = 16.0
    ev_h = 0.55 * (2 * n_lanes) + 1.0
    fig, (ax, axv) = plt.subplots(2, 1, figsize=(width, ev_h + 3.2), dpi=dpi, sharex=True,
                                  gridspec_kw={"height_ratios": [ev_h, 2.6], "hspace": 0.08})
    # marker size shrinks when events are dense on screen
    vis = [r for r in gt_rows if x0 <= r["t"] <= x1] + [r for r in pred if x0 <= r["t"] <= x1]
    density = len(vis) / max(1, 2 * n_lanes) / (span / 60.0)  # events per lane per minute
    ms = float(max(3.0, min(8.0, 18.0 / math.sqrt(max(density, 1e-9)))))

    # matched pairs first (under the markers)
    for p, g in matches:
        if p >= len(pred) or g >= len(gt_rows):
            continue
        kg, kp = gt_rows[g][field], pred[p][field]
        if ("gt", kg) in lane_y and ("pred", kp) in lane_y:
            ax.plot([x_of(gt_rows[g]["t"]), x_of(pred[p]["t"])], [lane_y[("gt", kg)], lane_y[("pred", kp)]],
                    color=PAIR_LINE, linewidth=0.7, zorder=1)

    def scatter(rows, side, colour_of):
        groups: dict[tuple[str, str, bool], list[tuple[float, float]]] = {}
        for i, r in enumerate(rows):
            key = (side, r[field])
            if key not in lane_y:
                continue
            colour, filled = colour_of(i, r)
            groups.setdefault((r["type"], colour, filled), []).append((x_of(r["t"]), lane_y[key]))
        for (typ, colour, filled), pts in groups.items():
            xs, ys = zip(*pts)
            ax.plot(xs, ys, linestyle="none", marker=marker_of.get(typ, "o"), markersize=ms,
                    markerfacecolor=colour if filled else "white", markeredgecolor=colour,
                    markeredgewidth=1.1, alpha=0.9, zorder=3)

    scatter(gt_rows, "gt", lambda i, r: ((GT_MATCHED, True) if i in gt_matched else (GT_MISSED, True)))

    def pred_colour(i, r):
        if i not in pred_matched:
            return PRED_UNMATCHED, True
        g = gt_rows[pred_matched[i]]
        right = r["delta"] == g["delta"] and r["state"] == g["state"]
        return (PRED_RIGHT, True) if right else (PRED_WRONG_LABEL, True)

    scatter(pred, "pred", pred_colour)

    ax.set_yticks([lane_y[(s, k)] for k in keys for s in ("gt", "pred")])
    ax.set_yticklabels([f"{'truth' if s == 'gt' else 'answer'}  {k or '(empty)'}" for k in keys for s in ("gt", "pred")],
                       fontsize=9)
    for k in keys:  # a light band behind each key's pair of lanes
        ax.axhspan(lane_y[("pred", k)] - 0.5, lane_y[("gt", k)] + 0.5, color="0.96", zorder=0)
    ax.set_ylim(-0.9, y - 2.7 + 1.9)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="0.88", linewidth=0.6)
    for s in ("top", "right", "left"):
        ax.spines[s].set_visible(False)

    # legends: status colours and type markers
    status = [Line2D([], [], marker="o", linestyle="none", color=GT_MATCHED, label="truth: matched"),
              Line2D([], [], marker="o", linestyle="none", color=GT_MISSED, label="truth: missed"),
              Line2D([], [], marker="o", linestyle="none", color=PRED_RIGHT, label="answer: matched, delta+state right"),
              Line2D([], [], marker="o", linestyle="none", color=PRED_WRONG_LABEL, label="answer: matched, delta/state wrong"),
              Line2D([], [], marker="o", linestyle="none", color=PRED_UNMATCHED, label="answer: unmatched"),
              Line2D([], [], color=PAIR_LINE, label="matched pair")]
    shapes = [Line2D([], [], marker=marker_of[t], linestyle="none", color="0.35", markerfacecolor="white",
                     label=t) for t in types if any(r["type"] == t for r in gt_rows + pred)]
    leg1 = ax.legend(handles=status, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False,
                     title="colour", title_fontsize=8, alignment="left")
    ax.add_artist(leg1)
    if shapes:
        ax.legend(handles=shapes, loc="lower left", bbox_to_anchor=(1.005, 0.0), fontsize=8, frameon=False,
                  title="type", title_fontsize=8, alignment="left")

    # V_t
    band = float(spec.get("band", 0.0))
    above, below, even = spec["state_labels"]
    axv.axhspan(neutral - band, neutral + band, color="0.85", zorder=0, label=f"dead band ({even})")
    axv.axhspan(neutral + band, 1.05 if neutral + band < 1.05 else neutral + band, color="#e3f2fd", zorder=0)
    axv.axhspan(min(-0.05, neutral - band), neutral - band, color="#fff3e0", zorder=0)
    vs = gt.get("v_series") or []
    if vs:
        ts = [float(p[0]) for p in vs] + [t_max]
        vv = [float(p[1]) for p in vs] + [float(vs[-1][1])]
        axv.step(ts, vv, where="post", color="#263238", linewidth=1.1, label="V_t (truth)")
        lo, hi = min(vv), max(vv)
        if lo >= -0.05 and hi <= 1.05:
            axv.set_ylim(-0.05, 1.05)
        else:
            pad = 0.05 * max(1e-9, hi - lo)
            axv.set_ylim(min(lo, neutral - band) - pad, max(hi, neutral + band) + pad)
    else:
        axv.text(0.5, 0.5, "no v_series in the ground truth", transform=axv.transAxes, ha="center", color="0.4")
    axv.axhline(neutral, color="0.55", linewidth=0.6, linestyle="--")
    yl = axv.get_ylim()
    axv.text(1.005, (neutral + band + yl[1]) / 2, above, transform=axv.get_yaxis_transform(), fontsize=8,
             va="center", color="#1565c0")
    axv.text(1.005, (neutral - band + yl[0]) / 2, below, transform=axv.get_yaxis_transform(), fontsize=8,
             va="center", color="#e65100")
    axv.text(1.005, neutral, f"{even} (±{band:g})", transform=axv.get_yaxis_transform(), fontsize=8,
             va="center", color="0.35")
    axv.set_ylabel("V_t", fontsize=9)
    axv.grid(axis="x", color="0.88", linewidth=0.6)
    for s in ("top", "right"):
        axv.spines[s].set_visible(False)
    axv.set_xlim(x0, x1)
    major = next((m for m in (10, 30, 60, 120, 300, 600, 1200, 3600) if span / m <= 16), None) \
        or 3600 * math.ceil(span / 16 / 3600)
    axv.xaxis.set_major_locator(MultipleLocator(major))
    axv.xaxis.set_major_formatter(FuncFormatter(_mmss))
    axv.set_xlabel("video time (m:ss)", fontsize=9)

    rec = record
    head = title or f"{gt.get('game', '?')} / {gt.get('case_id', '?')}"
    line1 = f"{head}    {scores_line(rec)}"
    line2 = (f"truth {rec.get('n_gt', len(gt_rows))} events, answer {rec.get('n_pred', 0)} rows, "
             f"{rec.get('n_matched', 0)} matched (T1, ±{rec.get('tolerance_s', 3.0):g} s), "
             f"{rec.get('n_matched_strict', 0)} strict")
    if rec.get("diagnostic"):
        line2 += "   DIAGNOSTIC tolerance"
    if rec.get("format_error"):
        line2 += f"   FORMAT ERROR (scored 0): {str(rec['format_error'])[:90]}"
        if pred:
            line2 += "  (rows drawn best-effort)"
    if beyond:
        line2 += f"   {beyond} answer row(s) far after the video's end, drawn at the right edge"
    if window:
        line2 += f"   window {_mmss(x0)}-{_mmss(x1)} (scores are the whole match's)"
    fig.suptitle(line1 + "\n" + line2, fontsize=11, x=0.01, ha="left", y=0.995)
    longest = max(len(f"answer  {k}") for k in keys)
    fig.subplots_adjust(left=min(0.25, 0.03 + 0.0055 * longest), right=0.83, top=1 - 0.75 / (ev_h + 3.2), bottom=0.4 / (ev_h + 3.2) + 0.06)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena timeline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gt", help="ground-truth JSON (tasks/<game>/gt/<case_id>.json)")
    ap.add_argument("answer", help="answer JSON (a results cell's answer.json); a missing file is drawn as no answer")
    ap.add_argument("-o", "--output", required=True, help="PNG to write")
    ap.add_argument("--lanes", choices=["actor", "type"], default="actor", help="one lane pair per actor (default) or per type")
    ap.add_argument("--window", nargs=2, type=float, metavar=("START", "END"), help="zoom to seconds START..END")
    ap.add_argument("--tolerance", type=float, default=3.0, help="matching tolerance (default 3; else a diagnostic)")
    ap.add_argument("--neutral", type=float, default=None, help="neutral V (default: from the game's definition)")
    a = ap.parse_args(argv)
    if not a.output.lower().endswith(".png"):
        print(f"video-arena timeline: -o must name a .png file, not {a.output!r}", file=sys.stderr)
        return 2
    if a.window and not (0 <= a.window[0] < a.window[1] < math.inf):
        print("video-arena timeline: --window needs 0 <= START < END, both finite", file=sys.stderr)
        return 2
    if finite_number(a.tolerance, 0.0) is None or (a.neutral is not None and finite_number(a.neutral) is None):
        print("video-arena timeline: --tolerance must be a finite number >= 0 and --neutral a finite number",
              file=sys.stderr)
        return 2
    try:
        J = load_judge()
    except JudgeUnavailable as exc:
        print(f"video-arena timeline: {exc}", file=sys.stderr)
        return 2
    gt_path = Path(a.gt)
    try:
        gt = J.load_gt(gt_path)
    except J.GroundTruthError as exc:
        print(f"video-arena timeline: {exc}", file=sys.stderr)
        return 2
    ans_path = Path(a.answer)
    data = None
    if ans_path.is_file() or ans_path.is_symlink():
        # deferred: as in draw_timeline: scoring/caveats.py loads the judge when imported, and main() first reports a judge that cannot load
        from video_arena.scoring.caveats import MAX_ANSWER_BYTES

        try:  # a regular file, never through a link or blocking; the judge's cap + 1 byte at most
            data = read_bounded(ans_path, MAX_ANSWER_BYTES)[0]
        except OSError as exc:
            print(f"video-arena timeline: {ans_path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    else:
        print(f"video-arena timeline: no answer file at {ans_path}: drawn as no answer", file=sys.stderr)
    record = J.judge(gt, data, tolerance=a.tolerance)
    neutral = a.neutral if a.neutral is not None else _neutral_for(gt, gt_path)
    out = draw_timeline(gt, data, record, Path(a.output), lanes=a.lanes,
                        window=tuple(a.window) if a.window else None, neutral=neutral)
    from video_arena.scoring.cells import METRICS  # deferred, as in scores_line

    print(f"wrote {out}  ({', '.join(f'{m} {_score(record.get(m))}' for m in METRICS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
