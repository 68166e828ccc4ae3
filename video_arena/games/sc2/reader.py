"""The StarCraft II pixel reader: expansions, town halls destroyed, fights and the end from the top-down map alone.

Standalone (Python 3.11 stdlib + numpy + ffmpeg, the sandbox's toolset): it imports only the shared helper module
`pixel_reader` and knows the render's look as a viewer of it would: the playable area is the ground-coloured
rectangle (the 8x8 grid lies over it, rows counted from the bottom), a town hall is a square in its player's colour
(pale while under construction) with a white ring, units are red or blue discs whose radius grows with their supply
(workers the smallest), and a yellow cross marks for 3 s the place where a unit or building died (a unit's cross
13 pixels wide, a building's as wide as its footprint).

What it reads, frame after frame (1 frame a second):
- the white rings (town halls): a ring that appears is an `expand` of the side whose colour fills it; a ring that
  vanishes under a yellow cross is a `base_kill` by the other side (a ring that vanishes without a cross moved or
  was cancelled: no event);
- the yellow crosses that appear: each unit cross is a death; the side and the supply of the dead unit come from
  the disc pixels of each colour that vanished under it since the frame before (radius -> supply, the render's
  rule inverted), and a death with no unit of the other side near is no kill; deaths no more than 10 s apart chain, and a chain whose dead supply reaches 8 is a `fight`
  (t its last death, actor the side that lost less, where the cell with most deaths);
- `win` at the last event's frame (the video ends 4 s after it), actor the winner of the last fight read (the
  side with more of the picture's buildings and units then when there was none).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

import pixel_reader as P

READS = "the town halls' white rings, the yellow death crosses and the unit discs under them"

SIDES = ("red", "blue")
COLS = "abcdefgh"
GROUND = (128, 118, 100)
UNIT_RGB = ((230, 50, 40), (45, 110, 240))
BUILDING_RGB = (((150, 30, 25), (205, 140, 130)), ((25, 60, 150), (135, 160, 215)))
#: the blocks (pixels a side) the masks are grouped by before their connected parts are found
BLOCK = 8
#: a colour this close (sum of absolute channel differences) to a reference is that reference (the codec moves it)
NEAR = 70
FIGHT_SUPPLY = 8.0
FIGHT_GAP_S = 10.0
TAIL_S = 4.0
#: pixels of one unit's cross as decoded (13x13, three pixels wide diagonals)
CROSS_PX = 60
#: a unit disc of this many pixels or more is an army unit's (a worker's is about 60)
ARMY_PX = 90
#: a death is a kill only with a unit of the other side this near (pixels) the frame before
ENEMY_NEAR = 60
#: a new cross this far (pixels) from a vanished ring's centre is its building's cross
RING_NEAR = 24


def near(img: np.ndarray, rgb, tol: int = NEAR) -> np.ndarray:
    return np.abs(img.astype(np.int16) - np.array(rgb, np.int16)).sum(axis=2) < tol


def parts(mask: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The connected parts of a sparse mask, grouped by BLOCK-pixel blocks (8-neighbourhood): (ys, xs) of each."""
    ys, xs = np.nonzero(mask)
    if not len(ys):
        return []
    by, bx = ys // BLOCK, xs // BLOCK
    keys = by * 10000 + bx
    blocks = set(keys.tolist())
    label: dict[int, int] = {}
    n = 0
    for b in blocks:
        if b in label:
            continue
        stack = [b]
        label[b] = n
        while stack:
            c = stack.pop()
            cy, cx = divmod(c, 10000)
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    o = (cy + dy) * 10000 + cx + dx
                    if o in blocks and o not in label:
                        label[o] = n
                        stack.append(o)
        n += 1
    lab = np.array([label[k] for k in keys.tolist()])
    order = np.argsort(lab, kind="stable")
    cuts = np.nonzero(np.diff(lab[order]))[0] + 1
    return [(ys[i], xs[i]) for i in np.split(order, cuts)]


def supply_of(area: float) -> float:
    """A dead unit's supply from its disc's area (the render: radius 4 a worker, else 5 + 1.5 sqrt(supply))."""
    r = math.sqrt(max(area, 1.0) / math.pi)
    if r < 5.2:
        return 1.0
    return max(0.5, ((r - 5.0) / 1.5) ** 2)


class Grid:
    def __init__(self, img: np.ndarray):
        g = near(img, GROUND, 40)
        rows, cols = np.nonzero(g.mean(axis=1) > 0.2)[0], np.nonzero(g.mean(axis=0) > 0.2)[0]
        h, w = g.shape
        self.y0, self.y1 = (int(rows[0]), int(rows[-1]) + 1) if len(rows) else (0, h)
        self.x0, self.x1 = (int(cols[0]), int(cols[-1]) + 1) if len(cols) else (0, w)

    def cell(self, x: float, y: float) -> str:
        c = min(7, max(0, int((x - self.x0) / (self.x1 - self.x0) * 8)))
        r = min(7, max(0, int((self.y1 - y) / (self.y1 - self.y0) * 8)))
        return f"{COLS[c]}{r + 1}"


def side_at(img: np.ndarray, x: float, y: float) -> int:
    """The side whose colour fills a town hall at its centre (inside the ring)."""
    h, w = img.shape[:2]
    px = img[min(h - 1, max(0, round(y))), min(w - 1, max(0, round(x)))].astype(int)
    return 0 if px[0] > px[2] else 1


def visible_state(bases: list[int], army: list[float], t: float, winner: str) -> dict:
    """The visible features after an event (the keys of the plugin's `visible_features`)."""
    return {"t": round(t, 3), "bases_red": bases[0], "bases_blue": bases[1],
            "army_red": round(army[0], 1), "army_blue": round(army[1], 1), "winner": winner}


def army_supply(img: np.ndarray, side: int) -> float:
    """A side's army supply on the map, estimated from its disc pixels: the discs of `ARMY_PX` pixels or more
    (a worker's disc, radius 4, is about 60) each count for the supply their area gives (overlapping discs
    count as one larger one)."""
    total = 0.0
    for ys, _xs in parts(near(img, UNIT_RGB[side])):
        if len(ys) >= ARMY_PX:
            total += supply_of(len(ys))
    return total


def naive_state(vis: dict) -> str:
    if vis["winner"]:
        return vis["winner"]
    lead = (vis["bases_red"] - vis["bases_blue"]) * 4 + (vis["army_red"] - vis["army_blue"]) / 10
    return "red" if lead > 1 else "blue" if lead < -1 else "even"


def read(video: Path, writer, log) -> list[dict]:
    w, h, fps = P.probe(video)
    grid: Grid | None = None
    rings: list[list] = []           # [x, y, side, frames missing]
    prev = None
    prev_yellow = None
    chain: list[tuple[int, int, float, str]] = []   # (frame, side, supply, cell)
    lost_units = [0.0, 0.0]
    found: list[tuple[int, str, str, str]] = []
    seen_fights: list[tuple[int, str, str, str]] = []
    out: list[dict] = []
    last_k = 0

    def close_chain():
        lost = [0.0, 0.0]
        for _, s, sup, _c in chain:
            lost[s] += sup
        if sum(lost) >= FIGHT_SUPPLY:
            actor = 0 if lost[0] < lost[1] else 1 if lost[1] < lost[0] else 1 - chain[-1][1]
            cells: dict[str, list[int]] = {}
            for f, _s, _sup, c in chain:
                cells.setdefault(c, []).append(f)
            where = max(cells, key=lambda c: (len(cells[c]), max(cells[c])))
            found.append((chain[-1][0], "fight", SIDES[actor], where))
            seen_fights.append(found[-1])
        chain.clear()

    def emit():
        bases = [sum(1 for r in rings if r[2] == s) for s in (0, 1)]
        for f, type_, actor, where in sorted(found):
            vis = visible_state(bases, army, f / fps, actor if type_ == "win" else "")
            writer.add(P.row(f / fps, type_, actor, where, state=naive_state(vis),
                             delta="flat" if type_ == "win" else "up" if actor == "red" else "down"))
            out.append(vis)
        found.clear()

    army = [0.0, 0.0]
    for k, img in P.frames(video, w, h):
        last_k = k
        if grid is None:
            grid = Grid(img)
        white = (img[..., 0] > 200) & (img[..., 1] > 200) & (img[..., 2] > 200)
        cur = []
        for ys, xs in parts(white):
            if len(ys) >= 20:
                cur.append((float(xs.mean()), float(ys.mean())))
        yellow = (img[..., 0] > 190) & (img[..., 1] > 160) & (img[..., 2] < 110)
        new_y = yellow & ~prev_yellow if prev_yellow is not None else np.zeros_like(yellow)
        crosses = parts(new_y)
        # rings: match the current ones to the known ones
        seen = [False] * len(cur)
        for r in rings:
            j = min(range(len(cur)), key=lambda i: (cur[i][0] - r[0]) ** 2 + (cur[i][1] - r[1]) ** 2, default=None)
            if j is not None and math.hypot(cur[j][0] - r[0], cur[j][1] - r[1]) < RING_NEAR and not seen[j]:
                seen[j] = True
                r[3] = 0
            else:
                r[3] += 1
        building_cross = [False] * len(crosses)
        kept = []
        for r in rings:
            if r[3] == 0:
                kept.append(r)
                continue
            if r[3] == 1:
                hit = [i for i, (ys, xs) in enumerate(crosses)
                       if math.hypot(xs.mean() - r[0], ys.mean() - r[1]) < RING_NEAR * 2]
                r.append(bool(hit))
                for i in hit:
                    building_cross[i] = True
                kept.append(r)
                continue
            if r[4]:          # gone two frames running, a cross where it stood: destroyed at the first
                found.append((k - 1, "base_kill", SIDES[1 - r[2]], grid.cell(r[0], r[1])))
        rings = kept
        for i, (x, y) in enumerate(cur):
            if not seen[i]:
                rings.append([x, y, side_at(img, x, y), 0])
                if k > 0:
                    found.append((k, "expand", SIDES[rings[-1][2]], grid.cell(x, y)))
        # deaths: each new unit cross, its side and supply from the discs that vanished under it
        for i, (ys, xs) in enumerate(crosses):
            if building_cross[i] or prev is None:
                continue
            x0, x1 = max(0, xs.min() - 6), xs.max() + 7
            y0, y1 = max(0, ys.min() - 6), ys.max() + 7
            n = max(1, round(len(ys) / CROSS_PX))
            gone = []
            for s in (0, 1):
                before = near(prev[y0:y1, x0:x1], UNIT_RGB[s]).sum()
                gone.append(max(0, int(before) - int(near(img[y0:y1, x0:x1], UNIT_RGB[s]).sum())))
            bld = sum(int(near(prev[y0:y1, x0:x1], c).sum()) - int(near(img[y0:y1, x0:x1], c).sum())
                      for s in (0, 1) for c in BUILDING_RGB[s])
            if bld > 60 or (x1 - x0 > 26 and n == 1):
                continue      # a building's cross
            side = 0 if gone[0] >= gone[1] else 1
            ex0, ex1, ey0, ey1 = max(0, x0 - ENEMY_NEAR), x1 + ENEMY_NEAR, max(0, y0 - ENEMY_NEAR), y1 + ENEMY_NEAR
            if not near(prev[ey0:ey1, ex0:ex1], UNIT_RGB[1 - side]).sum() >= 20:
                continue      # no enemy unit near: not a kill (a unit that morphed, expired or was sacrificed)
            sup = n * supply_of(sum(gone) / n + 15) if sum(gone) else 0.0
            if chain and k - chain[-1][0] > FIGHT_GAP_S * fps:
                close_chain()
            chain.append((k, side, sup, grid.cell(float(xs.mean()), float(ys.mean()))))
        if chain and k - chain[-1][0] > FIGHT_GAP_S * fps:
            close_chain()
        prev, prev_yellow = img.copy(), yellow
        if found:
            army = [army_supply(img, s) for s in (0, 1)]
            emit()
    if chain:
        close_chain()
    end = max(0, last_k - round(TAIL_S * fps))
    if prev is not None:
        score = [float(near(prev, UNIT_RGB[s]).sum()) + sum(float(near(prev, c).sum()) for c in BUILDING_RGB[s])
                 for s in (0, 1)]
        fights = [a for _f, t, a, _w in sorted(seen_fights)]
        winner = fights[-1] if fights else SIDES[0 if score[0] >= score[1] else 1]
        found.append((end, "win", winner, ""))
    emit()
    writer.flush()
    log(f"{len(out)} events")
    return out
