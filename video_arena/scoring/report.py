"""`video-arena score --report md`: a Markdown report a paper appendix can take as is.

Per system: the table (n scored / n cases, every metric with its 95 % bootstrap interval, T2/T3 with
their own n and the zero-filled column), the caveat counts per game and overall, the conditions the
cells ran under (protocol, model, reasoning effort, condition digest, grid, transport, tolerance), the
integrity checks, and the chart (the `--plot` PNG, referenced by a path relative to the report).
Everything comes from the same SystemScore the text table prints; nothing is recomputed here.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from video_arena.core.results import REASONING_EFFORT
from video_arena.core import case_origins as CO
from video_arena.scoring import cells as SC
from video_arena.scoring import statistics as SS


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _ci(ci) -> str:
    return "–" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _tally(t: dict[str, int]) -> str:
    return ", ".join(f"{k} ({v})" for k, v in t.items()) or "–"


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|")


def _results_table(s: SS.SystemScore) -> list[str]:
    """The results table: a column group per metric the judge names (SC.METRICS), then the tiers with a
    no-match cell as 0.0."""
    head = ["game", "scored / cases"]
    for m in SC.METRICS:
        head += [f"{SC.label_of(m)} (n)"] if m in SC.TIERS else [SC.label_of(m), f"{SC.label_of(m)} 95 % CI"]
    head.append(" \\| ".join(SC.label_of(t).split()[0] for t in SC.ZERO_FILLED.values()) + ", no match = 0")
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cells(means: dict, n: dict, ci: dict, n_unit: str = "", bold: bool = False) -> str:
        out = []
        for m in SC.METRICS:
            if m in SC.TIERS:
                out.append(f"{_f(means[m])} ({n[m]}{n_unit})")
            else:
                v = _f(means[m])
                out += [f"**{v}**" if bold and m == SC.REWARD else v, _ci(ci[m])]
        out.append(" \\| ".join(_f(means[k]) for k in SC.ZERO_FILLED))
        return " | ".join(out)

    for g, gs in s.games.items():
        rows.append(f"| {g} | {gs.n_scored_cases}/{gs.n_cases} | {cells(gs.means, gs.n, gs.ci)} |")
    o = s.overall()
    n_g = len(o["games"])
    rows.append(f"| **overall** ({n_g} game{'s' if n_g != 1 else ''}, mean of game means) "
                f"| {sum(gs.n_scored_cases for gs in s.games.values())}/{sum(gs.n_cases for gs in s.games.values())} "
                f"| {cells(o['means'], o['n_games'], o['ci95'], ' g', bold=True)} |")
    return rows


def _caveat_table(s: SS.SystemScore) -> list[str]:
    rows = ["| game | scored / cases | 0-row | missing | excluded | context overflow (0.0) | degraded | truncated "
            "| multi-block | content-filtered | audit not clean | served another model | non-reference condition "
            "| served model not named | isolation not recorded | mean recall ceiling | reasoning effort |",
            "|" + "---|" * 17]
    for g, gs in s.games.items():
        cv = gs.caveats()
        rows.append(f"| {g} | {cv['n_scored']}/{cv['n_cases']} | {cv['zero_rows']} | {gs.counts[SC.STATUS_MISSING]} "
                    f"| {gs.counts['excluded']} | {cv['context_overflow']} | {cv['degraded']} | {cv['truncated']} "
                    f"| {cv['multi_block']} | {cv['content_filtered']} | {cv['audit_flagged']} "
                    f"| {cv['served_other_model']} | {cv['non_reference']} | {cv['served_unnamed']} "
                    f"| {cv['isolation_unrecorded']} | {_f(cv['t1_recall_ceiling_mean'])} "
                    f"| {_esc(_tally(cv[REASONING_EFFORT]))} |")
    cv = s.caveats()
    miss = sum(gs.counts[SC.STATUS_MISSING] for gs in s.games.values())
    excl = sum(gs.counts["excluded"] for gs in s.games.values())
    rows.append(f"| **overall** | {cv['n_scored']}/{cv['n_cases']} | {cv['zero_rows']} | {miss} | {excl} "
                f"| {cv['context_overflow']} | {cv['degraded']} | {cv['truncated']} | {cv['multi_block']} "
                f"| {cv['content_filtered']} | {cv['audit_flagged']} | {cv['served_other_model']} | {cv['non_reference']} "
                f"| {cv['served_unnamed']} | {cv['isolation_unrecorded']} | {_f(cv['t1_recall_ceiling_mean'])} "
                f"| {_esc(_tally(cv[REASONING_EFFORT]))} |")
    return rows


def _conditions(s: SS.SystemScore) -> list[str]:
    cond = s.conditions()
    out = [f"- Protocol: {_tally(cond['protocol'])}",
           f"- Model: {_esc(_tally(cond['model']))}",
           f"- Reasoning effort: {_esc(_tally(cond[REASONING_EFFORT]))}"]
    if any(k != "(not recorded)" for k in cond["condition_sha256"]):
        out.append(f"- Condition (SHA-256, first 12): "
                   f"{_tally({k[:12]: v for k, v in cond['condition_sha256'].items()})}")
    if any(k != "(not recorded)" for k in cond["grid"]):
        out.append(f"- Declared sampling grid (fps, max stills, longest side, JPEG q): {_tally(cond['grid'])}")
    if any(k != "(not recorded)" for k in cond["transport"]):
        out.append(f"- Transport: {_tally(cond['transport'])}")
    out.append(f"- Toolkit that made the runs (version, commit, judge): {_esc(_tally(cond['toolkit']))}")
    out.append(f"- Matching tolerance: {s.tolerance_s:g} s"
               + (" (DIAGNOSTIC: the benchmark's is 3 s)" if s.tolerance_diagnostic else ""))
    checks = SS.count_values(c.answer_check for c in s.cells() if c.status == SC.STATUS_SCORED)
    out.append(f"- Answers checked against the run record's SHA-256: {_tally(checks)}")
    gt = "every game" if not s.gt_unchecked else f"all but {', '.join(s.gt_unchecked)} (no manifest.json)"
    out.append(f"- Ground truth checked against the tasks tree's manifest: {gt}")
    if s.exclude_flagged:
        out.append(f"- Audit-flagged cells excluded (--exclude-flagged): {s.caveats()['excluded_flagged']}")
    if s.harbor is not None:
        h = s.harbor
        out.append(f"- Harbor job `{h.get('job')}`: agent(s) {', '.join(h.get('agents') or []) or '–'}, "
                   f"{h.get('n_attempts')} attempt(s) per task")
    out.append(f"- Judge {s.judge_version}; intervals: 95 % percentile bootstrap over cases, {s.n_boot} resamples, "
               f"seed {s.seed}; overall: games resampled independently")
    return out


def _compare(cmp: dict[str, Any]) -> list[str]:
    a, b = cmp["a"]["label"], cmp["b"]["label"]
    out = [f"## Comparison: A = {a}, B = {b}", ""]
    if cmp.get("mixed"):
        out += ["> **DIAGNOSTIC**: the systems ran under different conditions on the shared games: "
                + "; ".join(_esc(m) for m in cmp["mixed"]), ""]
    if cmp["dropped_games"]:
        out += ["Games not scored by both (left out): "
                + "; ".join(f"{g} ({why})" for g, why in cmp["dropped_games"].items()), ""]
    out += [f"Paired: compared on the {cmp['n_paired_cases']} case(s) both systems scored (left out: "
            f"{cmp['n_a_only']} scored by A only, {cmp['n_b_only']} by B only).", "",
            "| game | paired / cases | A only | B only | A reward | B reward | A − B | 95 % CI of A − B | A / B |",
            "|---|---|---|---|---|---|---|---|---|"]
    for g in cmp["shared_games"]:
        e, r = cmp["games"][g], cmp["games"][g][SC.REWARD]
        out.append(f"| {g} | {e['n_paired']}/{e['n_cases'][0]} | {e['n_a_only']} | {e['n_b_only']} "
                   f"| {_f(r['a'])} | {_f(r['b'])} | {'–' if r['diff'] is None else format(r['diff'], '+.3f')} "
                   f"| {_ci(r['diff_ci95'])} | {'–' if r['ratio'] is None else format(r['ratio'], '.2f') + '×'} |")
    o = cmp["overall_shared"][SC.REWARD]
    out.append(f"| **overall, paired ({len(cmp['shared_games'])} games)** | | | | {_f(o['a'])} | {_f(o['b'])} "
               f"| {'–' if o['diff'] is None else format(o['diff'], '+.3f')} | {_ci(o['diff_ci95'])} "
               f"| {'–' if o['ratio'] is None else format(o['ratio'], '.2f') + '×'} |")
    return out + [""]


def markdown_report(systems: list[SS.SystemScore], comparison: dict[str, Any] | None = None, *,
                    plot: Path | None = None, md_path: Path | None = None) -> str:
    out: list[str] = []
    title = " vs ".join(s.label for s in systems)
    out += [f"# Video-Arena results: {title}", ""]
    for s in systems:
        if len(systems) > 1:
            out += [f"## {s.label}", ""]
        if s.mixed:
            out += ["> **DIAGNOSTIC** (`--allow-mixed`): these cells are not one measurement; do not report this "
                    "table as a benchmark number. They differ in: " + "; ".join(_esc(m) for m in s.mixed), ""]
        if s.tolerance_diagnostic:
            out += [f"> **DIAGNOSTIC**: scored at a {s.tolerance_s:g} s tolerance (the benchmark's is 3 s).", ""]
        bad = s.integrity_errors()
        if bad:
            out += [f"> **INTEGRITY ERROR** in {len(bad)} cell(s), not scored: "
                    + "; ".join(f"{c.game}/{c.case_id}" for c in bad[:20]), ""]
        out += _results_table(s) + [""]
        dropped = s.dropped_games()
        if dropped:
            out += ["Dropped from the overall mean: " + "; ".join(f"{g} ({why})" for g, why in dropped.items()), ""]
        out += ["**Caveats** (counts of scored cells):", ""] + _caveat_table(s) + [""]
        out += ["**Cases** (public: built-in matches a model may have seen; private: a user's own records):", ""]
        out += [f"- {_esc(CO.origin_line(g, CO.origin_summary(CO.case_origins(s.tasks_root, g))))}" for g in s.games] + [""]
        out += ["**Conditions**:", ""] + _conditions(s) + [""]
    if comparison is not None:
        out += _compare(comparison)
    if plot is not None:
        ref = plot.name if md_path is None else os.path.relpath(plot.resolve(), md_path.resolve().parent)
        out += ["![Game means of the reward with 95 % bootstrap intervals; under each bar, scored cases / cases]"
                f"({Path(ref).as_posix()})", ""]
    out += ["*Definitions.* reward: F1 of the strict matching (type, actor, where, delta, state within ±3 s). "
            "T1 F1: matching on (type, actor, where). T2/T3: macro accuracy of delta/state over the T1 pairs, "
            "averaged over the cells with at least one pair (n); the last column counts a cell without a pair "
            "as 0.0 (Harbor's reward.json). Missing cells (the run never happened: a failure on the harness's side) "
            "are in no mean; 0-row cells (the run left no answer) score 0.0; a context overflow (the request did "
            "not fit the model's context after any degrade the condition allows) scores 0.0 on every metric. "
            "Content-filtered: the reply ended on the provider's content filter (scored as the reply it is). Served model "
            "not named: a Protocol A reply that names no model, so nothing says the requested model answered. Isolation "
            "not recorded: a Protocol B record that names no isolation mode (neither isolated nor known not to be). "
            "Degraded: the run fell back from the declared grid (JPEG "
            "quality raised, fewer stills); truncated: the reply hit the output cap; multi-block: the reply held "
            "several answer objects (the one with the most rows was scored); audit not clean: the egress audit "
            "flagged or could not check the agent's transcript. The overall is the unweighted mean of the game "
            "means; its interval resamples every game independently.", ""]
    return "\n".join(out)  # ends with a newline (the last item is "")
