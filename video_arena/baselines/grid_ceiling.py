"""The grid ceiling: the best answer a perfect model can give from Protocol A's sampling grid alone
(the 1 FPS / 256-frame grid of video_arena/media/grid.py), a reference point of docs/RESULTS.md."""
from __future__ import annotations

import bisect
from pathlib import Path

from video_arena.media import grid as G


def grid_ceiling_answer(gt: dict, grid_ts: list[float], tolerance: float) -> dict:
    """The best answer a perfect model can give from the grid's frames alone.

    Grid frame k (time t_k) shows the source frame on screen at t_k, so an event at time t is first
    visible in the first grid frame with t_k >= t: all the frames tell is t in (t_{k-1}, t_k]. A
    perfect model knows every label and places the m events that fall in one interval evenly inside
    it (at t_{k-1} + j * (t_k - t_{k-1}) / (m + 1)), the spread that keeps each within TOL of its true
    time whenever the interval allows. An event after the last grid frame is never seen: no row."""
    ts = [float(t) for t in grid_ts]
    events = gt["events"]
    buckets: dict[int, list[dict]] = {}
    for e in events:
        k = bisect.bisect_left(ts, float(e["t"]) - 1e-9)
        if k >= len(ts):
            continue
        buckets.setdefault(k, []).append(e)
    rows = []
    for k, evs in sorted(buckets.items()):
        lo = ts[k - 1] if k > 0 else ts[0]
        hi = ts[k]
        for j, e in enumerate(evs, start=1):
            t = hi if k == 0 else lo + j * (hi - lo) / (len(evs) + 1)
            rows.append({"t": round(t, 3), "type": e["type"], "actor": e["actor"], "where": e["where"],
                         "delta": e["delta"], "state": e["state"]})
    return {"events": rows}


def grid_for(media: Path):
    info = G.probe(media)
    spec = G.GridSpec()
    times, fps_eff = G.grid_times(info.duration, spec)
    return [float(t) for t in times], float(fps_eff)
