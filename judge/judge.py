#!/usr/bin/env python3
"""Video-Arena judge: scores one answer against one ground truth.

Standard library only, Python 3.11+.  This one file is copied unchanged into every Harbor task's
tests/ and is what the offline scorer imports, so every number the project prints comes from here.

    python3 judge.py GT_JSON ANSWER_JSON                 print the full record as JSON
    python3 judge.py GT_JSON ANSWER_JSON --reward-json OUT
        also write Harbor's reward.json at OUT (reward, t1_f1, t2_macro_acc, t3_macro_acc; all
        finite, a tier that cannot be computed is 0.0 there) and the full record at OUT's folder
        /judge.json

Rules (docs/SCORING.md has a worked example):
  * An answer is {"events": [row, ...]}; a row has t (number >= 0, finite), type, actor, where,
    delta, state (strings, compared trimmed and lower-cased; type/actor/delta/state must be from the
    game's vocabulary, which the ground truth carries in "spec").  Extra keys are ignored.
  * Any bad answer (unreadable, not JSON, wrong shape, a bad row, too large, too deep) scores 0.0
    and the reason goes into format_error.  The judge never raises on an answer.
  * T1: one-to-one matching of predicted to ground-truth rows with |dt| <= tolerance (3 s) and equal
    (type, actor, where): the maximum number of matches, ties broken by the smallest total |dt|.
    t1_f1 = 2 * matches / (predicted rows + ground-truth rows).
  * T2 / T3: over the T1 matches, per delta (state) class present among the matched ground-truth
    rows, the share predicted right; the mean over those classes.  None when there is no match.
  * reward (the headline): F1 of the same matching with the key widened to
    (type, actor, where, delta, state).
  * A ground truth with no events and an answer with no rows: every F1 is 1.0 (nothing to find,
    nothing claimed).
"""
from __future__ import annotations

import argparse
import json
import math
import operator
import os
import stat
import sys

JUDGE_VERSION = "1.0.0"
TOLERANCE_S = 3.0
ROOT_KEY = "events"
ROW_FIELDS = ("t", "type", "actor", "where", "delta", "state")
TEXT_FIELDS = ("type", "actor", "where", "delta", "state")
T1_KEY = ("type", "actor", "where")
STRICT_KEY = ("type", "actor", "where", "delta", "state")
DELTA_LABELS = ("up", "down", "flat")
GT_FORMAT = "video-arena-gt/1"

#: Harbor's reward.json keys, in this order: the headline (strict F1) and the three tiers.  Every
#: other part of the toolkit reads the metric names from here.
REWARD_KEYS = ("reward", "t1_f1", "t2_macro_acc", "t3_macro_acc")
#: The largest answer file the judge reads (a larger one scores 0.0); the scorer and Protocol B's
#: answer collection read this cap from here.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
MAX_ROWS = 10_000
MAX_TEXT_CHARS = 200
_EPS = 1e-9  # float slack on the tolerance: 13.3 - 10.3 is 3.0000000000000018


class GroundTruthError(ValueError):
    """The ground truth is malformed.  That is the benchmark's bug, never the answer's."""


# --------------------------------------------------------------------------------------------
# loading and validation
# --------------------------------------------------------------------------------------------

def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def _loads(data):
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8-sig")
    return json.loads(data, parse_constant=_reject_constant)


def _short(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _norm(value):
    return value.strip().lower()


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite_float(value):
    """float(value) for a JSON number, or None when it is not one or not finite (an int like 10**400
    is a valid JSON number that no float can hold)."""
    if not _is_number(value):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def check_tolerance(tolerance):
    """The matching tolerance as a float; ValueError unless it is a finite number >= 0."""
    t = _finite_float(tolerance)
    if t is None or t < 0:
        raise ValueError(f"tolerance must be a finite number of seconds >= 0, got {_short(tolerance)}")
    return t


def _check_row(i, row, allowed, what):
    """One row, every check in order: (normalised tuple, None) or (None, the first problem)."""
    if not isinstance(row, dict):
        return None, f"{what} {i} is {type(row).__name__}, not an object"
    missing = [f for f in ROW_FIELDS if f not in row]
    if missing:
        return None, f"{what} {i} is missing field(s) {', '.join(missing)}"
    t = row["t"]
    if not _is_number(t):
        return None, f"{what} {i}: 't' must be a number, got {type(t).__name__}"
    t = _finite_float(t)
    if t is None or t < 0:
        return None, f"{what} {i}: 't' must be a finite number >= 0, got {_short(row['t'])}"
    norm = [t]
    for f in TEXT_FIELDS:
        v = row[f]
        if not isinstance(v, str):
            return None, f"{what} {i}: {f!r} must be a string, got {type(v).__name__}"
        if len(v) > MAX_TEXT_CHARS:
            return None, f"{what} {i}: {f!r} is longer than {MAX_TEXT_CHARS} characters"
        v = _norm(v)
        if f in allowed and v not in allowed[f]:
            return None, (f"{what} {i}: {f} {v!r} is not one of "
                          f"{', '.join(sorted(allowed[f]))}")
        norm.append(v)
    return tuple(norm), None


_INF = math.inf
_EXACT_INT = 2 ** 53  # ints up to here convert to float exactly and cannot overflow


def _check_rows(rows, spec, what="row"):
    """check_rows on tuples (t, type, actor, where, delta, state): what the judge works on.

    The fast path looks each text value up in a table of values already found good for its field
    (a value is checked once per call); a row it cannot take whole goes through _check_row, which
    decides and words the problem, so both paths accept and reject exactly the same rows.
    """
    if not isinstance(rows, list):
        return None, f"{ROOT_KEY!r} is {type(rows).__name__}, not a list"
    if len(rows) > MAX_ROWS:
        return None, f"{len(rows)} rows, more than the {MAX_ROWS} the judge accepts"
    allowed = {"type": frozenset(spec["event_types"]), "actor": frozenset(spec["sides"]),
               "delta": frozenset(DELTA_LABELS), "state": frozenset(spec["state_labels"])}
    # per field: raw value -> normalised value, for values that passed that field's checks
    good = {f: _GoodValues(allowed.get(f)) for f in TEXT_FIELDS}
    c_type, c_actor, c_where, c_delta, c_state = (good[f] for f in TEXT_FIELDS)
    out = []
    append = out.append
    for i, row in enumerate(rows):
        if type(row) is dict:
            try:
                t = row["t"]
                norm = (c_type[row["type"]], c_actor[row["actor"]], c_where[row["where"]],
                        c_delta[row["delta"]], c_state[row["state"]])
            except (KeyError, TypeError):  # a field missing, bad or unhashable: the full check
                pass
            else:
                tt = type(t)
                if (tt is float and 0.0 <= t < _INF) or (tt is int and 0 <= t <= _EXACT_INT):
                    append((float(t),) + norm)
                    continue
        norm, err = _check_row(i, row, allowed, what)
        if err is not None:
            return None, err
        append(norm)
    return out, None


class _GoodValues(dict):
    """raw text -> its normalised form, learnt on first sight; KeyError for a value that fails the
    field's checks (not a str, too long, outside the vocabulary) or is unhashable (TypeError)."""

    __slots__ = ("vocab",)

    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab

    def __missing__(self, raw):
        if not isinstance(raw, str) or len(raw) > MAX_TEXT_CHARS:
            raise KeyError(raw)
        v = _norm(raw)
        if self.vocab is not None and v not in self.vocab:
            raise KeyError(raw)
        self[raw] = v
        return v


def check_rows(rows, spec, what="row"):
    """Validate and normalise rows.  Returns (normalised rows, None) or (None, reason)."""
    out, err = _check_rows(rows, spec, what)
    if err is not None:
        return None, err
    return [dict(zip(ROW_FIELDS, r)) for r in out], None


def _gt_rows(gt):
    """Check a loaded ground truth (GroundTruthError naming the first problem); its rows as tuples."""
    if not isinstance(gt, dict):
        raise GroundTruthError("ground truth is not a JSON object")
    if gt.get("format") != GT_FORMAT:
        raise GroundTruthError(f"ground truth format is {gt.get('format')!r}, expected {GT_FORMAT!r}")
    spec = gt.get("spec")
    if not isinstance(spec, dict):
        raise GroundTruthError("ground truth has no 'spec' object")
    for key in ("sides", "event_types", "state_labels"):
        vals = spec.get(key)
        if not isinstance(vals, list) or not vals or not all(isinstance(v, str) and v == _norm(v) and v
                                                             for v in vals):
            raise GroundTruthError(f"spec.{key} must be a non-empty list of trimmed lower-case strings")
    if len(spec["state_labels"]) != 3 or len(set(spec["state_labels"])) != 3:
        raise GroundTruthError("spec.state_labels must be three distinct labels")
    rows, err = _check_rows(gt.get(ROOT_KEY), spec, what="ground-truth row")
    if err:
        raise GroundTruthError(err)
    for i, row in enumerate(gt[ROOT_KEY]):
        vb, va = row.get("v_before"), row.get("v_after")
        if type(vb) is float and type(va) is float and -_INF < vb < _INF and -_INF < va < _INF:
            continue
        for f in ("v_before", "v_after"):
            if _finite_float(row.get(f)) is None:
                raise GroundTruthError(f"ground-truth row {i}: {f!r} must be a finite number")
    return rows


def validate_gt(gt):
    """Check a loaded ground truth; raise GroundTruthError naming the first problem."""
    _gt_rows(gt)
    return gt


def load_gt(path):
    """Read and validate a ground-truth file."""
    try:
        with open(path, "rb") as fh:
            gt = _loads(fh.read())
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise GroundTruthError(f"cannot read ground truth {path}: {exc}") from exc
    return validate_gt(gt)


def _parse_answer(answer, spec):
    """parse_answer on tuples."""
    if answer is None:
        return None, "no answer"
    if isinstance(answer, (bytes, bytearray, str)):
        size = len(answer)
        if size > MAX_ANSWER_BYTES:
            return None, _too_large(size)
        if not (answer.strip() if isinstance(answer, str) else bytes(answer).strip()):
            return None, "answer is empty"
        try:
            answer = _loads(answer)
        except RecursionError:
            return None, "answer is nested too deeply to be an answer"
        except UnicodeDecodeError as exc:
            return None, f"answer is not UTF-8: {exc.reason}"
        except ValueError as exc:
            return None, f"answer is not valid JSON: {exc}"
    if not isinstance(answer, dict):
        return None, f"answer is a JSON {type(answer).__name__}, not an object with key {ROOT_KEY!r}"
    if ROOT_KEY not in answer:
        keys = ", ".join(repr(k) for k in list(answer)[:5]) or "none"
        return None, f"answer has no {ROOT_KEY!r} key (keys: {keys})"
    return _check_rows(answer[ROOT_KEY], spec)


def parse_answer(answer, spec):
    """Answer (bytes, str, already-parsed dict, or None) -> (normalised rows, None) or (None, reason)."""
    rows, err = _parse_answer(answer, spec)
    if err is not None:
        return None, err
    return [dict(zip(ROW_FIELDS, r)) for r in rows], None


# --------------------------------------------------------------------------------------------
# matching
# --------------------------------------------------------------------------------------------
#
# Rows are tuples (t, type, actor, where, delta, state).  Within one key the rows lie on a line and
# the cost is |dt|, so some optimal matching never crosses (uncrossing two crossing pairs keeps both
# within tolerance and never raises the total).  An order-preserving alignment (dynamic programming
# over the two time-sorted lists) is therefore exact.  The lists are cut where consecutive times are
# more than the tolerance apart (no match can cross such a gap), and a piece holding one predicted
# and one ground-truth row (the common case: rows of one key are usually far apart) is a match
# without any table.  Every order is canonical (time, then every field, then the input index), so
# the input order never matters.

_T1 = slice(1, 4)       # (type, actor, where)
_LABELS = slice(4, 6)   # (delta, state): with _T1, the strict key


def _order(rows):
    """Indices of tuple rows in canonical order."""
    return sorted(range(len(rows)), key=rows.__getitem__)


def _pieces(pis, gis, pred, gt, lim):
    """Cut two time-sorted index lists of one key into pieces no match can cross: [(p, g), ...], only
    the pieces that hold rows of both sides."""
    pts = [pred[i][0] for i in pis]
    gts = [gt[j][0] for j in gis]
    n_p, n_g = len(pis), len(gis)
    a = b = 0
    out = []
    chunk_p, chunk_g = [], []
    last = pts[0] if pts[0] <= gts[0] else gts[0]
    while a < n_p or b < n_g:
        # merged by (time, predicted first, canonical rank): the order the tables are built in
        if b == n_g or (a < n_p and pts[a] <= gts[b]):
            t = pts[a]
            if t - last > lim:
                if chunk_p and chunk_g:
                    out.append((chunk_p, chunk_g))
                chunk_p, chunk_g = [], []
            chunk_p.append(pis[a])
            a += 1
        else:
            t = gts[b]
            if t - last > lim:
                if chunk_p and chunk_g:
                    out.append((chunk_p, chunk_g))
                chunk_p, chunk_g = [], []
            chunk_g.append(gis[b])
            b += 1
        last = t
    if chunk_p and chunk_g:
        out.append((chunk_p, chunk_g))
    return out


def _match_group(pis, gis, pred, gt, lim, out):
    """Append to `out` the optimal matching of one key's rows (both lists in canonical order)."""
    if len(pis) == 1 and len(gis) == 1:
        if abs(pred[pis[0]][0] - gt[gis[0]][0]) <= lim:
            out.append((pis[0], gis[0]))
        return
    for p_chunk, g_chunk in _pieces(pis, gis, pred, gt, lim):
        if len(p_chunk) == 1 and len(g_chunk) == 1:
            out.append((p_chunk[0], g_chunk[0]))  # neighbours in the cut: within the tolerance
        else:
            out.extend(_align(p_chunk, g_chunk, pred, gt, lim))


def _match_both(pred, gt, tolerance):
    """(T1 pairs, strict pairs) of tuple rows, each sorted by ground-truth index.

    One sort of both sides by (T1 key, time, predicted first, canonical rank) lays every key's rows
    out in the order the tables are built in; one pass cuts it into pieces.
    """
    lim = tolerance + _EPS
    rows = [(r[1], r[2], r[3], r[0], 0, r[4], r[5], i) for i, r in enumerate(pred)]
    rows += [(r[1], r[2], r[3], r[0], 1, r[4], r[5], j) for j, r in enumerate(gt)]
    rows.sort()
    t1, strict = [], []
    cp, cg = [], []
    key = last = None
    for ty, ac, wh, t, side, _de, _st, idx in rows:
        if key is None or t - last > lim or wh != key[2] or ac != key[1] or ty != key[0]:
            if cp and cg:
                if len(cp) == 1 and len(cg) == 1:  # neighbours in the cut: within the tolerance
                    i, j = cp[0], cg[0]
                    t1.append((i, j))
                    if pred[i][_LABELS] == gt[j][_LABELS]:
                        strict.append((i, j))
                else:
                    _piece(cp, cg, pred, gt, lim, t1, strict)
            cp, cg = [], []
            key = (ty, ac, wh)
        if side:
            cg.append(idx)
        else:
            cp.append(idx)
        last = t
    if cp and cg:
        _piece(cp, cg, pred, gt, lim, t1, strict)
    t1.sort(key=_second)
    strict.sort(key=_second)
    return t1, strict


def _piece(cp, cg, pred, gt, lim, t1, strict):
    """Match one piece of one T1 key on both keys."""
    if len(cp) == 1 and len(cg) == 1:  # neighbours in the cut: within the tolerance
        i, j = cp[0], cg[0]
        t1.append((i, j))
        if pred[i][_LABELS] == gt[j][_LABELS]:
            strict.append((i, j))
        return
    t1.extend(_align(cp, cg, pred, gt, lim))
    # The strict key refines the T1 key, so its pieces lie inside this one: match the piece's rows
    # of each (delta, state) on their own.
    sub = {}
    for i in cp:
        sub.setdefault(pred[i][_LABELS], ([], []))[0].append(i)
    for j in cg:
        s = sub.get(gt[j][_LABELS])
        if s is not None:
            s[1].append(j)
    for spis, sgis in sub.values():
        if sgis:
            _match_group(spis, sgis, pred, gt, lim, strict)


_second = operator.itemgetter(1)


def match_rows(pred, gt, key_fields, tolerance):
    """Maximum one-to-one matching with equal key and |dt| <= tolerance, then the least total |dt|.

    `pred` and `gt` are normalised rows (dicts, as check_rows returns them).  Returns a list of
    (pred_index, gt_index) pairs, sorted by gt index.
    """
    P = [tuple(r[f] for f in ROW_FIELDS) for r in pred]
    G = [tuple(r[f] for f in ROW_FIELDS) for r in gt]
    cols = [ROW_FIELDS.index(f) for f in key_fields]
    lim = float(tolerance) + _EPS
    groups = {}
    for i in _order(P):
        groups.setdefault(tuple(P[i][c] for c in cols), ([], []))[0].append(i)
    for j in _order(G):
        g = groups.get(tuple(G[j][c] for c in cols))
        if g is not None:
            g[1].append(j)
    pairs = []
    for pis, gis in groups.values():
        if gis:
            _match_group(pis, gis, P, G, lim, pairs)
    pairs.sort(key=_second)
    return pairs


def _align(pis, gis, pred, gt, lim):
    pt = [pred[i][0] for i in pis]
    gtt = [gt[j][0] for j in gis]
    n_g = len(gis)
    prev_c, prev_s = [0] * (n_g + 1), [0.0] * (n_g + 1)
    choices = []  # per predicted row: bytearray over gt prefix; 0 skip pred, 1 skip gt, 2 match
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


def _f1(n_matched, n_pred, n_gt):
    if n_pred + n_gt == 0:
        return 1.0
    return 2.0 * n_matched / (n_pred + n_gt)


def _macro(pairs, pred, gt, col):
    per_class = {}
    for pi, gi in pairs:
        cls = gt[gi][col]
        right, total = per_class.get(cls, (0, 0))
        per_class[cls] = (right + (pred[pi][col] == cls), total + 1)
    if not per_class:
        return None, {}
    acc = sum(r / n for r, n in per_class.values()) / len(per_class)
    return acc, {c: [r, n] for c, (r, n) in sorted(per_class.items())}


# --------------------------------------------------------------------------------------------
# the record
# --------------------------------------------------------------------------------------------

def _empty_record(n_gt, tolerance, format_error):
    return {
        "judge_version": JUDGE_VERSION,
        "tolerance_s": tolerance,
        "diagnostic": tolerance != TOLERANCE_S,
        "format_error": format_error,
        "n_pred": 0,
        "n_gt": n_gt,
        "n_matched": 0,
        "t1_precision": 0.0,
        "t1_recall": 0.0,
        "t1_f1": 0.0,
        "t2_macro_acc": None,
        "t3_macro_acc": None,
        "t2_per_class": {},
        "t3_per_class": {},
        "n_matched_strict": 0,
        "reward": 0.0,
        "reward_precision": 0.0,
        "reward_recall": 0.0,
        "matches": [],
    }


def judge(gt, answer, tolerance=TOLERANCE_S):
    """Score `answer` (bytes, str, parsed object or None) against a validated ground truth dict.

    Never raises on an answer; raises GroundTruthError only if `gt` itself is malformed.
    """
    gt_rows = _gt_rows(gt)
    tolerance = check_tolerance(tolerance)
    try:
        pred, err = _parse_answer(answer, gt["spec"])
    except Exception as exc:  # a last line of defence: the judge never raises on an answer
        pred, err = None, f"answer could not be read: {type(exc).__name__}: {exc}"
    if err is not None:
        return _empty_record(len(gt_rows), tolerance, err)
    n_pred, n_gt = len(pred), len(gt_rows)
    pairs, strict = _match_both(pred, gt_rows, tolerance)
    t2, t2_cls = _macro(pairs, pred, gt_rows, ROW_FIELDS.index("delta"))
    t3, t3_cls = _macro(pairs, pred, gt_rows, ROW_FIELDS.index("state"))
    rec = _empty_record(n_gt, tolerance, None)
    empty_ok = n_pred + n_gt == 0
    rec.update({
        "n_pred": n_pred,
        "n_matched": len(pairs),
        "t1_precision": len(pairs) / n_pred if n_pred else (1.0 if empty_ok else 0.0),
        "t1_recall": len(pairs) / n_gt if n_gt else (1.0 if empty_ok else 0.0),
        "t1_f1": _f1(len(pairs), n_pred, n_gt),
        "t2_macro_acc": t2,
        "t3_macro_acc": t3,
        "t2_per_class": t2_cls,
        "t3_per_class": t3_cls,
        "n_matched_strict": len(strict),
        "reward": _f1(len(strict), n_pred, n_gt),
        "reward_precision": len(strict) / n_pred if n_pred else (1.0 if empty_ok else 0.0),
        "reward_recall": len(strict) / n_gt if n_gt else (1.0 if empty_ok else 0.0),
        "matches": [[pi, gi] for pi, gi in pairs],
    })
    return rec


def read_answer_file(path, follow_symlinks=True):
    """Read an answer file without trusting it.

    Returns (bytes, None, None) or (None, reason, kind), kind one of "missing", "not_regular" (a
    folder, a FIFO, or with follow_symlinks=False a symlink), "too_large", "unreadable".  The size is
    checked on the open file before reading, and never more than MAX_ANSWER_BYTES + 1 bytes are read
    (a file that grows while it is read is still cut there).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if os.path.islink(path):
            return None, f"{path} is a symlink to nothing, not a regular file", "not_regular"
        return None, f"no answer file at {path}", "missing"
    except OSError as exc:
        if not follow_symlinks and os.path.islink(path):
            return None, f"{path} is a symlink, not a regular file", "not_regular"
        return None, f"cannot read answer {path}: {exc.strerror or exc}", "unreadable"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"{path} is not a regular file", "not_regular"
        if st.st_size > MAX_ANSWER_BYTES:
            return None, _too_large(st.st_size), "too_large"
        chunks, left = [], MAX_ANSWER_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > MAX_ANSWER_BYTES:
            return None, _too_large(f"over {MAX_ANSWER_BYTES}"), "too_large"
        return data, None, None
    except OSError as exc:
        return None, f"cannot read answer {path}: {exc.strerror or exc}", "unreadable"
    finally:
        os.close(fd)


def _too_large(size):
    return f"answer is {size} bytes, more than the {MAX_ANSWER_BYTES} the judge accepts"


def no_answer_record(gt, reason, tolerance=TOLERANCE_S):
    """The record of an answer that could not be read at all: 0.0 everywhere, `reason` as format_error."""
    return _empty_record(len(gt[ROOT_KEY]), check_tolerance(tolerance), reason)


def judge_files(gt_path, answer_path, tolerance=TOLERANCE_S, follow_symlinks=True):
    """Judge files on disk.  A missing, unreadable, oversized or (follow_symlinks=False) symlinked
    answer file scores 0.0."""
    tolerance = check_tolerance(tolerance)
    gt = load_gt(gt_path)
    answer, err, _kind = read_answer_file(answer_path, follow_symlinks)
    if err is not None:
        return no_answer_record(gt, err, tolerance)
    return judge(gt, answer, tolerance)


def reward_of(record):
    """Harbor's reward.json: four finite floats; a tier the judge could not compute is 0.0."""
    out = {}
    for key in REWARD_KEYS:
        v = _finite_float(record.get(key))
        out[key] = 0.0 if v is None else v
    return out


def oracle_answer(gt):
    """The ground truth projected on the answer fields: what a perfect model writes."""
    return {ROOT_KEY: [{f: row[f] for f in ROW_FIELDS} for row in gt[ROOT_KEY]]}


# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="judge.py",
        description="Score one Video-Arena answer against one ground truth; prints the record as JSON.")
    ap.add_argument("gt", help="ground-truth JSON (format %s)" % GT_FORMAT)
    ap.add_argument("answer", help="answer JSON: {\"events\": [rows]}; missing or bad scores 0.0")
    ap.add_argument("--tolerance", default=str(TOLERANCE_S),
                    help="matching tolerance in seconds (default 3; anything else is a diagnostic)")
    ap.add_argument("--reward-json", metavar="OUT",
                    help="also write Harbor's reward.json here and the full record as judge.json beside it")
    args = ap.parse_args(argv)
    try:
        try:
            tolerance = check_tolerance(float(args.tolerance))
        except ValueError:
            raise ValueError(f"--tolerance must be a finite number of seconds >= 0, got {args.tolerance!r}")
        if args.reward_json and (os.path.isdir(args.reward_json) or args.reward_json.endswith(os.sep)):
            raise ValueError(f"--reward-json {args.reward_json} is a folder; give the file to write, "
                             f"e.g. {os.path.join(args.reward_json, 'reward.json')}")
        record = judge_files(args.gt, args.answer, tolerance)
    except (GroundTruthError, ValueError) as exc:
        print(f"judge.py: {exc}", file=sys.stderr)
        return 2
    if args.reward_json:
        out_dir = os.path.dirname(os.path.abspath(args.reward_json))
        try:
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, "judge.json"), "w", encoding="utf-8") as fh:
                json.dump(record, fh, indent=1)
            with open(args.reward_json, "w", encoding="utf-8") as fh:
                json.dump(reward_of(record), fh)
        except OSError as exc:
            print(f"judge.py: cannot write --reward-json {args.reward_json}: {exc.strerror or exc}",
                  file=sys.stderr)
            return 2
    json.dump(record, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
