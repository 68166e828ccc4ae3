"""The judge's row checks and matching as they were in judge 1.0.0 before the speed work (issue 14):
dicts per row, one sort and one table per key.  Frozen here on purpose, so the property tests can
prove the faster judge accepts, rejects and matches exactly as this did.  Do not "fix" or share code
with judge/judge.py: a reference that moves with the code under test proves nothing.
"""
from __future__ import annotations

import math
from collections import defaultdict

ROW_FIELDS = ("t", "type", "actor", "where", "delta", "state")
TEXT_FIELDS = ("type", "actor", "where", "delta", "state")
DELTA_LABELS = ("up", "down", "flat")
MAX_ROWS = 10_000
MAX_TEXT_CHARS = 200
EPS = 1e-9


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_rows(rows, spec, what="row"):
    """-> (rows, None) or (None, reason); only the verdict and the rows are compared."""
    if not isinstance(rows, list):
        return None, "not a list"
    if len(rows) > MAX_ROWS:
        return None, "too many rows"
    allowed = {"type": set(spec["event_types"]), "actor": set(spec["sides"]),
               "delta": set(DELTA_LABELS), "state": set(spec["state_labels"])}
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            return None, f"{what} {i}"
        if any(f not in row for f in ROW_FIELDS):
            return None, f"{what} {i}"
        t = row["t"]
        if not _is_number(t):
            return None, f"{what} {i}"
        try:
            t = float(t)
        except OverflowError:
            return None, f"{what} {i}"
        if not math.isfinite(t) or t < 0:
            return None, f"{what} {i}"
        norm = {"t": t}
        for f in TEXT_FIELDS:
            v = row[f]
            if not isinstance(v, str) or len(v) > MAX_TEXT_CHARS:
                return None, f"{what} {i}"
            v = v.strip().lower()
            if f in allowed and v not in allowed[f]:
                return None, f"{what} {i}"
            norm[f] = v
        out.append(norm)
    return out, None


def _canonical(rows):
    return sorted(range(len(rows)), key=lambda i: (rows[i]["t"],) + tuple(rows[i][f] for f in TEXT_FIELDS))


def match_rows(pred, gt, key_fields, tolerance):
    groups = defaultdict(lambda: ([], []))
    for i in _canonical(pred):
        groups[tuple(pred[i][f] for f in key_fields)][0].append(i)
    for j in _canonical(gt):
        groups[tuple(gt[j][f] for f in key_fields)][1].append(j)
    pairs = []
    for key in sorted(groups):
        pis, gis = groups[key]
        if pis and gis:
            for p_chunk, g_chunk in _components(pis, gis, pred, gt, tolerance):
                pairs.extend(_align(p_chunk, g_chunk, pred, gt, tolerance))
    pairs.sort(key=lambda pg: pg[1])
    return pairs


def _components(pis, gis, pred, gt, tolerance):
    merged = sorted([(pred[i]["t"], 0, rank, i) for rank, i in enumerate(pis)]
                    + [(gt[j]["t"], 1, rank, j) for rank, j in enumerate(gis)])
    chunk_p, chunk_g, last_t = [], [], None
    for t, side, _rank, idx in merged:
        if last_t is not None and t - last_t > tolerance + EPS:
            if chunk_p and chunk_g:
                yield chunk_p, chunk_g
            chunk_p, chunk_g = [], []
        (chunk_p if side == 0 else chunk_g).append(idx)
        last_t = t
    if chunk_p and chunk_g:
        yield chunk_p, chunk_g


def _align(pis, gis, pred, gt, tolerance):
    pt = [pred[i]["t"] for i in pis]
    gtt = [gt[j]["t"] for j in gis]
    n_g = len(gis)
    lim = tolerance + EPS
    prev_c, prev_s = [0] * (n_g + 1), [0.0] * (n_g + 1)
    choices = []
    for a in pt:
        cur_c, cur_s = [0] * (n_g + 1), [0.0] * (n_g + 1)
        ch_row = bytearray(n_g + 1)
        for j in range(1, n_g + 1):
            bc, bs, ch = prev_c[j], prev_s[j], 0
            c, s = cur_c[j - 1], cur_s[j - 1]
            if c > bc or (c == bc and s < bs):
                bc, bs, ch = c, s, 1
            dt = abs(a - gtt[j - 1])
            if dt <= lim:
                c, s = prev_c[j - 1] + 1, prev_s[j - 1] + dt
                if c > bc or (c == bc and s < bs):
                    bc, bs, ch = c, s, 2
            cur_c[j], cur_s[j], ch_row[j] = bc, bs, ch
        choices.append(ch_row)
        prev_c, prev_s = cur_c, cur_s
    pairs = []
    i, j = len(pt), n_g
    while i > 0 and j > 0:
        ch = choices[i - 1][j]
        if ch == 2:
            pairs.append((pis[i - 1], gis[j - 1]))
            i, j = i - 1, j - 1
        elif ch == 1:
            j -= 1
        else:
            i -= 1
    return pairs
