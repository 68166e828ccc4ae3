"""`video-arena explore` end to end: a site for a native Protocol A run (the real run-a against the local
test server, stills from its cache), a Protocol B results folder and a Harbor job, opened in headless
Chromium; the numbers on the pages are the scorer's, and the site holds no host path or key.

Screenshots are written to .cache/explore-screens/ (and the test's tmp folder) for a person to look at.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fixtures.openai_test_server import OpenAITestServer
from fixtures.protocol_a_tree import make_tasks_tree, oracle_reply
from video_arena.explore import site as X
from video_arena.scoring import harbor_jobs as HJ

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-exploreSECRET0123456789"


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("headless Chromium is not installed (scripts/apt-packages.txt lists `chromium`; run scripts/setup.sh)")
    return exe


def browse(url: Path, *, shot: Path | None = None, size: str = "1400,1800") -> str:
    """The DOM after Chromium has loaded the page (and a screenshot when asked)."""
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--window-size={size}", "--user-data-dir=" + str(url.parent / ".chromium-profile")]
    if shot is not None:
        subprocess.run(base + [f"--screenshot={shot}", url.as_uri()], capture_output=True, timeout=120, check=True)
        assert shot.stat().st_size > 10_000
        keep = REPO / ".cache" / "explore-screens"
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, keep / shot.name)
    p = subprocess.run(base + ["--dump-dom", url.as_uri()], capture_output=True, text=True, timeout=120, check=True)
    assert "</html>" in p.stdout
    return p.stdout


class Cells(HTMLParser):
    """Text of every <td data-metric=...> (and its row's data-game), in document order."""

    def __init__(self):
        super().__init__()
        self.rows: list[tuple[str | None, str, str]] = []
        self._game = None
        self._metric = None
        self._buf = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr":
            self._game = a.get("data-game")
        if tag == "td" and "data-metric" in a:
            self._metric, self._buf = a["data-metric"], ""

    def handle_data(self, data):
        if self._metric:
            self._buf += data

    def handle_endtag(self, tag):
        if tag == "td" and self._metric:
            self.rows.append((self._game, self._metric, self._buf.strip()))
            self._metric = None


def metrics_on(dom: str) -> list[tuple[str | None, str, str]]:
    p = Cells()
    p.feed(dom)
    return p.rows


def f3(v) -> str:
    return "–" if v is None else f"{v:.3f}"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("explore")
    tree = make_tasks_tree(tmp / "tasks")
    gt = {c: json.loads((tree / "chess" / "gt" / f"{c}.json").read_text()) for c in ("paShort1", "paLong02")}
    oracle = {c: {"events": [{k: e[k] for k in ("t", "type", "actor", "where", "delta", "state")}
                             for e in gt[c]["events"]]} for c in gt}

    # Protocol A: the real runner; paShort1's reply is the oracle, paLong02's one row with a wrong state
    out_a = tmp / "results-a"
    half = {"events": [dict(oracle["paLong02"]["events"][0], state="black")]}

    def reply(body):
        n = sum(p["type"] == "image_url" for p in body["messages"][-1]["content"])
        return {"content": oracle_reply(tree, "paShort1") if n == 12 else json.dumps(half)}

    with OpenAITestServer(default=reply) as srv:
        env = dict(os.environ, OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=srv.base_url, VA_CACHE_DIR=str(tmp / "cache"))
        p = subprocess.run([sys.executable, "-m", "video_arena.cli", "run-a", "--model", "test-model", "--out",
                            str(out_a), "--tasks-root", str(tree), "--workers", "2", "--no-progress"],
                           env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr

    # Protocol B: a results folder as run-b writes it (one answer right, one never written)
    import scoring_helpers as H
    from video_arena.core.instruction import instruction_for, text_digest
    delivered = text_digest(instruction_for("agentic", tree / "chess" / "instruction.md"))
    out_b = tmp / "results-b"
    for case, answer, state in (("paShort1", oracle["paShort1"], "wrote"), ("paLong02", {"events": []}, "never_wrote")):
        d = out_b / "chess" / case
        (d / "logs").mkdir(parents=True)
        (d / "answer.json").write_text(json.dumps(answer))
        answer_sha = hashlib.sha256((d / "answer.json").read_bytes()).hexdigest()
        (d / "logs" / "agent.stdout.log").write_text(
            f"turn 1: ffprobe {tmp}/sandbox-x/match.mp4\nexport OPENAI_API_KEY={SECRET}\nAuthorization: Bearer {SECRET}\n")
        (d / "run.json").write_text(json.dumps({
            "protocol": "B", "model": "agent-model", "game": "chess", "case_id": case, "stop_reason": "completed",
            "answer_state": state, "answer_sha256": answer_sha, **H.runner_digests("B", instruction_sha256=delivered),
            "n_rows": len(answer["events"]), "sandbox": f"{tmp}/sandbox-x",
            "env": {"HOME": str(Path.home()), "OPENAI_API_KEY": SECRET},
            "logs": {"stdout": "logs/agent.stdout.log"}, "audit": {"verdict": "clean"},
            "answer_history": [{"t": 1.5, "state": "never_wrote", "n_rows": 0}, {"t": 9.0, "state": state,
                                                                                 "n_rows": len(answer["events"])}]}))

    # a Harbor job: two trials, rewards as the dataset's verifier writes them for this tree's truth
    from video_arena.core.judge_loader import load_judge
    J = load_judge()
    job = H.make_job(tmp / "jobs", "2026-11-30__12-00-00", model="openai/m1")
    for case, answer in (("paShort1", oracle["paShort1"]), ("paLong02", half)):
        H.trial(job, "chess", case, answer, rewards=J.reward_of(J.judge(gt[case], json.dumps(answer))))
    return {"tmp": tmp, "tree": tree, "a": out_a, "b": out_b, "job": job, "cache": tmp / "cache"}


def _site(sources, name, *srcs, **kw) -> Path:
    out = sources["tmp"] / name
    X.build_site([sources[s] for s in srcs], out, tasks_root=sources["tree"], cache_dir=sources["cache"],
                 jobs=2, progress=False, **kw)
    return out


def _no_host_paths(site: Path, tmp: Path) -> None:
    for p in site.rglob("*"):
        if p.suffix in (".html", ".css", ".js", ".json", ".txt"):
            text = p.read_text(encoding="utf-8")
            for needle in (str(tmp), str(REPO), str(Path.home()) + "/", SECRET, "sk-explore"):
                assert needle not in text, (p.name, needle)


@pytest.mark.parametrize("src", ["a", "b", "job"])
def test_site_numbers_equal_the_scorers(sources, src):
    site = _site(sources, f"site-{src}", src)
    system = HJ.score_any(sources[src], sources["tree"], progress=False)
    index = browse(site / "index.html", shot=sources["tmp"] / f"explore-{src}-index.png")
    on_page = {(g, m): v for g, m, v in metrics_on(index)}
    gs = system.games["chess"]
    for m in ("reward", "t1_f1", "t2_macro_acc", "t3_macro_acc"):
        assert on_page[("chess", m)] == f3(gs.means[m]), m
        assert on_page[("OVERALL", m)] == f3(system.overall()["means"][m]), m
    case = browse(site / "cases" / "chess" / "paLong02.html", shot=sources["tmp"] / f"explore-{src}-case.png",
                  size="1400,2600")
    cell = next(c for c in system.cells() if c.case_id == "paLong02")
    shown = {m: v for _, m, v in metrics_on(case)}
    for m in ("reward", "t1_f1", "t2_macro_acc", "t3_macro_acc"):
        assert shown[m] == f3(cell.metric(m)), m
    # the events table marks every row the judge's way
    marks = re.findall(r'<tr class="m-([a-z-]+)"', case)
    if src == "b":  # never wrote: every truth event missed
        assert marks and set(marks) == {"missed"}
        assert "Answer-state history" in case
    else:  # one row, type/actor/where right, state wrong; the other two truth events missed
        assert sorted(marks) == ["label-wrong", "missed", "missed"]
    _no_host_paths(site, sources["tmp"])


def test_protocol_a_page_shows_the_stills_that_were_sent(sources):
    site = _site(sources, "site-a-stills", "a")
    dom = browse(site / "cases" / "chess" / "paLong02.html")
    receipt = json.loads((sources["a"] / "chess" / "paLong02" / "receipt.json").read_text())
    thumbs = re.findall(r'src="\.\./\.\./(stills/[0-9a-f]{20}\.jpg)"', dom)
    assert len(thumbs) == len(receipt["frames"]) == 256
    assert thumbs == [f"stills/{f['sha256'][:20]}.jpg" for f in receipt["frames"]]
    assert all((site / t).is_file() for t in set(thumbs))
    captions = re.findall(r"<figcaption>#(\d+) · ([0-9:.]+)</figcaption>", dom)
    assert captions[1][0] == "1" and captions[1][1] == f"{int(receipt['video_ts'][1] // 60)}:{receipt['video_ts'][1] % 60:04.1f}"
    assert "Reply" in dom and "stop" in dom


def test_missing_stills_are_said_not_invented(sources, tmp_path):
    site = tmp_path / "site"
    X.build_site([sources["a"]], site, tasks_root=sources["tree"], cache_dir=tmp_path / "empty-cache",
                 jobs=1, progress=False)
    page = (site / "cases" / "chess" / "paShort1.html").read_text()
    assert "stills not in the cache" in page and 'src="../../stills/' not in page
    X.build_site([sources["a"]], site, tasks_root=sources["tree"], cache_dir=tmp_path / "empty-cache",
                 jobs=1, progress=False, extract_stills=True)  # re-extracted: the receipt's bytes again
    page = (site / "cases" / "chess" / "paShort1.html").read_text()
    assert page.count('src="../../stills/') == 12 and "not shown" not in page


def test_compare_puts_two_systems_side_by_side(sources):
    site = _site(sources, "site-compare", "a", "b")
    index = browse(site / "index.html", shot=sources["tmp"] / "explore-compare-index.png")
    assert 'id="compare"' in index
    page = browse(site / "cases" / "chess" / "paShort1.html", shot=sources["tmp"] / "explore-compare-case.png",
                  size="1800,2400")
    assert 'id="view-0"' in page and 'id="view-1"' in page and "views2" in page
    game = (site / "games" / "chess.html").read_text()
    assert game.count("paShort1") >= 1 and "results-b: status" in game
    _no_host_paths(site, sources["tmp"])


def test_ground_truth_only_on_case_pages(sources):
    site = _site(sources, "site-gt", "b")
    where = [e["where"] for e in json.loads((sources["tree"] / "chess" / "gt" / "paLong02.json").read_text())["events"]]
    for page in [site / "index.html", *sorted((site / "games").glob("*.html"))]:
        text = page.read_text()
        for w in where:
            assert f">{w}<" not in text, (page.name, w)


def test_bad_output_folder_is_one_clear_line(sources, tmp_path, capsys):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("mine")
    assert X.main([str(sources["b"]), "--tasks-root", str(sources["tree"]), "-o", str(busy)]) == 2
    err = capsys.readouterr().err
    assert "not an explorer site" in err and (busy / "thesis.tex").read_text() == "mine"
    assert X.main([str(tmp_path / "nope"), "--tasks-root", str(sources["tree"]), "-o", str(tmp_path / "s")]) == 2
    assert "does not exist" in capsys.readouterr().err
