"""A scored system as the machine-readable outputs of `video-arena score`: the JSON document and the
CSV rows (docs/SCORING.md, "Output").  The terminal table is video_arena/scoring/cli.py's.
"""
from __future__ import annotations

from typing import Any

from video_arena.core.results import REASONING_EFFORT
from video_arena.core import case_origins as CO
from video_arena.scoring.cells import (ALL_METRICS, ALWAYS_DEFINED, CAVEATS, METRICS, N_COLUMN, SCORE_FORMAT,
                                       STATUS_CORRUPT, STATUS_DIAGNOSTIC, STATUS_FLAGGED, STATUS_MISSING, STATUS_SCORED,
                                       STATUS_UNVERIFIED, STATUSES, T2_MACRO_ACC, T3_MACRO_ACC, TIERS, ZERO_FILLED)
from video_arena.scoring.statistics import SystemScore, public_overall


def to_json(systems: list[SystemScore], comparison: dict[str, Any] | None = None) -> dict[str, Any]:
    s0 = systems[0]
    doc: dict[str, Any] = {
        "format": SCORE_FORMAT,
        "tasks_root": str(s0.tasks_root),
        "tolerance_s": s0.tolerance_s,
        "diagnostic": s0.diagnostic,
        "judge_version": s0.judge_version,
        "bootstrap": {"n": s0.n_boot, "seed": s0.seed, "level": 0.95, "method": "percentile"},
        "t2_t3_rule": (f"headline {T2_MACRO_ACC}/{T3_MACRO_ACC}: mean over scored cells where the tier is computable "
                       "(>= 1 T1 match), own n; t2_zero_filled/t3_zero_filled: every scored cell, no match = 0.0 "
                       "(Harbor's reward.json)"),
        "systems": [],
    }
    for s in systems:
        summ = s.summary()
        summ["overall"] = public_overall(s.overall())
        summ["cells"] = [c.to_row() for c in s.cells()]
        summ["case_origins"] = {g: CO.origin_summary(CO.case_origins(s.tasks_root, g)) for g in s.games}
        doc["systems"].append(summ)
    if comparison is not None:
        doc["compare"] = comparison
    return doc


CSV_FIELDS = ["system", "game", "n_cases", "n_scored", "n_scored_cases", "n_cells", "missing", "diagnostic",
              "unverified", "flagged_excluded", "corrupt", "context_overflow", "zero_rows",
              "format_errors",
              # one group per metric the judge names: a tier with its n, every other metric with its 95% interval
              *(c for m in METRICS for c in ((m, N_COLUMN[m]) if m in TIERS else (m, f"{m}_ci_lo", f"{m}_ci_hi"))),
              *ZERO_FILLED,
              "degraded", "truncated", "multi_block", "audit_flagged", "redrawn", "over_turns", "no_isolation",
              "allow_paths", "preflight_warned", "content_filtered", "served_other_model", "non_reference",
              "served_unnamed", "isolation_unrecorded", "t1_recall_ceiling_mean", REASONING_EFFORT,
              "in_overall", "table_diagnostic", "mixed", "cases"]


def _overall_kind(kinds: list[str]) -> str:
    """public, private or mixed over the games' tables (mixed when they differ)."""
    known = set(kinds) - {"-"}
    return known.pop() if len(known) == 1 else (CO.MIXED if known else "-")


def _efforts_str(t: dict[str, int]) -> str:
    return "; ".join(f"{k} ({v})" for k, v in t.items())


def csv_rows(systems: list[SystemScore]) -> list[dict[str, Any]]:
    rows = []
    for s in systems:
        overall = s.overall()
        for g, gs in s.games.items():
            r = {"system": s.label, "game": g, "n_cases": gs.n_cases, "n_scored": gs.n_scored,
                 "n_scored_cases": gs.n_scored_cases, "n_cells": len(gs.cells),
                 "missing": gs.counts[STATUS_MISSING], "diagnostic": gs.counts[STATUS_DIAGNOSTIC],
                 "unverified": gs.counts[STATUS_UNVERIFIED], "zero_rows": gs.counts["zero_rows"],
                 "flagged_excluded": gs.counts[STATUS_FLAGGED], "corrupt": gs.counts[STATUS_CORRUPT],
                 "format_errors": gs.counts["format_error"], "in_overall": g in overall["games"],
                 "t1_recall_ceiling_mean": gs.recall_ceiling(), REASONING_EFFORT: _efforts_str(gs.efforts()),
                 "table_diagnostic": s.diagnostic, "mixed": "; ".join(s.mixed),
                 "cases": CO.origin_summary(CO.case_origins(s.tasks_root, g))["kind"]}
            for cv in CAVEATS:
                r[cv] = gs.counts[cv]
            for m in ALL_METRICS:
                r[m] = gs.means[m]
            for m in ALWAYS_DEFINED:
                ci = gs.ci[m]
                r[f"{m}_ci_lo"], r[f"{m}_ci_hi"] = (ci if ci else (None, None))
            for m in TIERS:
                r[N_COLUMN[m]] = gs.n[m]
            rows.append(r)
        r = {k: None for k in CSV_FIELDS}
        cv_all = s.caveats()
        tot = {k: sum(gs.counts[k] for gs in s.games.values()) for k in STATUSES + ("zero_rows", "format_error")}
        r.update({"system": s.label, "game": "OVERALL", "n_cases": sum(gs.n_cases for gs in s.games.values()),
                  "n_scored": tot[STATUS_SCORED], "n_scored_cases": cv_all["n_scored"],
                  "n_cells": sum(len(gs.cells) for gs in s.games.values()), "missing": tot[STATUS_MISSING],
                  "diagnostic": tot[STATUS_DIAGNOSTIC], "unverified": tot[STATUS_UNVERIFIED],
                  "flagged_excluded": tot[STATUS_FLAGGED], "corrupt": tot[STATUS_CORRUPT],
                  "zero_rows": tot["zero_rows"], "format_errors": tot["format_error"], "in_overall": True,
                  "t1_recall_ceiling_mean": cv_all["t1_recall_ceiling_mean"],
                  REASONING_EFFORT: _efforts_str(cv_all[REASONING_EFFORT]),
                  "table_diagnostic": s.diagnostic, "mixed": "; ".join(s.mixed),
                  "cases": _overall_kind([CO.origin_summary(CO.case_origins(s.tasks_root, g))["kind"] for g in s.games])})
        for cv in CAVEATS:
            r[cv] = cv_all[cv]
        for m in ALL_METRICS:
            r[m] = overall["means"][m]
        for m in ALWAYS_DEFINED:
            ci = overall["ci95"][m]
            r[f"{m}_ci_lo"], r[f"{m}_ci_hi"] = (ci if ci else (None, None))
        rows.append(r)
    return rows
