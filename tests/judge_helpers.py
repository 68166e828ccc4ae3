"""Shared builders for judge tests: a small ground truth in the real format."""
from __future__ import annotations

import copy

SPEC = {
    "game": "toy",
    "sides": ["white", "black"],
    "event_types": ["move", "capture", "check"],
    "delta_labels": ["up", "down", "flat"],
    "state_labels": ["white", "black", "even"],
    "band": 0.05,
}


def row(t, type_="move", actor="white", where="e4", delta="flat", state="even", **extra):
    r = {"t": t, "type": type_, "actor": actor, "where": where, "delta": delta, "state": state}
    r.update(extra)
    return r


def gt_of(rows, spec=SPEC):
    events = []
    for r in rows:
        r = dict(r)
        r.setdefault("v_before", 0.5)
        r.setdefault("v_after", 0.5)
        events.append(r)
    return {"format": "video-arena-gt/1", "game": spec["game"], "case_id": "Ab3dEf7h",
            "spec": copy.deepcopy(spec), "duration_s": 600.0, "events": events,
            "v_series": [[0.0, 0.5]]}


def answer_of(rows):
    return {"events": [{k: r[k] for k in ("t", "type", "actor", "where", "delta", "state")} for r in rows]}
