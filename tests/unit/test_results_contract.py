"""Results folders written by the runners of the day still read the same: the committed fixtures of
tests/fixtures/results_contract/ (a run-a folder, a run-b folder, two Harbor jobs; make_fixtures.py)
score, explore and oracle-check to the committed expected outputs, byte for byte (paths under the
fixtures folder written `<fixtures>`)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "results_contract"
sys.path.insert(0, str(HERE))

from contract_outputs import SOURCES, all_outputs  # noqa: E402

EXPECTED = HERE / "expected"


@pytest.fixture(scope="module")
def outputs(no_tasks_env):
    return all_outputs(HERE)


def test_every_expected_output_is_made(outputs):
    assert sorted(outputs) == sorted(p.name for p in EXPECTED.iterdir())
    assert {n.split(".")[0] for n in outputs} == set(SOURCES)


@pytest.mark.parametrize("name", sorted(p.name for p in EXPECTED.iterdir()))
def test_output_is_byte_identical(outputs, name):
    want = (EXPECTED / name).read_text(encoding="utf-8")
    assert outputs[name] == want, f"{name} differs from the committed expected output"
