"""The DOTA 2 pixel reader: every tower, barracks, Roshan kill and Ancient from the decoded map schematic alone.

Standalone (Python 3.11 stdlib + numpy + ffmpeg, the sandbox's toolset): it imports only the shared helper module
`pixel_reader` and knows the render's look as a viewer of it would: the map fills the 512x512 picture, each
building stands at its own fixed place (the table below, in the map's own cells, x to the right and y up, 4
pixels a cell), filled in its side's colour (radiant green, dire red), white for the few seconds before it falls
and a grey outline (the ground showing through) from the second it falls; Roshan is the disc in the pit, tan
while he lives and in a side's colour from the second that side kills him.

What it reads: the colour at the centre of every building and of Roshan's disc in every frame (the median of a
small patch).  An event is the first frame a building's centre no longer shows its fill (white or its side's
colour), or the first frame Roshan's disc takes a side's colour; t = that frame's time.  `delta` is naive (the
side that gained, up for radiant); `state` compares the buildings each side still has standing.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import pixel_reader as P

READS = "every building's fill colour (standing, collapsing, fallen) and Roshan's disc colour"

SIDES = ("radiant", "dire")
SIDE_RGB = {"radiant": (60, 205, 90), "dire": (225, 60, 50)}
WHITE = (250, 250, 250)
ROSHAN_TAN = (196, 170, 128)
MAP_LO, MAP_HI, CELL_PX = 64.0, 192.0, 4.0
#: Where each building stands (map cells, x right, y up): kind, lane and tier, its place.
BUILDINGS: dict[str, tuple[str, str, int, tuple[float, float]]] = {
    "radiant_tower1_top": ("tower", "top", 1, (78.5, 142.5)), "radiant_tower2_top": ("tower", "top", 2, (79.0, 121.0)),
    "radiant_tower3_top": ("tower", "top", 3, (76.5, 101.5)), "radiant_tower1_mid": ("tower", "mid", 1, (116.0, 117.0)),
    "radiant_tower2_mid": ("tower", "mid", 2, (100.5, 106.5)), "radiant_tower3_mid": ("tower", "mid", 3, (91.75, 95.5)),
    "radiant_tower1_bot": ("tower", "bot", 1, (166.5, 80.5)), "radiant_tower2_bot": ("tower", "bot", 2, (123.5, 80.5)),
    "radiant_tower3_bot": ("tower", "bot", 3, (97.0, 80.25)),
    "radiant_melee_top": ("melee", "top", 0, (74.0, 97.5)), "radiant_ranged_top": ("ranged", "top", 0, (79.5, 97.5)),
    "radiant_melee_mid": ("melee", "mid", 0, (90.5, 91.5)), "radiant_ranged_mid": ("ranged", "mid", 0, (87.5, 94.5)),
    "radiant_melee_bot": ("melee", "bot", 0, (93.0, 82.5)), "radiant_ranged_bot": ("ranged", "bot", 0, (93.0, 77.5)),
    "radiant_tower4_a": ("tower", "base", 4, (83.0, 90.5)), "radiant_tower4_b": ("tower", "base", 4, (86.0, 87.5)),
    "radiant_fort": ("fort", "base", 0, (81.0, 85.5)),
    "dire_tower1_top": ("tower", "top", 1, (91.5, 175.0)), "dire_tower2_top": ("tower", "top", 2, (128.0, 175.0)),
    "dire_tower3_top": ("tower", "top", 3, (155.75, 173.5)), "dire_tower1_mid": ("tower", "mid", 1, (132.0, 133.0)),
    "dire_tower2_mid": ("tower", "mid", 2, (147.5, 144.5)), "dire_tower3_mid": ("tower", "mid", 3, (161.5, 157.5)),
    "dire_tower1_bot": ("tower", "bot", 1, (177.0, 114.5)), "dire_tower2_bot": ("tower", "bot", 2, (178.0, 131.0)),
    "dire_tower3_bot": ("tower", "bot", 3, (177.5, 151.75)),
    "dire_melee_top": ("melee", "top", 0, (160.0, 176.0)), "dire_ranged_top": ("ranged", "top", 0, (160.0, 171.0)),
    "dire_melee_mid": ("melee", "mid", 0, (162.5, 161.5)), "dire_ranged_mid": ("ranged", "mid", 0, (165.5, 158.5)),
    "dire_melee_bot": ("melee", "bot", 0, (175.0, 156.0)), "dire_ranged_bot": ("ranged", "bot", 0, (180.5, 156.0)),
    "dire_tower4_a": ("tower", "base", 4, (166.5, 165.5)), "dire_tower4_b": ("tower", "base", 4, (169.5, 162.5)),
    "dire_fort": ("fort", "base", 0, (172.0, 168.0)),
}
ROSHAN_PIT = (109.0, 142.5)
N_TOWERS, N_BARRACKS = 11, 6
#: Half the side of the patch sampled at a centre (3x3 pixels: inside every sprite's fill).
PATCH = 1
#: A colour this close (Euclidean, RGB) to a reference is that reference (the codec moves colours by ~10-20).
NEAR = 60.0


def centre(x: float, y: float) -> tuple[int, int]:
    return round((x - MAP_LO) * CELL_PX), round((MAP_HI - y) * CELL_PX)


def where_of(kind: str, lane: str, tier: int) -> str:
    if kind == "tower":
        return "base_t4" if tier == 4 else f"{lane}_t{tier}"
    return f"{lane}_{kind}" if kind in ("melee", "ranged") else ""


def visible_state(standing: dict[str, bool], roshan_kills: dict[str, int], t: float, winner: str) -> dict:
    """The visible features after an event (the keys of the plugin's `visible_features`)."""
    out: dict = {"t": round(t, 3)}
    for side in SIDES:
        out[f"towers_{side}"] = sum(1 for b, (kind, *_) in BUILDINGS.items()
                                    if kind == "tower" and b.startswith(side) and standing[b])
        out[f"barracks_{side}"] = sum(1 for b, (kind, *_) in BUILDINGS.items()
                                      if kind in ("melee", "ranged") and b.startswith(side) and standing[b])
    for side in SIDES:
        out[f"roshan_{side}"] = roshan_kills[side]
    out["winner"] = winner
    return out


def naive_state(vis: dict) -> str:
    if vis["winner"]:
        return vis["winner"]
    lead = (vis["towers_radiant"] - vis["towers_dire"]) + 2 * (vis["barracks_radiant"] - vis["barracks_dire"])
    return "radiant" if lead > 0 else "dire" if lead < 0 else "even"


def read(video: Path, writer, log) -> list[dict]:
    w, h, fps = P.probe(video)
    names = list(BUILDINGS)
    pts = [centre(*BUILDINGS[b][3]) for b in names] + [centre(*ROSHAN_PIT)]
    offs = [(dy, dx) for dy in range(-PATCH, PATCH + 1) for dx in range(-PATCH, PATCH + 1)]
    ys = np.array([[min(h - 1, max(0, y + dy)) for dy, dx in offs] for x, y in pts])
    xs = np.array([[min(w - 1, max(0, x + dx)) for dy, dx in offs] for x, y in pts])
    fills = np.array([SIDE_RGB[b.split("_")[0]] for b in names], float)
    white = np.array(WHITE, float)
    rosh_refs = {"": ROSHAN_TAN, **SIDE_RGB}
    standing = {b: True for b in names}
    roshan_kills = {s: 0 for s in SIDES}
    roshan = ""                       # the side whose colour the disc shows, "" for tan
    pending: dict[str, int] = {}      # building -> the frame it first looked fallen (confirmed by the next frame)
    winner = ""
    found: list[tuple[int, str, str, str, dict]] = []
    out: list[dict] = []
    for k, img in P.frames(video, w, h):
        c = np.median(img[ys, xs].astype(float), axis=1)            # (n, 3) centre colours
        d_fill = np.linalg.norm(c[:-1] - fills, axis=1)
        d_white = np.linalg.norm(c[:-1] - white, axis=1)
        up = (d_fill < NEAR) | (d_white < NEAR)
        events_here = []
        for i, b in enumerate(names):
            if not standing[b]:
                continue
            if up[i]:
                pending.pop(b, None)
                continue
            first = pending.setdefault(b, k)
            if k - first >= 1:        # fallen in two frames running: it fell at the first
                events_here.append((first, b))
        for first, b in sorted(events_here):
            standing[b] = False
            del pending[b]
            kind, lane, tier, _ = BUILDINGS[b]
            side = b.split("_")[0]
            actor = SIDES[1 - SIDES.index(side)]
            if kind == "fort":
                winner = actor
                found.append((first, "ancient", actor, "", visible_state(standing, roshan_kills, first / fps, winner)))
            else:
                found.append((first, "tower" if kind == "tower" else "barracks", actor, where_of(kind, lane, tier),
                              visible_state(standing, roshan_kills, first / fps, winner)))
        rc = c[-1]
        near = {s: float(np.linalg.norm(rc - np.array(v, float))) for s, v in rosh_refs.items()}
        now = min(near, key=near.get)
        if near[now] < NEAR and now != roshan:
            if now:
                roshan_kills[now] += 1
                found.append((k, "roshan", now, "", visible_state(standing, roshan_kills, k / fps, winner)))
            roshan = now
        for f, type_, actor, where, vis in found:
            writer.add(P.row(f / fps, type_, actor, where, delta="up" if actor == "radiant" else "down",
                             state=naive_state(vis)))
            out.append(vis)
        found.clear()
    log(f"{len(out)} events")
    return out
