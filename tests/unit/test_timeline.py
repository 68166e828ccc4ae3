"""`video-arena timeline`: one case drawn as a PNG from the judge's record."""
from __future__ import annotations

import io
import json
import random

import numpy as np
import pytest
from PIL import Image

from video_arena.scoring import timeline
from video_arena.core.judge_loader import load_judge

SPEC = {"game": "chess", "sides": ["white", "black"],
        "event_types": ["move", "capture", "castle", "promotion", "check", "checkmate"],
        "delta_labels": ["up", "down", "flat"], "state_labels": ["white", "black", "even"], "band": 0.05}
FIELDS = ("t", "type", "actor", "where", "delta", "state")


def long_gt(n=200, seed=3):
    """A 40-minute-scale match: n events 3-20 s apart, V_t a bounded random walk."""
    rng = random.Random(seed)
    t, v, events, series = 4.0, 0.5, [], [[0.0, 0.5]]
    for k in range(n):
        t += rng.uniform(3, 20)
        nv = min(1.0, max(0.0, v + rng.gauss(0, 0.05)))
        d = nv - v
        events.append({"t": round(t, 1), "type": rng.choice(SPEC["event_types"][:5]), "actor": ("white", "black")[k % 2],
                       "where": rng.choice("abcdefgh") + str(rng.randint(1, 8)),
                       "delta": "up" if d > 0.05 else "down" if d < -0.05 else "flat",
                       "state": "white" if nv > 0.55 else "black" if nv < 0.45 else "even",
                       "v_before": v, "v_after": nv})
        v = nv
        series.append([round(t, 1), nv])
    return {"format": "video-arena-gt/1", "game": "chess", "case_id": "TLine001", "spec": SPEC,
            "duration_s": t + 6, "events": events, "v_series": series, "v_definition": "test", "record": {}}


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    d = tmp_path_factory.mktemp("tl")
    gt = long_gt()
    (d / "gt.json").write_text(json.dumps(gt))
    good = {"events": [{k: e[k] for k in FIELDS} for e in gt["events"][::2]]}
    late = {"events": [dict({k: e[k] for k in FIELDS}, t=e["t"] + 5) for e in gt["events"]]}
    (d / "good.json").write_text(json.dumps(good))
    (d / "late.json").write_text(json.dumps(late))
    return d, gt


def _pixels(path):
    return np.asarray(Image.open(io.BytesIO(path.read_bytes())).convert("RGB"), dtype=np.int16)


def test_timeline_png_written_and_answers_differ(case):
    d, gt = case
    assert timeline.main([str(d / "gt.json"), str(d / "good.json"), "-o", str(d / "good.png")]) == 0
    assert timeline.main([str(d / "gt.json"), str(d / "late.json"), "-o", str(d / "late.png")]) == 0
    a, b = d / "good.png", d / "late.png"
    assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert a.stat().st_size > 30_000
    pa, pb = _pixels(a), _pixels(b)
    assert pa.shape == pb.shape and pa.shape[1] >= 1500  # wide enough for ~200 events
    changed = np.any(pa != pb, axis=2).mean()
    assert changed > 0.01, f"only {changed:.4f} of the pixels differ between two different answers"
    # the 'late' answer matches nothing: the 'matched' green survives only in its legend
    green = np.array([0x2e, 0x7d, 0x32])
    ga = (np.abs(pa - green).sum(axis=2) < 30).sum()
    gb = (np.abs(pb - green).sum(axis=2) < 30).sum()
    assert ga > 5 * gb, (ga, gb)


def test_timeline_uses_judge_matches(case, monkeypatch):
    d, gt = case
    J = load_judge()
    data = (d / "good.json").read_bytes()
    rec = J.judge(J.validate_gt(gt), data)
    assert rec["n_matched"] == 100
    drawn = []
    real_plot = timeline.plt.Axes.plot

    def spy(self, *args, **kw):
        if kw.get("color") == timeline.PAIR_LINE:
            drawn.append(args)
        return real_plot(self, *args, **kw)

    monkeypatch.setattr(timeline.plt.Axes, "plot", spy)
    timeline.draw_timeline(gt, data, rec, d / "spy.png")
    assert len(drawn) == len(rec["matches"]) == 100


def test_timeline_bad_answer_window_and_errors(case, capsys):
    d, _ = case
    (d / "bad.json").write_text('{"events": [{"t": 3}]}')
    assert timeline.main([str(d / "gt.json"), str(d / "bad.json"), "-o", str(d / "bad.png"),
                          "--window", "0", "300", "--lanes", "type"]) == 0
    assert (d / "bad.png").stat().st_size > 10_000
    assert timeline.main([str(d / "gt.json"), str(d / "missing.json"), "-o", str(d / "none.png")]) == 0
    assert "drawn as no answer" in capsys.readouterr().err
    assert timeline.main([str(d / "gt.json"), str(d / "good.json"), "-o", str(d / "x.jpg")]) == 2
    assert timeline.main([str(d / "good.json"), str(d / "good.json"), "-o", str(d / "y.png")]) == 2
    assert timeline.main([str(d / "gt.json"), str(d / "good.json"), "-o", str(d / "z.png"), "--window", "5", "1"]) == 2
