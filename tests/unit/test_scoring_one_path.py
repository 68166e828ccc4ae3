"""A native cell and the same run in a Harbor trial are scored by the same steps (cells.score_cell over a
cell source): tests/fixtures/results_contract's job_a holds, as its one trial's agent/ folder, the very
run.json and answer of run_a's chess/Fx7kQ2aB, and the two cells come out the same but for what only
one of the sources records."""
from __future__ import annotations

from pathlib import Path

from video_arena.scoring import cells as SC
from video_arena.scoring import harbor_jobs as HJ

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "results_contract"
CASE = "Fx7kQ2aB"
#: what only one source records: Harbor's trial facts (the trial, its attempt, Harbor's reward and stop,
#: the agent as Harbor names it), the native record's own answer state, tolerance and instruction check
SOURCE_FACTS = {"trial", "attempt", "harbor_reward", "reward_mismatch", "audit_source", "exception_type",
                "model", "stop_reason", "answer_state", "run_tolerance_s", "instruction_current"}


def _cell(source: str) -> SC.Cell:
    system = HJ.score_any(FIX / source, FIX / "tasks", n_boot=0, progress=False)
    return next(c for c in system.cells() if c.case_id == CASE)


def test_the_fixture_trial_holds_the_native_cells_run():
    trial = next(p for p in (FIX / "job_a").iterdir() if p.name.startswith(f"chess-{CASE}__"))
    for name in ("run.json", "answer.json"):
        assert (trial / "agent" / name).read_bytes() == (FIX / "run_a" / "chess" / CASE / name).read_bytes()


def test_a_native_cell_and_its_harbor_trial_score_alike():
    native, harbor = _cell("run_a"), _cell("job_a")
    assert isinstance(harbor, HJ.HarborCell) and not isinstance(native, HJ.HarborCell)
    assert native.status == harbor.status == SC.STATUS_SCORED
    rn, rh = native.to_row(), harbor.to_row()
    differ = {k for k in rn.keys() | rh.keys() if rn.get(k) != rh.get(k)}
    assert differ <= SOURCE_FACTS, {k: (rn.get(k), rh.get(k)) for k in differ - SOURCE_FACTS}
    assert native.answer_check == harbor.answer_check == "ok"
    assert native.record == harbor.record
