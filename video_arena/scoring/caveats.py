"""What makes a cell less than a clean measurement, read from its run record, and what makes a set of
cells not one measurement (docs/SCORING.md, "Caveats" and "Mixed runs").

Per cell (native `run.json`, or a Harbor trial's `agent/run.json` and `agent/trajectory.json`):

* **degraded**: `degraded` true, `degradations` non-empty, `jpeg_q` above the declared grid's, or fewer
  stills than the declared grid gives for the video (`frames_used < min(ceil(duration * fps),
  max_frames)`; a short video with fewer than `max_frames` stills is not degraded).
* **truncated**: `protocol_complete: false` (the reply hit `max_tokens`).
* **content-filtered**: `finish_reason: content_filter` (scored as the reply it is).
* **multi-block**: `n_json_blocks > 1` (the reply held several answer-shaped objects).
* **audit**: a Protocol B cell whose egress-audit verdict is not `clean` (`flagged`, `unaudited` or no
  audit at all: an unchecked transcript is never read as clean).
* the recall ceiling `t1_recall_ceiling`, `turns_used`, and the reasoning effort as recorded.
* **served other model**: a Protocol A reply whose `served_model` (the `model` the server named) is not the
  requested model (`served_differs`: the same name, case aside, with a provider prefix or a date suffix
  such as `-2024-08-06` is the same model; anything else is another).
* **non-reference**: a Protocol A cell whose condition digest is none of the versioned condition files'
  (a custom `--condition`, whatever name and version it gives itself).
* **served model not named**: a Protocol A reply that names no model (`served_model` null or absent).
* **isolation not recorded**: a Protocol B run record that names no isolation mode run-b writes
  (`isolation` null, absent, or without a known `mode`): neither isolated nor known not to be.

Every number is read as recorded only when it is finite and within its range (safe_io.finite_number,
whole_number); anything else is not recorded.

The **declared condition** of a cell: the condition file's digest, the transport, and the condition's
sampling grid.  A degradation (jpeg_q raised for the request cap or by the operator's `--jpeg-q`, fewer
stills for a server's image cap, a context overflow or the operator's `--max-frames`) is a caveat of
that cell, not a different condition: it is undone when the declared grid is computed, and counted
in the degraded column.  Cells whose declared condition, model, protocol, tolerance or reasoning effort
differ are **mixed**, and so are cells differing in any field of condition_fields.py (max_tokens,
temperature, enable_thinking, extra_body, max_turns, timeout, agent command, isolation, Harbor agent
kwargs and timeout multipliers, judge version, and per game the instruction digest).
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable

from video_arena.core.audit import audit_texts, turns_reported
from video_arena.core.condition import ConditionFiles, is_versioned
from video_arena.core.condition_fields import compare_lines, condition_of, mixing_lines
from video_arena.core.judge_loader import load_judge
from video_arena.core import results as R
from video_arena.safe_io import finite_number, read_bounded, read_json_object, whole_number
from video_arena.harbor_api.trials import atif_lines

#: The judge's cap on an answer (judge/judge.py MAX_ANSWER_BYTES); the scorer never reads more than
#: this plus one byte of an answer or a reply.
MAX_ANSWER_BYTES = load_judge().MAX_ANSWER_BYTES
#: Agent transcripts (Harbor trajectory.json, claude-code.txt): larger ones are left unaudited.
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024
OPERATOR = "set by the operator"
GRID_KEYS = ("fps", "max_frames", "longest_side", "jpeg_q")
#: The dimensions that make a results table mixed, in the order they are reported.
MIX_DIMENSIONS = ("protocol", "model", R.REASONING_EFFORT, "condition_sha256", "grid", "transport", "tolerance_s")
#: The ones `compare` refuses between two systems of the same protocol (the model and the reasoning
#: effort are what a comparison compares).
COMPARE_DIMENSIONS = ("condition_sha256", "grid", "transport", "tolerance_s")


#: the stop reasons of a cell whose request did not fit the model's context (native run.json; a Harbor
#: ProtocolA trial's exception type): scored 0.0 on every metric, counted in a column of their own
CONTEXT_OVERFLOW = (R.CONTEXT_OVERFLOW, "ContextOverflowError")
#: the isolation modes run-b records (protocol_b/isolation.py MODE_BWRAP, MODE_NONE)
ISOLATION_MODES = ("bwrap", "none")
#: the ranges a reader holds a run record's numbers to (outside: not recorded): counts (stills, turns,
#: JSON blocks, attempts), seconds of video, frames per second
MAX_COUNT = R.MAX_COUNT
MAX_DURATION_S = 1e9
MAX_FPS = 1e4


# --------------------------------------------------------------------------------------------------
# one run record
# --------------------------------------------------------------------------------------------------
def _count(v: Any) -> int | None:
    return whole_number(v, 0, MAX_COUNT)


def reasoning_effort_of(rec: R.RunRecord) -> tuple[str | None, bool]:
    """(the reasoning effort a run record says it ran with, whether it says anything about it): its
    `reasoning_effort`, else its `request_params`' (the request options, video_arena/core/request.py),
    else the agent template's (`agent`).  A record holding the key with null states "none sent"; a record
    without the key says nothing (an older runner), and is not counted as a different effort."""
    a = rec.protocol_a
    nested = [p for p in (a.request_params, rec.extras.get("agent")) if isinstance(p, dict)]
    said = [(a.reasoning_effort, a.recorded(a.reasoning_effort))]
    said += [(p.get(R.REASONING_EFFORT), R.REASONING_EFFORT in p) for p in nested]
    for value, recorded in said:
        if recorded and value not in (None, ""):
            return str(value), True
    return None, any(recorded for _, recorded in said)


def _condition_grid(sha: Any, conditions_dir: Path | None, conditions: ConditionFiles) -> dict[str, Any] | None:
    cond, _ = conditions.find(sha, [conditions_dir] if conditions_dir else [])
    if cond is None:
        return None  # an unreadable condition is simply not used
    try:
        g = cond.grid()
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    return {k: getattr(g, k) for k in GRID_KEYS}


def declared_grid(run: R.ProtocolARecord, conditions_dir: Path | None = None,
                  conditions: ConditionFiles | None = None) -> dict[str, Any] | None:
    """The sampling grid of the cell's condition: its `sampling` with every degradation undone, whether
    the runner took it by itself (request cap, server image cap, context overflow) or the operator set
    it (`--jpeg-q`, `--max-frames`): a degradation is a caveat of the cell, never another condition."""
    sampling = run.sampling
    if not isinstance(sampling, dict):
        return None
    grid = {k: sampling.get(k) for k in GRID_KEYS if k in sampling}
    degs = [d for d in (run.degradations or []) if isinstance(d, dict)]
    base = None
    for kind in ("jpeg_q", "max_frames"):
        mine = [d for d in degs if d.get("kind") == kind]
        if not mine:
            continue
        if base is None and run.condition_sha256:
            base = _condition_grid(run.condition_sha256, conditions_dir, conditions or ConditionFiles()) or {}
        if base and kind in base:
            grid[kind] = base[kind]
        elif kind == "jpeg_q" or mine[0].get("why") == OPERATOR:  # jpeg_q steps and the operator's cap
            grid[kind] = mine[0].get("from")                      # record the value they started from
        else:  # the automatic cap records the still count it cut, not the cap it started from
            grid[kind] = "auto"
    return grid


def grid_label(grid: dict[str, Any] | None) -> str:
    if not grid:
        return "-"
    def show(v: Any) -> str:  # 1 and 1.0 are the same grid
        return f"{v:g}" if finite_number(v) is not None else str(v if v is not None else "?")[:40]
    return "fps{}-n{}-ls{}-q{}".format(*(show(grid.get(k)) for k in GRID_KEYS))


def expected_frames(run: R.ProtocolARecord, grid: dict[str, Any] | None) -> int | None:
    dur = finite_number(run.duration_s, 0.0, MAX_DURATION_S)
    fps = finite_number((grid or {}).get("fps"), 0.0, MAX_FPS)
    mf = _count((grid or {}).get("max_frames"))
    if dur is None or fps is None or mf is None:
        return None
    return min(math.ceil(dur * fps), mf)


def toolkit_label(tk: Any) -> str | None:
    """'<toolkit version> <commit[:12]>[ dirty]' from a run record's `toolkit` block
    (video_arena/toolkit_info.py), None when the runner did not record one."""
    if not isinstance(tk, dict):
        return None
    commit = tk.get("git_commit")
    dirty = {True: " dirty", None: " dirty?", False: ""}.get(tk.get("git_dirty"), " dirty?")
    return (f"{tk.get('toolkit_version') or '?'} {str(commit)[:12] if commit else 'no-git'}"
            f"{dirty if commit else ''} judge {tk.get('judge_version') or '?'}")


_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})\Z")


def served_differs(requested: Any, served: Any) -> bool:
    """True when the server says another model than the requested one produced the reply.  The same
    name (case aside), with a provider prefix (`openai/gpt-4o` for `gpt-4o`) or a dated snapshot suffix
    (`gpt-4o-2024-08-06`) is the same model; a reply naming no model is not flagged (nothing to compare)."""
    if not isinstance(served, str) or not served or not isinstance(requested, str) or not requested:
        return False
    r, s = requested.strip().lower().rsplit("/", 1)[-1], served.strip().lower().rsplit("/", 1)[-1]
    return _DATE_SUFFIX.sub("", s) != _DATE_SUFFIX.sub("", r)


def read_run_caveats(cell, rec: R.RunRecord, conditions_dir: Path | None = None,
                     conditions: ConditionFiles | None = None) -> None:
    """Fill a scorer Cell's caveat fields from its run record (native run.json or a Harbor Protocol A
    trial's agent/run.json): Protocol A's keys and Protocol B's turn count and audit, whichever it holds.
    `conditions`: the run's condition files (each read once per run)."""
    run, b, doc = rec.protocol_a, rec.protocol_b, rec.as_read()
    cell.toolkit = toolkit_label(run.toolkit)
    cell.condition = condition_of(doc)
    cell.reasoning_effort, cell.effort_recorded = reasoning_effort_of(rec)
    sha = run.condition_sha256
    cell.condition_sha256 = sha if isinstance(sha, str) else None
    tr = run.transport
    cell.transport = tr if isinstance(tr, str) else (str(tr.get("kind")) if isinstance(tr, dict) else None)
    grid = declared_grid(run, conditions_dir, conditions)
    cell.grid = grid_label(grid) if grid else None
    degs = [d for d in run.degradations if isinstance(d, dict)] if isinstance(run.degradations, list) else []
    why = [str(d.get("kind") or "?") for d in degs]
    sampling = run.sampling if isinstance(run.sampling, dict) else {}
    q_eff, q_decl = _count(sampling.get("jpeg_q")), _count((grid or {}).get("jpeg_q"))
    if q_eff is not None and q_decl is not None and q_eff > q_decl and "jpeg_q" not in why:
        why.append("jpeg_q")
    cell.frames_used = _count(run.frames_used)
    exp = expected_frames(run, grid)
    if cell.frames_used is not None and exp is not None and cell.frames_used < exp and "max_frames" not in why:
        why.append("frames")
    if run.degraded is True and not why:
        why.append("degraded")
    cell.degradations = ",".join(dict.fromkeys(why))
    cell.degraded = bool(why)
    cell.truncated = run.protocol_complete is False
    fr = run.finish_reason
    cell.finish_reason = fr if isinstance(fr, str) else None
    cell.n_json_blocks = _count(run.n_json_blocks)
    cell.recall_ceiling = finite_number(run.t1_recall_ceiling, 0.0, 1.0)
    cell.turns_used = _count(b.turns_used)
    served = run.served_model
    cell.served_model = served if isinstance(served, str) else None
    params = run.request_params if isinstance(run.request_params, dict) else {}
    cell.served_other_model = served_differs(params.get("model") or doc.get("model"), cell.served_model)
    if cell.protocol == "A":
        cell.non_reference = not is_versioned(cell.condition_sha256)
    audit = b.audit
    if cell.protocol == "B" or isinstance(audit, dict):
        cell.audit_verdict = str(audit.get("verdict")) if isinstance(audit, dict) and audit.get("verdict") \
            else "none"


def read_run_conduct(cell, run: R.ProtocolBRecord, runner_record: bool = True) -> None:
    """How a run was conducted, from its record (docs/SCORING.md, "Caveats"): the turn cap it declared
    (`max_turns`; 0 = the harness cannot count turns) and whether the recorded `turns_used` exceeds it;
    Protocol B's isolation mode, its extra `--allow-path`s and the preflight's warnings.  `runner_record`
    False: a record made up from what a Harbor trial's config says (no isolation to name)."""
    cell.agent_not_started = run.agent_started is False
    cap = _count(run.max_turns)
    cell.max_turns = cap
    cell.over_turns = bool(cap and cap > 0 and cell.turns_used is not None and cell.turns_used > cap)
    iso = run.isolation
    if isinstance(iso, dict):
        cell.isolation = str(iso["mode"])[:40] if iso.get("mode") is not None else None
        allowed = iso.get("allowed")
        cell.n_allow_paths = len(allowed) if isinstance(allowed, list) else 0
    # a Protocol B runner's record always names the mode it ran under: null, absent or another value
    # is neither isolated nor known not to be (a column of its own, never read as either)
    cell.isolation_unrecorded = runner_record and cell.protocol == "B" and cell.isolation not in ISOLATION_MODES
    pf = run.preflight
    if isinstance(pf, dict):
        warnings = pf.get("warnings")
        cell.preflight_warnings = len(warnings) if isinstance(warnings, list) else 0
        cell.preflight = "skipped" if pf.get("skipped") else ("warnings" if cell.preflight_warnings else "ok")


# --------------------------------------------------------------------------------------------------
# Harbor transcripts: the Protocol B egress audit over an agent's trajectory
# --------------------------------------------------------------------------------------------------
def audit_harbor_agent(agent_dir: Path) -> dict[str, Any]:
    """{verdict, audit record, turns_used, reasoning efforts, source} for a Harbor trial's agent/ folder:
    the ATIF trajectory.json when there is one, else claude-code's stream-json log; neither: unaudited."""
    traj_path = agent_dir / "trajectory.json"
    cc_path = agent_dir / "claude-code.txt"
    if traj_path.is_file():
        doc, err = read_json_object(traj_path, MAX_TRANSCRIPT_BYTES)
        if doc is None:
            return {"verdict": "unaudited", "audit": None, "turns_used": None, "efforts": set(),
                    "source": f"trajectory.json {err}"}
        lines, turns, efforts = atif_lines(doc)
        audit = audit_texts([("trajectory", "\n".join(lines))])
        return {"verdict": audit["verdict"], "audit": audit, "turns_used": turns, "efforts": efforts,
                "source": "trajectory.json"}
    if cc_path.is_file():
        try:
            data, size = read_bounded(cc_path, MAX_TRANSCRIPT_BYTES)
        except OSError as exc:
            data, size = None, 0
            why = f"claude-code.txt unreadable ({exc.strerror or exc})"
        if data is not None and size <= MAX_TRANSCRIPT_BYTES:
            text = data.decode("utf-8", "replace")
            audit = audit_texts([("claude-code", text)])
            return {"verdict": audit["verdict"], "audit": audit, "turns_used": turns_reported(text),
                    "efforts": set(), "source": "claude-code.txt"}
        if data is not None:
            why = f"claude-code.txt larger than {MAX_TRANSCRIPT_BYTES} bytes"
        return {"verdict": "unaudited", "audit": None, "turns_used": None, "efforts": set(), "source": why}
    return {"verdict": "unaudited", "audit": None, "turns_used": None, "efforts": set(),
            "source": "no agent/trajectory.json or agent/claude-code.txt"}


# --------------------------------------------------------------------------------------------------
# mixing
# --------------------------------------------------------------------------------------------------
def dimension_value(cell, dim: str) -> Any:
    return getattr(cell, dim if dim != "tolerance_s" else "run_tolerance_s", None)


def _show(dim: str, v: Any) -> str:
    if v is None:
        return "(not recorded)"
    if dim == "condition_sha256":
        return str(v)[:12]
    return f"{v:g} s" if dim == "tolerance_s" and isinstance(v, float) else str(v)


def tally(cells: Iterable, dim: str) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for c in cells:
        v = dimension_value(c, dim)
        out[v] = out.get(v, 0) + 1
    return out


def _compared(cells: Iterable, dim: str) -> list:
    """The cells whose value of `dim` is compared: an overflowed request sent no stills, so a cell that
    records no grid for it states nothing about the grid."""
    if dim != "grid":
        return list(cells)
    return [c for c in cells if not (c.grid is None and getattr(c, "context_overflow", False))]


def mixing(cells: list, dims: Iterable[str] = MIX_DIMENSIONS) -> list[str]:
    """One line per dimension on which the cells differ, naming the values and their cell counts.
    Protocol A's condition dimensions are compared among Protocol A cells only."""
    out = []
    for dim in dims:
        pool = _compared(cells, dim)
        if dim in ("condition_sha256", "grid", "transport"):
            pool = [c for c in pool if c.protocol == "A"]
        elif dim == R.REASONING_EFFORT:  # a record silent about it is unknown, not another effort
            pool = [c for c in cells if c.effort_recorded]
        t = tally(pool, dim)
        if dim == "tolerance_s":  # a record that names none was made for the benchmark's
            t = {k: n for k, n in t.items() if k is not None}
        if len(t) > 1:
            out.append(f"{dim}: " + " vs ".join(f"{_show(dim, v)} ({n} cell{'s' if n != 1 else ''})"
                                                 for v, n in sorted(t.items(), key=lambda kv: -kv[1])))
    if tuple(dims) == MIX_DIMENSIONS:
        out += mixing_lines(cells)
    return out


def compare_mixing(a_cells: list, b_cells: list) -> list[str]:
    """What differs between two systems' scored cells on the shared games (condition, grid, transport,
    tolerance), when both ran the same protocol; across protocols only the tolerance is compared."""
    pa = {c.protocol for c in a_cells} - {None}
    pb = {c.protocol for c in b_cells} - {None}
    dims = COMPARE_DIMENSIONS if (pa == pb == {"A"}) else ("tolerance_s",)
    out = []
    for dim in dims:
        ta, tb = tally(_compared(a_cells, dim), dim), tally(_compared(b_cells, dim), dim)
        if dim == "tolerance_s":
            ta = {k: v for k, v in ta.items() if k not in (None, 3.0)} or {3.0: 0}
            tb = {k: v for k, v in tb.items() if k not in (None, 3.0)} or {3.0: 0}
        if set(ta) != set(tb):
            out.append(f"{dim}: A has {', '.join(_show(dim, v) for v in ta)}; "
                       f"B has {', '.join(_show(dim, v) for v in tb)}")
    out += compare_lines(a_cells, b_cells)
    return out
