"""The environment table in docs/HARBOR.md comes from what the installed Harbor declares; the
network probe's verdict; Podman's containers.conf."""
from __future__ import annotations

import ast
from pathlib import Path

from video_arena.harbor import envtable as E
from video_arena.harbor_api import environments as HE
from video_arena.container_host.netprobe import offline

DOC = Path(__file__).resolve().parents[2] / "docs" / "HARBOR.md"


def test_docs_table_is_what_harbor_declares():
    assert E.main(["--check", str(DOC)]) == 0


def test_known_rows():
    rows = {r.name: r for r in E.registry_rows()}
    assert all(r.found for r in rows.values()), [r.name for r in rows.values() if not r.found]
    docker = E.forms(rows["docker"])
    assert docker["mount"] is True and docker["copy_docker"] is True
    assert isinstance(docker["copy_strict"], str) and "egress" in docker["copy_strict"]  # only with the sidecar
    assert E.forms(rows["podman"]) == docker  # Podman inherits Docker's declaration
    modal = E.forms(rows["modal"])
    assert modal["mount"] is False and modal["copy_strict"] is True  # no host paths; enforces no-network
    assert E.forms(rows["ack"]) == {"mount": False, "copy_docker": False, "copy_strict": False}


def test_expressions_are_evaluated_per_task_form():
    expr = ast.parse("not self._compose_mode", mode="eval").body
    assert HE._eval(expr, "x", compose=False) is True and HE._eval(expr, "x", compose=True) is False
    unknown = ast.parse("self._enable_egress_control", mode="eval").body
    assert HE._eval(unknown, "docker", compose=False) == "if enable egress control"
    assert E._both(True, "if a") == "if a" and E._both("if a", False) is False and E._both(True, True) is True


def test_stale_table_is_reported(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(f"x\n{E.BEGIN}\n| old |\n{E.END}\ny\n")
    assert E.main(["--check", str(page)]) == 1
    assert E.main(["--write", str(page)]) == 0 and E.main(["--check", str(page)]) == 0
    assert page.read_text().startswith("x\n") and page.read_text().endswith(f"{E.END}\ny\n")
    (tmp_path / "no.md").write_text("no markers")
    assert E.main(["--check", str(tmp_path / "no.md")]) == 2


def test_probe_verdict():
    fail = {"tcp": "1.1.1.1:443", "ok": False, "error": "OSError: Network is unreachable"}
    good = {"interfaces": ["lo"], "routes": [], "attempts": [fail]}
    assert offline(good)[0] is True
    assert offline(dict(good, interfaces=["eth0", "lo"]))[0] is False
    assert offline(dict(good, routes=[["eth0", "00000000", "0100A8C0"]]))[0] is False
    assert offline(dict(good, attempts=[fail, {"dns": "deb.debian.org", "ok": True}]))[0] is False
    assert offline(dict(good, attempts=[]))[0] is False
    assert offline(None)[0] is False and offline({"interfaces": None})[0] is False


def test_podman_status_names_what_is_missing(monkeypatch):
    from video_arena.container_host import podman

    monkeypatch.setattr(podman.shutil, "which", lambda name, path=None: None)
    ok, why = podman.podman_status()
    assert not ok and "podman not found" in why


def test_podman_env_puts_this_venv_first(monkeypatch, tmp_path):
    from video_arena.container_host import podman

    monkeypatch.setattr(podman, "containers_conf", lambda image="x": tmp_path / "c.conf")
    env = podman.harbor_env({"PATH": "/usr/bin"})
    assert env["PATH"].split(":")[0] == str(podman.venv_bin()) and env["CONTAINERS_CONF"] == str(tmp_path / "c.conf")
    assert podman.harbor_env({"PATH": "/usr/bin", "CONTAINERS_CONF": "/mine"})["CONTAINERS_CONF"] == "/mine"


def test_a_page_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    page = tmp_path / "p.md"
    page.write_text(f"x\n{E.BEGIN}\n| old |\n{E.END}\n")

    def refuse(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(type(page), "write_text", refuse)
    assert E.main(["--write", str(page)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"harbor-envs: error: cannot write {page}: Permission denied"
