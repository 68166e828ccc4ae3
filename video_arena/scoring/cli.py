"""`video-arena score` and `video-arena judge`.

    video-arena score RESULTS|JOB [--tasks-root DIR] [--compare OTHER_RESULTS] [--csv OUT] [--cells-csv OUT]
                      [--json OUT] [--plot OUT.png] [--bootstrap N] [--seed S] [--no-verify-requests]
                      [--tolerance S] [--allow-mixed] [--exclude-flagged] [--report md [--report-out OUT.md]]
    video-arena judge GT ANSWER [--tolerance S]

RESULTS is a results folder as both native runners write it, JOB a Harbor job folder (detected by its
layout, video_arena/core/results.py); both are scored by the rules of docs/SCORING.md, the one place
they are written.  Exit status: 2 for an input that cannot be scored or a table of more than one
measurement without --allow-mixed, 1 for an integrity error, an unusable ground truth, a Harbor
reward that differs from the re-judged one, or a source in which no cell ran (no agent ever started),
else 0.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

from video_arena.core.results import REASONING_EFFORT
from video_arena.core import case_origins as CO
from video_arena.scoring import harbor_jobs as HJ
from video_arena.scoring import cells as SC
from video_arena.scoring import output as SO
from video_arena.scoring import statistics as SS
from video_arena.core.judge_loader import JudgeUnavailable, load_judge
from video_arena.scoring.report import markdown_report


def _f(v: float | None, nd: int = 3) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{nd}f}"


def _ci(ci) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def format_system(s: SS.SystemScore) -> str:
    lines = []
    models = ", ".join(f"{m} ({n})" for m, n in s.models().items()) or "-"
    protos = ", ".join(f"{p} ({n})" for p, n in s.protocols().items()) or "-"
    lines.append(f"results {s.results}   system: {s.label}")
    lines.append(f"  model(s): {models}   protocol(s): {protos}")
    if s.harbor is not None:
        lines += HJ.format_lines(s)
    if s.tolerance_diagnostic:
        lines.append(f"  DIAGNOSTIC: scored at a {s.tolerance_s:g} s tolerance; not a benchmark score "
                     f"(the benchmark tolerance is {SC.BENCHMARK_TOLERANCE_S:g} s)")
    if s.mixed:
        lines.append("  DIAGNOSTIC (--allow-mixed): these cells are not one measurement; never report this table "
                     "as a benchmark number. They differ in:")
        lines += [f"    {m}" for m in s.mixed]
    nonref = [c for c in s.cells() if c.non_reference and c.status != SC.STATUS_MISSING]
    if nonref:
        shas = sorted({str(c.condition_sha256)[:12] for c in nonref})
        lines.append(f"  NON-REFERENCE CONDITION: {len(nonref)} Protocol A cell(s) ran under a condition file that is "
                     f"none of the versioned ones (digest {', '.join(shas[:3])}): not the benchmark's condition, "
                     f"whatever name it gives itself; counted in the non-ref column")
    served = [c for c in s.cells() if c.served_other_model and c.status != SC.STATUS_MISSING]
    if served:
        names = SS.count_values(f"{c.model} -> {c.served_model}" for c in served)
        lines.append(f"  SERVED ANOTHER MODEL: {len(served)} cell(s) whose reply names another model than the requested "
                     f"one ({', '.join(f'{k} ({v})' for k, v in list(names.items())[:3])}); counted in the served column")
    n_a = sum(1 for c in s.cells() if c.protocol == "A" and c.status != SC.STATUS_MISSING)
    if not s.requests_verified and n_a:
        lines.append(f"  CAVEAT (--no-verify-requests): {n_a} Protocol A cell(s) scored without rebuilding their "
                     f"requests from the condition file, case and receipt")
    if s.nothing_measured():
        lines.append(f"  NOTHING MEASURED: {s.nothing_measured()}")
    bad = s.integrity_errors()
    if bad:
        lines.append(f"  INTEGRITY ERROR in {len(bad)} cell(s): not scored, not in any mean:")
        lines += [f"    {c.game}/{c.case_id}: {c.reason}" for c in bad[:20]]
    if s.exclude_flagged:
        n = s.caveats()["excluded_flagged"]
        lines.append(f"  --exclude-flagged: {n} audit-flagged cell(s) excluded (verdict not clean; counted in excl)")
    multi = any(gs.multi_attempt for gs in s.games.values())
    trials_hdr = f" {'trials':>7}" if multi else ""
    hdr = (f"  {'game':<11} {'scored':>7}{trials_hdr} {'0-row':>5} {'miss':>4} {'ovfl':>4} {'excl':>4} {'fmt':>3}  "
           f"{metric_headings()}")
    lines.append(hdr)
    lines.append("  " + "-" * (len(hdr) - 2))
    for g, gs in s.games.items():
        c = gs.counts
        excl = c["excluded"]
        trials = f" {f'{gs.n_scored}/{len(gs.cells)}':>7}" if multi else ""
        ovfl = c["context_overflow"]
        lines.append(f"  {g:<11} {f'{gs.n_scored_cases}/{gs.n_cases}':>7}{trials} {c['zero_rows']:>5} {c[SC.STATUS_MISSING]:>4} "
                     f"{ovfl:>4} {excl:>4} {c['format_error']:>3}  {metric_cells(gs.means, gs.n, gs.ci)}")
    o = s.overall()
    lines.append("  " + "-" * (len(hdr) - 2))
    n_g = len(o["games"])
    label = f"overall ({n_g} game{'s' if n_g != 1 else ''}: mean of game means)"
    lines.append(f"  {label:<{49 + len(trials_hdr)}} {metric_cells(o['means'], o['n_games'], o['ci95'], 'g')}")
    lines += format_caveats(s)
    lines += format_case_origins(s)
    dropped = s.dropped_games()
    if dropped:
        lines.append("  dropped from the overall mean: " + "; ".join(f"{g} {why}" for g, why in dropped.items()))
    if s.no_case_games:
        lines.append(f"  no cases in the tasks tree: {', '.join(s.no_case_games)}")
    excluded = [c for c in s.cells() if c.status in SC.EXCLUDED]
    for c in excluded[:20]:
        lines.append(f"  excluded {c.game}/{c.case_id}: {c.status}: {c.reason}")
    if len(excluded) > 20:
        lines.append(f"  ... {len(excluded) - 20} more excluded cells (see --json / --cells-csv)")
    if s.warnings:
        lines.append(f"  warnings ({len(s.warnings)}):")
        lines += [f"    {w}" for w in s.warnings[:20]]
        if len(s.warnings) > 20:
            lines.append(f"    ... {len(s.warnings) - 20} more (see --json)")
    lines.append("  columns: scored = scored cases/n_cases; 0-row = scored answers with no rows (never_wrote, "
                 "deleted, no_answer, no_artifact, empty list, unreadable); miss = missing (never ran: our side's failure), "
                 "not in the mean; ovfl = of the scored, requests over the model's context after any degrade the "
                 "condition allows (context_overflow), 0.0 on every metric; excl = "
                 "diagnostic/unverified/flagged, not in the mean; fmt = format errors (scored 0.0); t2/t3 over "
                 "cells with >= 1 T1 match (n), the headline; t2|t3 zf = the same with a no-match cell as 0.0 "
                 "(Harbor's reward.json)")
    if multi:
        lines.append("  several attempts per case: trials = scored trials/trials; 0-row, miss, excl and fmt count "
                     "trials; a case's scored attempts are averaged first, then the cases (n and the CI are over "
                     "cases)")
    if s.n_boot:
        lines.append(f"  95% CI: percentile bootstrap over cases, {s.n_boot} resamples, seed {s.seed}; overall: "
                     f"games resampled independently")
    return "\n".join(lines)


def _tally_str(t: dict[str, int]) -> str:
    return ", ".join(f"{k} ({v})" for k, v in t.items()) or "-"


def caveat_rows(s: SS.SystemScore) -> list[tuple[str, dict[str, Any]]]:
    return [(g, gs.caveats()) for g, gs in s.games.items()] + [("overall", s.caveats())]


def format_caveats(s: SS.SystemScore) -> list[str]:
    """The caveat block under the table: per game and overall, the counts of scored cells that are not a
    clean measurement (docs/SCORING.md, "Caveats")."""
    hdr = (f"  {'caveats':<11} {'scored':>7} {'0-row':>5} {'degraded':>8} {'truncated':>9} {'multi-block':>11} "
           f"{'audit':>5} {'redrawn':>7} {'turns>cap':>9} {'no-iso':>6} {'allow':>5} {'preflight':>9} "
           f"{'filtered':>8} {'served':>6} {'non-ref':>7} {'served?':>7} {'iso?':>4} {'recall ceil':>11}  reasoning effort")
    out = [hdr, "  " + "-" * (len(hdr) - 2)]
    for g, cv in caveat_rows(s):
        scored = f"{cv['n_scored']}/{cv['n_cases']}"
        out.append(f"  {g:<11} {scored:>7} {cv['zero_rows']:>5} "
                   f"{cv['degraded']:>8} {cv['truncated']:>9} {cv['multi_block']:>11} {cv['audit_flagged']:>5} "
                   f"{cv['redrawn']:>7} {cv['over_turns']:>9} {cv['no_isolation']:>6} {cv['allow_paths']:>5} "
                   f"{cv['preflight_warned']:>9} {cv['content_filtered']:>8} {cv['served_other_model']:>6} "
                   f"{cv['non_reference']:>7} {cv['served_unnamed']:>7} {cv['isolation_unrecorded']:>4} "
                   f"{_f(cv['t1_recall_ceiling_mean']):>11}  {_tally_str(cv[REASONING_EFFORT])}")
    out.append("  caveats count scored cells: degraded = run.json degraded/degradations, jpeg_q raised or fewer "
               "stills than the grid; truncated = protocol_complete false; multi-block = n_json_blocks > 1; "
               "audit = egress audit not clean (flagged/unaudited); redrawn = the cell was run again after an "
               "attempt that ran (its earlier attempts are in attempts/; the latest counts); turns>cap = "
               "turns_used above the declared max_turns; no-iso = run-b --no-isolation; allow = extra "
               "--allow-path given; preflight = the preflight warned; filtered = the reply ended on a content filter "
               "(finish_reason content_filter; scored as the reply it is); served = the reply names another model "
               "than the requested one (run.json served_model); non-ref = a condition file that is none of the "
               "versioned ones (not the benchmark's condition); served? = a Protocol A reply that names no model "
               "(served_model null, or a record older than it): nothing says the requested model answered; iso? = a "
               "Protocol B record that names no isolation mode (isolation null, absent or unknown): neither "
               "isolated nor known not to be; recall ceil = mean t1_recall_ceiling")
    return out


def format_case_origins(s: SS.SystemScore) -> list[str]:
    """Per game, whether the table's cases are built-in matches (public), a user's imported records (private)
    or both (importing/contamination.py), so a paper can say which it reports."""
    out = ["  cases (public: built-in cases, or imported records of a built-in case's match, which a model may have "
           "seen; private: imported records of no built-in match):"]
    for g in s.games:
        out.append("    " + CO.origin_line(g, CO.origin_summary(CO.case_origins(s.tasks_root, g))))
    return out


def format_compare(cmp: dict[str, Any]) -> str:
    a, b = cmp["a"]["label"], cmp["b"]["label"]
    lines = [f"compare A = {a} ({cmp['a']['results']})  vs  B = {b} ({cmp['b']['results']})"]
    if cmp.get("mixed"):
        lines.append("  DIAGNOSTIC (--allow-mixed): the systems ran under different conditions on the shared "
                     "games; not a comparison to report:")
        lines += [f"    {m}" for m in cmp["mixed"]]
    shared = cmp["shared_games"]
    lines.append(f"  shared games (a case scored by both): {', '.join(shared) if shared else 'none'}")
    if cmp["dropped_games"]:
        lines.append("  dropped (not scored by both): " + "; ".join(f"{g} ({why})" for g, why in cmp["dropped_games"].items()))
    if not shared:
        lines.append("  nothing to compare: no case was scored by both systems")
        return "\n".join(lines)
    lines.append(f"  paired: compared on the {cmp['n_paired_cases']} case(s) both systems scored; left out: "
                 f"{cmp['n_a_only']} scored by A only, {cmp['n_b_only']} by B only")
    hdr = (f"  {'game':<11} {'paired':>7} {'A only':>6} {'B only':>6}  {'A reward':>8} {'B reward':>8}  {'A-B':>7} "
           f"{'95% CI of A-B':<18} {'A/B':>6}")
    lines += [hdr, "  " + "-" * (len(hdr) - 2)]
    for g in shared:
        e = cmp["games"][g]
        r = e[SC.REWARD]
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        diff = "-" if r["diff"] is None else f"{r['diff']:+.3f}"
        paired = f"{e['n_paired']}/{e['n_cases'][0]}"
        lines.append(f"  {g:<11} {paired:>7} {e['n_a_only']:>6} {e['n_b_only']:>6}  {_f(r['a']):>8} {_f(r['b']):>8}  "
                     f"{diff:>7} {_ci(r['diff_ci95']):<18} {ratio:>6}")
    lines.append("  " + "-" * (len(hdr) - 2))
    o = cmp["overall_shared"][SC.REWARD]
    ratio = "-" if o["ratio"] is None else f"{o['ratio']:.2f}x"
    diff = "-" if o["diff"] is None else f"{o['diff']:+.3f}"
    label = f"overall, paired ({len(shared)} game{'s' if len(shared) != 1 else ''})"
    lines.append(f"  {label:<33}  {_f(o['a']):>8} {_f(o['b']):>8}  {diff:>7} {_ci(o['diff_ci95']):<18} {ratio:>6}")
    for m in SC.METRICS[1:]:
        x = cmp["overall_shared"][m]
        lines.append(f"  {'  ' + m:<33}  {_f(x['a']):>8} {_f(x['b']):>8}  "
                     f"{'-' if x['diff'] is None else format(x['diff'], '+.3f'):>7}")
    own = cmp["own_overall_not_comparable"]
    if own["a"]["games"] != shared or own["b"]["games"] != shared:
        lines.append(f"  not comparable (each over its own games): A {_f(own['a'][SC.REWARD])} "
                     f"({len(own['a']['games'])} games), B {_f(own['b'][SC.REWARD])} ({len(own['b']['games'])} games)")
    return "\n".join(lines)


def _width(m: str) -> int:
    return max(6, len(m))


def metric_headings() -> str:
    """The metric columns' headings of the score table: one per metric the judge names (SC.METRICS),
    then the zero-filled tiers."""
    cols = []
    for m in SC.METRICS:
        if m == SC.REWARD:
            cols.append(f"{m:>6} {'95% CI':<16}")
        elif m in SC.TIERS:
            cols.append(f"{SC.SHORT.get(m, m) + ' (n)':>13}")
        else:
            cols.append(f"{m:>{_width(m)}}")
    zf = "|".join(k.split("_", 1)[0] for k in SC.ZERO_FILLED) + " zf"
    return "  ".join(cols + [f"{zf:>11}"])


def metric_cells(means: dict, n: dict, ci: dict, n_unit: str = "") -> str:
    """One row's metric columns, in metric_headings' order: the headline with its 95% interval, a tier
    with its n (`n_unit` "g": counted in games), every other metric's mean."""
    cols = []
    for m in SC.METRICS:
        if m == SC.REWARD:
            cols.append(f"{_f(means[m]):>6} {_ci(ci[m]):<16}")
        elif m in SC.TIERS:
            cols.append(f"{f'{_f(means[m])} ({n[m]}{n_unit})':>13}")
        else:
            cols.append(f"{_f(means[m]):>{_width(m)}}")
    zf = "|".join(_f(means[k]) for k in SC.ZERO_FILLED)
    return "  ".join(cols + [f"{zf:>11}"])


def write_csv(path: Path, rows: list[dict[str, Any]], fields: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in fields})


CELL_FIELDS = ["system", "game", "case_id", "status", "reason", "protocol", "model", REASONING_EFFORT,
               "stop_reason", "answer_state", "answer_check", "zero_rows", "n_pred", "n_gt", "n_matched",
               "n_matched_strict", *SC.ALL_METRICS, "format_error", "degraded", "degradations", "truncated", "n_json_blocks",
               "multi_block", "context_overflow", "finish_reason", "content_filtered", "audit_verdict", "audit_flagged", "t1_recall_ceiling", "frames_used", "turns_used",
               "condition_sha256", "grid", "transport", "run_tolerance_s", "instruction_current", "toolkit",
               "run_attempt", "n_redraws", "max_turns", "over_turns", "isolation", "n_allow_paths", "preflight",
               "preflight_warnings", "served_model", "served_other_model", "non_reference", "served_unnamed",
               "isolation_unrecorded", "warnings"]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="video-arena score", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="results folder (<game>/<case_id>/{run.json,answer.json}) or a Harbor job "
                    "folder (jobs/<job>/)")
    ap.add_argument("--tasks-root", default=None, help="tasks tree with the cases and ground truth "
                    "(default: $VA_TASKS_ROOT, else the project's tasks/)")
    ap.add_argument("--compare", metavar="OTHER_RESULTS", help="second results folder or Harbor job: diff on the "
                    "shared games")
    ap.add_argument("--csv", metavar="OUT", help="per-game table (plus an OVERALL row per system) as CSV")
    ap.add_argument("--cells-csv", metavar="OUT", help="one row per cell as CSV")
    ap.add_argument("--json", metavar="OUT", help="everything (games, overall, cells, compare) as JSON")
    ap.add_argument("--plot", metavar="OUT.png", help="bar chart of game means with 95%% intervals (PNG)")
    ap.add_argument("--bootstrap", type=int, default=2000, metavar="N", help="bootstrap resamples (default 2000; 0: none)")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    ap.add_argument("--verify-requests", dest="verify_requests", action="store_true", default=True,
                    help="Protocol A: exclude cells whose request does not rebuild from their condition file, "
                    "case and receipt, or whose stills were sampled from other media (the default)")
    ap.add_argument("--no-verify-requests", dest="verify_requests", action="store_false",
                    help="Protocol A: do not rebuild the requests (shown as a caveat above the table)")
    ap.add_argument("--tolerance", type=float, default=SC.BENCHMARK_TOLERANCE_S,
                    help="matching tolerance in s (default 3; anything else is labelled a DIAGNOSTIC)")
    ap.add_argument("--allow-mixed", action="store_true",
                    help="print a table whose cells differ in condition, model, protocol, tolerance or reasoning "
                    "effort (refused otherwise), marked DIAGNOSTIC")
    ap.add_argument("--exclude-flagged", action="store_true",
                    help="leave out cells whose egress audit is not clean (Protocol B, Harbor agents); says how many")
    ap.add_argument("--report", choices=("text", "md"), default="text",
                    help="md: a Markdown report (table with n and 95%% intervals, caveats, conditions, chart)")
    ap.add_argument("--report-out", metavar="OUT.md", help="with --report md: write it here (and the chart beside "
                    "it, unless --plot names one) instead of printing it")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.plot and not a.plot.lower().endswith(".png"):
        print(f"video-arena score: --plot writes a PNG; give a file name ending in .png, not {a.plot!r}", file=sys.stderr)
        return 2
    if a.bootstrap < 0:
        print("video-arena score: --bootstrap must be >= 0", file=sys.stderr)
        return 2
    if a.report_out and a.report != "md":
        print("video-arena score: --report-out needs --report md", file=sys.stderr)
        return 2
    common = dict(tolerance=a.tolerance, n_boot=a.bootstrap, seed=a.seed, verify_requests=a.verify_requests,
                  progress=False if a.quiet else None, exclude_flagged=a.exclude_flagged)
    try:
        systems = [HJ.score_any(a.results, a.tasks_root, **common)]
        if a.compare:
            systems.append(HJ.score_any(a.compare, a.tasks_root, **common))
            if systems[0].label == systems[1].label:
                systems[0].label, systems[1].label = "A:" + systems[0].label, "B:" + systems[1].label
        for s in systems:
            if s.mixed and not a.allow_mixed:
                raise SS.MixedError(f"REFUSED: {s.label} holds cells of more than one measurement "
                                   f"(--allow-mixed prints it as a DIAGNOSTIC)", s.mixed)
        comparison = SS.compare(systems[0], systems[1], allow_mixed=a.allow_mixed) if a.compare else None
    except SS.MixedError as exc:
        print(f"video-arena score: {exc.what}; they differ in:", file=sys.stderr)
        for d in exc.differences:
            print(f"  {d}", file=sys.stderr)
        return 2
    except SC.ScoringInputError as exc:
        print(f"video-arena score: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # judge missing, tasks tree unreadable
        if isinstance(exc, (JudgeUnavailable, FileNotFoundError)):
            print(f"video-arena score: {exc}", file=sys.stderr)
            return 2
        raise
    plot = Path(a.plot) if a.plot else None
    if a.report == "md":
        if plot is None and a.report_out:
            plot = Path(a.report_out).with_suffix(".png")
        md = markdown_report(systems, comparison, plot=plot, md_path=Path(a.report_out) if a.report_out else None)
        if a.report_out:
            Path(a.report_out).parent.mkdir(parents=True, exist_ok=True)
            Path(a.report_out).write_text(md, encoding="utf-8")
            print(f"wrote {a.report_out}")
        else:
            print(md)
    else:
        out = [format_system(s) for s in systems]
        if comparison is not None:
            out.append(format_compare(comparison))
        print("\n\n".join(out))
    if a.json:
        p = Path(a.json)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(SO.to_json(systems, comparison), indent=1, allow_nan=False) + "\n", encoding="utf-8")
        print(f"wrote {p}")
    if a.csv:
        write_csv(Path(a.csv), SO.csv_rows(systems), SO.CSV_FIELDS)
        print(f"wrote {a.csv}")
    if a.cells_csv:
        rows = [dict(c.to_row(), system=s.label) for s in systems for c in s.cells()]
        harbor = any(s.harbor is not None for s in systems)
        write_csv(Path(a.cells_csv), rows, CELL_FIELDS + (HJ.HARBOR_CELL_FIELDS if harbor else []))
        print(f"wrote {a.cells_csv}")
    if plot is not None:
        # deferred: matplotlib (about 3.2 s of CPU): only with --plot
        from video_arena.scoring.plots import plot_game_means
        plot_game_means(systems, plot, comparison)
        print(f"wrote {plot}")
    rc = 0
    for s in systems:
        if s.nothing_measured():
            print(f"video-arena score: {s.label}: {s.nothing_measured()}", file=sys.stderr)
            rc = 1
        for c in s.integrity_errors():
            print(f"video-arena score: {s.label}: {c.game}/{c.case_id}: {c.reason}", file=sys.stderr)
            rc = 1
    gt_errors = [w for s in systems for w in s.warnings if "ground truth unusable" in w]
    if gt_errors:
        print(f"video-arena score: {len(gt_errors)} cell(s) could not be scored because their ground truth "
              f"is unusable (a tasks-tree bug); they are counted as missing", file=sys.stderr)
        rc = 1
    for s in systems:
        mm = (s.harbor or {}).get("mismatches") or []
        if mm:
            print(f"video-arena score: {s.label}: {len(mm)} trial(s) whose Harbor reward differs from the "
                  f"re-judged reward (a stale judge or ground truth in the generated dataset); the report uses "
                  f"the re-judged values", file=sys.stderr)
            rc = 1
    return rc


def judge_main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena judge",
                                 description="Judge one answer against one ground truth; prints the judge's record as JSON.")
    ap.add_argument("gt", help="ground-truth JSON (tasks/<game>/gt/<case_id>.json)")
    ap.add_argument("answer", help="answer JSON ({\"events\": [...]}); a missing file scores 0.0")
    ap.add_argument("--tolerance", type=float, default=SC.BENCHMARK_TOLERANCE_S,
                    help="matching tolerance in s (default 3; anything else is a diagnostic)")
    ap.add_argument("--summary", action="store_true", help="print the four scores only (Harbor's reward.json)")
    a = ap.parse_args(argv)
    try:
        J = load_judge()
    except JudgeUnavailable as exc:
        print(f"video-arena judge: {exc}", file=sys.stderr)
        return 2
    if not Path(a.gt).is_file():
        print(f"video-arena judge: ground truth {a.gt} does not exist", file=sys.stderr)
        return 2
    try:
        record = J.judge_files(a.gt, a.answer, a.tolerance)
    except (J.GroundTruthError, ValueError) as exc:
        print(f"video-arena judge: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(J.reward_of(record) if a.summary else record, indent=1))
    return 0
