"""The recorded condition of a cell: every parameter that changes the measurement, read from its run
record (native run.json, a Harbor Protocol A trial's agent/run.json) or, for a Harbor agent without
one, from the trial's config (agent kwargs, timeout multipliers).  Cells whose conditions differ are
not one measurement: `mixing_lines` names every difference (the scorer refuses the table unless
--allow-mixed), and the runners refuse to resume into an --out written under another condition
(`resume_differences`).

Protocol A: model, grid (the condition file's, with every degradation undone), transport, max_tokens,
temperature, reasoning effort, enable_thinking, extra_body digest, on_overflow (stop or degrade: a
context overflow is scored 0.0, so what the runner may do before it gives up is part of the condition).  Protocol B: max_turns, timeout,
agent command digest (the command as recorded, secrets already redacted by the runner), isolation
mode; a Harbor agent: its kwargs digest (max_turns among them) and the timeout multipliers.  Both:
tolerance, instruction digest and game version (`game_version`: the game definition's, both compared per
game), judge version.  Degradations of a cell (fewer
stills, a higher jpeg_q, whether the runner or the operator chose them) are not a condition: they
are counted and shown as caveats (video_arena/scoring/caveats.py).

A field a record does not hold (an older runner) is not compared; a field recorded as null is a value
(a Protocol B record whose `isolation` is null, or names no mode, has isolation null: another value than
bwrap or none).  A number no float holds (an integer of 401 digits) is compared as the value it is, never
converted.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from video_arena.core import results as R
from video_arena.core.tasks import GAME_VERSION_KEY
from video_arena.digests import sha256_text
from video_arena.safe_io import finite_number

ABSENT = object()

#: (field, protocol it applies to: "A", "B" or None for both), in the order differences are reported
FIELDS: tuple[tuple[str, str | None], ...] = (
    ("max_tokens", "A"), ("temperature", "A"), ("enable_thinking", "A"), ("extra_body_sha256", "A"),
    ("on_overflow", "A"),
    ("max_turns", "B"), ("timeout_min", "B"), ("agent_cmd_sha256", "B"), ("isolation", "B"),
    ("agent_kwargs_sha256", None), ("timeout_multipliers", None),
    ("judge_version", None),
)
#: the kwargs of a Harbor agent that are not compared: its own bookkeeping, and the ProtocolA agent's
#: degradations (jpeg_q, max_frames: recorded per cell in agent/run.json and shown as caveats)
_KWARGS_IGNORED = ("api_key", "base_url", "jpeg_q", "max_frames")
_MULTIPLIERS = ("timeout_multiplier", "agent_timeout_multiplier", "agent_setup_timeout_multiplier")


def digest(obj: Any) -> str:
    """A short digest of a JSON value (sorted keys): what is compared for dicts and commands."""
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return sha256_text(data)[:12]


def _value(v: Any) -> Any:
    """A recorded value as compared: a scalar as is, a list or an object as its JSON text (a record is
    data: an odd type is a value that differs, never an unhashable TypeError in the tally)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and finite_number(v) is None:
        return ABSENT  # a number no float holds (an integer of 401 digits), or not finite: not recorded
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return ABSENT
        d = d[k]
    return d


def condition_of(run: dict[str, Any]) -> dict[str, Any]:
    """The condition fields a run record states (absent ones, and numbers no float holds, left out)."""
    out = _condition_of(run)
    return {k: v for k, v in out.items() if v is not ABSENT}


def _condition_of(run: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    proto = run.get("protocol")
    rp = run.get("request_params") if isinstance(run.get("request_params"), dict) else None
    if proto == "A" and rp is not None:
        for f in ("max_tokens", "temperature", "enable_thinking"):
            v = rp.get(f, run.get(f, ABSENT))
            if v is not ABSENT:
                t = finite_number(v) if f == "temperature" else None
                out[f] = t if t is not None else _value(v)
        eb = rp.get("extra_body")
        out["extra_body_sha256"] = digest(eb) if eb else "none"
    if proto == "A" and "on_overflow" in run:  # stop or degrade: what a context overflow leads to
        out["on_overflow"] = _value(run["on_overflow"])
    if proto == "B":
        for f in ("max_turns", "timeout_min"):
            if f in run:
                out[f] = _value(run[f])
        if "agent_cmd" in run:
            out["agent_cmd_sha256"] = digest(run["agent_cmd"])
        iso = run.get("isolation", ABSENT)
        if isinstance(iso, dict):
            out["isolation"] = _value(iso.get("mode"))
        elif iso is not ABSENT:
            out["isolation"] = _value(iso)
    jv = _get(run, "toolkit", "judge_version")
    if jv is not ABSENT and jv is not None:
        out["judge_version"] = _value(jv)
    gv = run.get(GAME_VERSION_KEY)
    if gv is not None:  # compared per game (a chess version is no other value than a go version)
        out[GAME_VERSION_KEY] = _value(gv)
    return out


def harbor_condition(trial_config: dict[str, Any] | None) -> dict[str, Any]:
    """The condition fields a Harbor trial's config states: the agent's kwargs (a digest, and
    max_turns and timeout on their own) and the timeout multipliers."""
    cfg = trial_config if isinstance(trial_config, dict) else {}
    out: dict[str, Any] = {}
    agent = cfg.get("agent") if isinstance(cfg.get("agent"), dict) else {}
    kwargs = agent.get("kwargs") if isinstance(agent.get("kwargs"), dict) else None
    if kwargs is not None:
        kept = {k: v for k, v in kwargs.items() if k not in _KWARGS_IGNORED}
        out["agent_kwargs_sha256"] = digest(kept)
        if "max_turns" in kwargs:
            out["max_turns"] = _value(kwargs["max_turns"])
    for k in ("override_timeout_sec", "max_timeout_sec"):
        seconds = finite_number(agent.get(k), 0.0)
        if seconds is not None:
            out["timeout_min"] = seconds / 60
        elif agent.get(k) is not None:
            out["timeout_min"] = _value(agent[k])
    mult = {k: cfg.get(k) for k in _MULTIPLIERS if k in cfg}
    if mult:
        out["timeout_multipliers"] = ",".join(f"{k.replace('_multiplier', '')}={str(mult[k])[:40]}"
                                              for k in sorted(mult))
    return {k: v for k, v in out.items() if v is not ABSENT}


def _show(field: str, v: Any) -> str:
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def mixing_lines(cells: Iterable[Any]) -> list[str]:
    """One line per condition field on which the cells differ (values and cell counts), then one per
    game whose cells of one protocol were given different instructions (instruction_sha256), then one per
    game whose cells ran under different versions of its definition (game_version)."""
    cells = list(cells)
    out = []
    for field, proto in FIELDS:
        tally: dict[Any, int] = {}
        for c in cells:
            cond = getattr(c, "condition", None) or {}
            if field not in cond or (proto and c.protocol != proto):
                continue
            v = cond[field]
            tally[v] = tally.get(v, 0) + 1
        if len(tally) > 1:
            out.append(f"{field}: " + " vs ".join(f"{_show(field, v)} ({n} cell{'s' if n != 1 else ''})"
                                                   for v, n in sorted(tally.items(), key=lambda kv: (-kv[1], str(kv[0])))))
    per_game: dict[tuple[str, str | None], dict[str, int]] = {}
    for c in cells:
        sha = getattr(c, "instruction_sha256", None)
        if sha:
            t = per_game.setdefault((c.game, c.protocol), {})
            t[sha] = t.get(sha, 0) + 1
    for (game, proto), t in sorted(per_game.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        if len(t) > 1:
            out.append(f"instruction_sha256 ({game}, Protocol {proto}): " + " vs ".join(
                f"{sha[:12]} ({n} cell{'s' if n != 1 else ''})" for sha, n in sorted(t.items(), key=lambda kv: -kv[1])))
    for game, t in sorted(game_versions(cells).items()):
        if len(t) > 1:
            out.append(f"{GAME_VERSION_KEY} ({game}): " + " vs ".join(
                f"{_show(GAME_VERSION_KEY, v)} ({n} cell{'s' if n != 1 else ''})"
                for v, n in sorted(t.items(), key=lambda kv: (-kv[1], str(kv[0])))))
    return out


def game_versions(cells: Iterable[Any]) -> dict[str, dict[Any, int]]:
    """{game: {recorded game_version: cell count}} over the cells whose record states one."""
    out: dict[str, dict[Any, int]] = {}
    for c in cells:
        cond = getattr(c, "condition", None) or {}
        if GAME_VERSION_KEY in cond:
            t = out.setdefault(str(c.game), {})
            t[cond[GAME_VERSION_KEY]] = t.get(cond[GAME_VERSION_KEY], 0) + 1
    return out


#: the fields `score --compare` refuses to differ between two systems (the model, its reasoning effort,
#: its thinking switch, its extra body and the agent command are what a comparison compares)
COMPARE_FIELDS = ("max_tokens", "temperature", "on_overflow", "max_turns", "timeout_min", "isolation",
                  "timeout_multipliers", "judge_version")


def compare_lines(a_cells: Iterable[Any], b_cells: Iterable[Any]) -> list[str]:
    """One line per COMPARE_FIELDS field whose values differ between two systems' cells."""
    out = []
    a_cells, b_cells = list(a_cells), list(b_cells)
    for f in COMPARE_FIELDS:
        va = {(getattr(c, "condition", None) or {}).get(f, ABSENT) for c in a_cells} - {ABSENT}
        vb = {(getattr(c, "condition", None) or {}).get(f, ABSENT) for c in b_cells} - {ABSENT}
        if va and vb and va != vb:
            out.append(f"{f}: A has {', '.join(sorted(map(lambda v: _show(f, v), va)))}; "
                       f"B has {', '.join(sorted(map(lambda v: _show(f, v), vb)))}")
    ga, gb = game_versions(a_cells), game_versions(b_cells)
    for game in sorted(set(ga) & set(gb)):
        if set(ga[game]) != set(gb[game]):
            out.append(f"{GAME_VERSION_KEY} ({game}): A has {', '.join(sorted(map(str, ga[game])))}; "
                       f"B has {', '.join(sorted(map(str, gb[game])))}")
    return out


def resume_differences(old: dict[str, Any], new: dict[str, Any], keys: Iterable[str]) -> list[str]:
    """What differs between a finished cell's run record and the run about to resume into its --out:
    the given top-level keys, then the condition fields (condition_of) both records state."""
    diffs = []
    for k in keys:
        if old.get(k, ABSENT) is not ABSENT and new.get(k, ABSENT) is not ABSENT and old.get(k) != new.get(k):
            diffs.append(f"{k} {_short(old.get(k))} (recorded) vs {_short(new.get(k))} (this run)")
    co, cn = condition_of(old), condition_of(new)
    for field, _ in FIELDS:   # judge_version too: `score` refuses a table of two judge versions
        if field in co and field in cn and co[field] != cn[field]:
            diffs.append(f"{field} {_short(co[field])} (recorded) vs {_short(cn[field])} (this run)")
    return diffs


def _short(v: Any) -> str:
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    return (s[:12] if len(s) == 64 and all(ch in "0123456789abcdef" for ch in s) else s)[:80]


def finished_cell_conflict(out_dir, cells: Iterable[tuple[str, str]], this_run: dict[str, Any],
                           keys: Iterable[str]) -> str | None:
    """The first finished cell of `out_dir` (results.cell_status) whose recorded condition differs from
    `this_run`, as one line naming the cell and the differences; None when there is none."""
    keys = tuple(keys)
    for game, case_id in cells:
        d = R.cell_dir(out_dir, game, case_id)
        st = R.cell_status(d)
        if not st.finished or st.record is None:
            continue
        diffs = resume_differences(st.record.as_read(), this_run, keys)
        if diffs:
            return (f"{d} holds a finished cell of another condition: {'; '.join(diffs)}; resuming would mix two "
                    f"measurements in one --out (use another --out, or --force to re-run every cell)")
    return None
