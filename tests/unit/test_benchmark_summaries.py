"""The two whole-run benchmark scripts read what they summarise from the run's own output: pytest's
--durations lines and summary (fresh_test_command.py), oracle-check's table rows (oracle_check_all.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import fresh_test_command as FT  # noqa: E402
import oracle_check_all as OC  # noqa: E402

DURATIONS = """
============================= slowest durations ==============================
12.50s call     tests/e2e/test_a.py::test_one
2.50s setup    tests/e2e/test_a.py::test_one
1.00s teardown tests/e2e/test_a.py::test_two[x-1]
3.00s call     tests/unit/test_b.py::test_three
(3 durations < 0.005s hidden.)
=========== 3 passed, 1 skipped in 20.00s (0:00:20) ===========
""".splitlines()


def test_durations_are_summed_per_test_file_and_folder_and_the_summary_line_is_pytests():
    per_test, per_file, per_folder, summary = FT.summarise(DURATIONS)
    assert per_test == {"tests/e2e/test_a.py::test_one": 15.0, "tests/e2e/test_a.py::test_two[x-1]": 1.0,
                        "tests/unit/test_b.py::test_three": 3.0}
    assert per_file == {"tests/e2e/test_a.py": 16.0, "tests/unit/test_b.py": 3.0}
    assert per_folder == {"tests/e2e": 16.0, "tests/unit": 3.0}
    assert summary == "3 passed, 1 skipped in 20.00s (0:00:20)"
    assert FT.top(per_file, 1) == [("tests/e2e/test_a.py", 16.0)]


def test_a_failed_run_still_has_its_summary_line_and_no_run_says_so():
    assert FT.summarise(["==== 1 failed, 2 passed in 3.00s ===="])[3] == "1 failed, 2 passed in 3.00s"
    assert FT.summarise(["collected 0 items"])[3] == "no pytest summary line"


def test_oracle_rows_count_per_game_protocol_and_agent_and_a_failure_is_not_a_pass():
    rows = ["oracle A video-arena/dota2-Prukxrdh          1.000  1.000  1.000  1.000 wrote        ok",
            "oracle A video-arena/dota2-Qx1          1.000  1.000  1.000  1.000 wrote        ok",
            "nop    B video-arena/sc2-SMUnTl9p            0.000  0.000  0.000  0.000 never_wrote  FAIL: answer_state 'wrote'",
            "agent  P task                                reward  t1_f1     t2     t3 answer       status",
            "oracle-check PASSED: 2 oracle and 1 nop trials over A, B in 5 s; jobs in x"]
    counts = OC.tabulate(rows)
    assert dict(counts) == {("dota2", "A", "oracle"): [2, 2], ("sc2", "B", "nop"): [0, 1]}


def test_every_whole_run_block_opens_with_when_which_commit_the_load_and_the_command():
    import re

    import run_all

    line = run_all.measured_line("abc123", (0.5, 1, 1), (2.25, 1, 1), "`python3 benchmarks/x.py`")
    assert re.fullmatch(r"Measured \d{4}-\d\d-\d\d \d\d:\d\d UTC, commit abc123, load average 0\.50 before and "
                        r"2\.25 after; command `python3 benchmarks/x\.py`\.", line), line
