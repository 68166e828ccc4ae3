"""Tables the games' report commands print about their built cases' V_t (sc2, dota2)."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from video_arena.core.tasks import GameDefinition


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
