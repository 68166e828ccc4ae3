"""The metrics by name: the judge's REWARD_KEYS (judge/judge.py) are the one entry that names them.

Every output (the score table, CSV/JSON, the md report, the explorer, the timeline, baselines, the Harbor
summaries) iterates METRICS; a metric added to the judge's REWARD_KEYS, and nowhere else, appears in each
(tests/unit/test_metrics_by_name.py).  The display tables here are keyed by name, with defaults for a
name they do not hold.
"""
from __future__ import annotations

from video_arena.core.judge_loader import load_judge

#: The metric names, in the judge's order (judge/judge.py REWARD_KEYS): the one entry that names them.
#: Every output (the score table, CSV/JSON, the md report, the explorer, the timeline, baselines, the
#: Harbor summaries) iterates these names; a metric added to the judge's REWARD_KEYS appears in each.
METRICS = load_judge().REWARD_KEYS
#: The headline (the judge names it first) and the named tiers other rules speak of (the judge's first
#: four keys: strict F1, T1 F1, T2 and T3); any further key is one more always-defined metric.
REWARD, T1_F1, T2_MACRO_ACC, T3_MACRO_ACC = METRICS[:4]
#: the tiers scored on T1-matched rows only (None for a cell without a match)
TIERS = (T2_MACRO_ACC, T3_MACRO_ACC)
#: Display labels, keyed by metric name (the explorer's pages, the timeline); a metric without one is
#: shown by its name (`label_of`).
LABELS = {REWARD: "reward", T1_F1: "T1 F1", T2_MACRO_ACC: "T2 macro", T3_MACRO_ACC: "T3 macro"}
#: Short column headings of the terminal table, keyed by metric name (default: the name).
SHORT = {T2_MACRO_ACC: "t2_macro", T3_MACRO_ACC: "t3_macro"}
#: T2/T3 with a cell that has no T1 match counted as 0.0 (Harbor's reward.json convention): the
#: labelled second column; the headline T2/T3 are the conditional ones above (docs/SCORING.md).
ZERO_FILLED = {"t2_zero_filled": T2_MACRO_ACC, "t3_zero_filled": T3_MACRO_ACC}
#: the column counting the cells a tier was computable on (the CSV's n_t2, n_t3)
N_COLUMN = {tier: "n_" + zf.split("_", 1)[0] for zf, tier in ZERO_FILLED.items()}
ALL_METRICS = METRICS + tuple(ZERO_FILLED)
#: Metrics that are always defined for a scored cell (every metric but the tiers); T2/T3 are None
#: without a T1 match.
ALWAYS_DEFINED = tuple(m for m in METRICS if m not in TIERS)


def label_of(metric: str) -> str:
    """A metric's display label (LABELS), else its name."""
    return LABELS.get(metric, metric)
