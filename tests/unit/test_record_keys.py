"""The run record's protocol keys are typed (video_arena/core/results.py `ProtocolARecord`,
`ProtocolBRecord`): the runners write them as fields and the readers read them as attributes, so a key's
name is spelled in few places.  The ratchet: the string literal "reasoning_effort" (either quotes) is in at
most two modules of the package (the results contract, which names it once as `REASONING_EFFORT`, and
the Harbor seam, where it is Harbor's name in a trajectory step and in the agent's kwargs)."""
from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

from video_arena import safe_io
from video_arena.core import results as R

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "video_arena"
FIXTURES = REPO / "tests" / "fixtures"
MAX_MODULES = 2


def modules_with_literal(name: str) -> list[str]:
    pattern = re.compile(r"[\"']" + re.escape(name) + r"[\"']")
    return sorted(str(f.relative_to(REPO)) for f in PKG.rglob("*.py") if pattern.search(f.read_text(encoding="utf-8")))


def test_the_reasoning_effort_literal_is_in_at_most_two_modules():
    found = modules_with_literal(R.REASONING_EFFORT)
    assert len(found) <= MAX_MODULES, (f"the string literal {R.REASONING_EFFORT!r} is in {len(found)} modules "
                                       f"(at most {MAX_MODULES}): {found}; read the record's field "
                                       f"(record.protocol_a.reasoning_effort) or use results.REASONING_EFFORT")


def test_the_literal_count_sees_a_literal():
    # the counter itself: it finds the definition of the name (else the ratchet above would pass on nothing)
    assert "video_arena/core/results.py" in modules_with_literal(R.REASONING_EFFORT)


def test_the_name_is_a_field_of_both_protocols_records():
    for cls in (R.ProtocolARecord, R.ProtocolBRecord, R.HarborAgentMetadata):
        assert R.REASONING_EFFORT in {f.name for f in fields(cls)}, cls.__name__


def test_an_unset_key_is_not_written_and_a_null_one_is():
    rec = R.ProtocolARecord(runner="native", reasoning_effort=None)
    assert rec.to_doc() == {"runner": "native", "reasoning_effort": None}
    back = R.ProtocolARecord.from_doc({"runner": "native", "reasoning_effort": None})
    assert back == rec and back.degradations is R.UNSET and not back.recorded(back.degradations)
    assert back.recorded(back.reasoning_effort)


def _fixture_records() -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(FIXTURES.rglob(R.RUN_FILE)):
        doc, _ = safe_io.read_json_object(path)
        if doc is not None and doc.get("protocol") in ("A", "B"):
            out.append((path, doc))
    return out


def test_every_fixture_record_is_its_typed_record_key_for_key_and_value_for_value():
    """An old results folder's run.json is read into the typed record and written back as the same
    document: the same keys with the same values (what the runners write is these types)."""
    records = _fixture_records()
    assert records, "no run.json of a protocol in tests/fixtures"
    for path, doc in records:
        rec = R.RunRecord.from_doc(doc)
        extras = rec.protocol_a if rec.protocol == "A" else rec.protocol_b
        typed = {f.name for f in fields(extras)}
        untyped = set(rec.extras) - typed
        assert not untyped, f"{path}: keys {sorted(untyped)} are no field of {type(extras).__name__}"
        rebuilt = {**{k: doc[k] for k in R.COMMON_KEYS if k in doc}, **extras.to_doc()}
        assert json.dumps(rebuilt, sort_keys=True) == json.dumps(doc, sort_keys=True), path


def test_the_harbor_agents_metadata_is_those_keys_of_its_record_null_when_absent():
    names = [f.name for f in fields(R.HarborAgentMetadata)]
    for path, doc in _fixture_records():
        if doc.get("protocol") != "A":
            continue
        meta = R.HarborAgentMetadata.of(R.RunRecord.from_doc(doc)).to_doc()
        assert list(meta.items()) == [(k, doc.get(k)) for k in names], path
