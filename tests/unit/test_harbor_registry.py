"""Image references, pins and `video-arena image push` against a scripted docker CLI (the real push,
pull and trial against a loopback registry are in tests/e2e/test_registry_push.py)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import textwrap
from pathlib import Path

import pytest

from video_arena.container_host import docker_host
from video_arena.harbor import generate as G
from video_arena.container_host import image as I
from video_arena.container_host import image_cli
from video_arena.container_host import registry as R
from video_arena.harbor import spec as S
from video_arena.harbor import validate as V

TREE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_tree"
D1 = "sha256:" + "ab" * 32
D2 = "sha256:" + "cd" * 32
IMAGE_ID = "sha256:" + "12" * 32
PIN = f"registry.example:5000/va/base@{D1}"

pytestmark = pytest.mark.usefixtures("no_tasks_env")


# --- references -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, domain, path, tag, digest", [
    ("video-arena/base:latest", None, "video-arena/base", "latest", None),
    ("localhost:5000/va/base", "localhost:5000", "va/base", None, None),
    ("127.0.0.1:5000/va/base:v1.2_x", "127.0.0.1:5000", "va/base", "v1.2_x", None),
    (PIN, "registry.example:5000", "va/base", None, D1),
    ("registry.example/a__b/c-d.e:t", "registry.example", "a__b/c-d.e", "t", None),
])
def test_parse_reference(text, domain, path, tag, digest):
    ref = R.parse_reference(text)
    assert (ref.domain, ref.path, ref.tag, ref.digest) == (domain, path, tag, digest)
    assert str(ref) == text


@pytest.mark.parametrize("text, why", [
    ("", "empty"),
    ("va/base latest", "white space"),
    ("va/base\n", "white space"),
    ("Registry.example/VA/base", "name part 'VA'"),
    ("reg.example/va/base@sha256:" + "AB" * 32, "64 lowercase hex"),
    ("reg.example/va/base@sha256:" + "ab" * 31, "64 lowercase hex"),
    ("reg.example/va/base@sha512:" + "ab" * 64, "not sha256:"),
    ("reg.example/va/base@" + "ab" * 32, "not sha256:"),
    ("reg.example/va/base:-bad", "not a valid tag"),
    ("reg.example/va//base", "name part ''"),
    ("-reg.example:5000/va/base", "not a registry host"),
    ("reg.example/" + "a" * 300, "longer than 255"),
])
def test_bad_references_say_why(text, why):
    with pytest.raises(R.ImageReferenceError, match=why.replace("(", r"\(").replace(")", r"\)")):
        R.parse_reference(text)


def test_pinned_means_digest_and_no_tag():
    assert R.parse_pinned(PIN).digest == D1
    with pytest.raises(R.ImageReferenceError, match="is not pinned"):
        R.parse_pinned("registry.example:5000/va/base:latest")
    with pytest.raises(R.ImageReferenceError, match="drop the tag"):
        R.parse_pinned(f"registry.example:5000/va/base:v1@{D1}")
    assert R.is_pinned(PIN) and not R.is_pinned("video-arena/base:latest")
    assert R.check_base_image("video-arena/base:latest") is None
    assert "64 lowercase hex" in R.check_base_image("r.example/va/base@sha256:abc")


def test_push_target_needs_a_registry_and_no_digest():
    assert str(R.target_reference("localhost:5000/va/base")) == "localhost:5000/va/base:latest"
    with pytest.raises(R.ImageReferenceError, match="names no registry"):
        R.target_reference("va/base:v1")
    with pytest.raises(R.ImageReferenceError, match="the digest is what the push prints"):
        R.target_reference(PIN)


@pytest.mark.parametrize("output, says", [
    ('Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused', "is unreachable"),
    ('dial tcp: lookup nohost.invalid on 10.0.0.53:53: no such host', "is unreachable"),
    ('http: server gave HTTP response to HTTPS client', "speaks plain HTTP"),
    ('x509: certificate signed by unknown authority', "TLS certificate is not trusted"),
    ('denied: requested access to the resource is denied', "refused the push (log in"),
    ('error parsing HTTP 405 response body: "Method not allowed\\n"', "refused the push: error parsing"),
])
def test_push_failures_are_classified(output, says):
    assert says in R.classify_push_failure("r.example:5000", "The push refers to ...\n" + output)


# --- push against a scripted docker CLI -----------------------------------------------------------

@pytest.fixture
def fake_docker(tmp_path, monkeypatch):
    """A docker CLI: `image inspect` answers from $FAKE_STATE/<ref>, `tag` writes it, `push` prints
    $FAKE_PUSH_OUT and exits $FAKE_PUSH_RC (and, with $FAKE_RETAG, re-tags the target meanwhile)."""
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    (state / "video-arena_base_latest").write_text(IMAGE_ID)
    script = bin_dir / "docker"
    script.write_text(textwrap.dedent("""\
        #!/bin/sh
        key() { echo "$1" | tr '/:@' '___'; }
        case "$1" in
          image)  ref="$5"; f="$FAKE_STATE/$(key "$ref")"
                  case "$4" in
                    *RepoDigests*) cat "$FAKE_STATE/digests" 2>/dev/null; exit 0 ;;
                  esac
                  if [ -f "$f" ]; then cat "$f"; exit 0; fi
                  if [ "$ref" = "$(cat "$FAKE_STATE/video-arena_base_latest")" ]; then echo "$ref"; exit 0; fi
                  echo "Error response from daemon: No such image: $ref" >&2; exit 1 ;;
          tag)    echo "$2" > "$FAKE_STATE/$(key "$3")" ;;
          push)   printf '%b\\n' "$FAKE_PUSH_OUT"
                  [ -n "$FAKE_RETAG" ] && echo "sha256:efefefefefefefefefefefefefefefefefefefefefefefefefefefefefefefef" > "$FAKE_STATE/$(key "$2")"
                  exit "${FAKE_PUSH_RC:-0}" ;;
        esac
        """))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_STATE", str(state))
    monkeypatch.setattr(docker_host, "docker_cli", lambda: str(script))
    monkeypatch.setattr(docker_host, "ensure_docker", lambda **_kw: (True, "fake docker"))
    (state / "digests").write_text(f"registry.example:5000/va/base@{D1}\n")
    monkeypatch.setenv("FAKE_PUSH_OUT", f"The push refers to repository [registry.example:5000/va/base]\\n"
                                        f"aaa: Pushed\\nv1: digest: {D1} size: 1578")
    return state


def push(capsys, *args):
    rc = image_cli.main(["push", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_push_prints_the_repo_digest_only_on_stdout(fake_docker, capsys):
    rc, out, err = push(capsys, "registry.example:5000/va/base:v1")
    assert rc == 0, err
    assert out == f"registry.example:5000/va/base@{D1}\n"
    assert "push: v1: digest:" in err and f"--base-image registry.example:5000/va/base@{D1}" in err
    assert (fake_docker / "registry.example_5000_va_base_v1").read_text().strip() == IMAGE_ID  # tagged by ID


@pytest.mark.parametrize("args, env, says", [
    (["va/base:v1"], {}, "bad reference: 'va/base:v1' names no registry"),
    ([f"registry.example:5000/va/base@{D1}"], {}, "bad reference"),
    (["registry.example:5000/va/base:v1", "--image", "nope:1"], {}, "image nope:1 is not present locally"),
    (["registry.example:5000/va/base:v1"],
     {"FAKE_PUSH_OUT": 'Get "http://registry.example:5000/v2/": dial tcp: connect: connection refused',
      "FAKE_PUSH_RC": "1"}, "registry registry.example:5000 is unreachable"),
    (["registry.example:5000/va/base:v1"],
     {"FAKE_PUSH_OUT": "denied: requested access to the resource is denied", "FAKE_PUSH_RC": "1"},
     "refused the push (log in with `docker login registry.example:5000`?)"),
    (["registry.example:5000/va/base:v1"], {"FAKE_PUSH_OUT": "aaa: Pushed"}, "reported no digest for tag 'v1'"),
    (["registry.example:5000/va/base:v1"], {"FAKE_PUSH_OUT": f"other: digest: {D1} size: 1"},
     "reported no digest for tag 'v1'"),
    (["registry.example:5000/va/base:v1"], {"FAKE_RETAG": "1"}, "was re-tagged to another image"),
])
def test_push_errors_are_one_line(fake_docker, capsys, monkeypatch, args, env, says):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    rc, out, err = push(capsys, *args)
    assert rc == 1 and out == ""
    lines = [ln for ln in err.splitlines() if ln.startswith("video-arena image push: error:")]
    assert len(lines) == 1 and says in lines[0], err
    assert "Traceback" not in err


def test_push_refuses_a_digest_docker_did_not_record(fake_docker, capsys):
    (fake_docker / "digests").write_text(f"registry.example:5000/va/base@{D2}\n")
    rc, out, err = push(capsys, "registry.example:5000/va/base:v1")
    assert rc == 1 and out == "" and "does not hold it for registry.example:5000/va/base" in err


def test_push_that_hangs_is_killed(fake_docker, monkeypatch):
    monkeypatch.setenv("FAKE_PUSH_OUT", "aaa: Preparing")
    script = Path(docker_host.docker_cli())
    script.write_text(script.read_text().replace('push)   printf', 'push)   sleep 30; printf'))
    with pytest.raises(R.PushError, match="did not finish in 1 s"):  # unkilled, it would exit 0 after 30 s
        R.push_image("registry.example:5000/va/base:v1", timeout=1)


def test_push_without_docker_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(docker_host, "ensure_docker", lambda **_kw: (False, "docker CLI not found on PATH"))
    rc, out, err = push(capsys, "registry.example:5000/va/base:v1")
    assert rc == 1 and out == "" and "Docker is not usable: docker CLI not found" in err


# --- make-harbor --base-image and validate --------------------------------------------------------

def gen(out: Path, *extra: str) -> int:
    return G.main(["--out", str(out), "--tasks-root", str(TREE), "--no-progress", "--net", "compose-none", *extra])


@pytest.fixture(scope="module")
def pinned(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("pinned")
    out = {}
    for media in S.MEDIA_MODES:
        assert gen(base / media, "--media", media, "--base-image", PIN) == 0
        out[media] = base / media
    return out


def test_make_harbor_hints_require_pinned(tmp_path, capsys):
    assert gen(tmp_path / "p", "--base-image", PIN) == 0
    assert f"validate_harbor.py {tmp_path / 'p'} --require-pinned;" in capsys.readouterr().out
    assert gen(tmp_path / "t") == 0
    assert "--require-pinned" not in capsys.readouterr().out


def test_make_harbor_pins_every_task(pinned):
    marker = json.loads((pinned["mount"] / S.DATASET_MARKER).read_text())
    assert marker["base_image"] == PIN and marker["base_image_pinned"] is True
    for task in sorted(pinned["mount"].glob("chess-*")):
        assert f'docker_image = "{PIN}"' in (task / "task.toml").read_text()
    for task in sorted(pinned["copy"].glob("chess-*")):
        assert f"\nFROM {PIN}\n" in (task / "environment" / "Dockerfile").read_text()
        assert "docker_image" not in (task / "task.toml").read_text()


@pytest.mark.parametrize("image, says", [
    ("registry.example:5000/va/base@sha256:abc", "64 lowercase hex"),
    (f"registry.example:5000/va/base:v1@{D1}", "drop the tag"),
    ("registry.example:5000/va/base@sha256:" + "AB" * 32, "64 lowercase hex"),
    ("va base", "white space"),
])
def test_make_harbor_refuses_bad_pins_in_one_line(tmp_path, capsys, image, says):
    assert gen(tmp_path / "out", "--base-image", image) == 1
    err = capsys.readouterr().err
    assert err.startswith("make-harbor: error: --base-image:") and says in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("media", S.MEDIA_MODES)
def test_pinned_dataset_validates_with_harbor_unpinned_image_rule(pinned, media):
    v = V.Validator(TREE, V.compose_available(), require_pinned=True)
    reports, dproblems = v.check_dataset(pinned[media], progress=False)
    assert dproblems == [] and all(r.ok for r in reports), [r.problems for r in reports]
    assert all(f"base image pinned to {PIN}" in r.notes for r in reports)


def _private(pinned, media, tmp_path) -> Path:
    ds = tmp_path / "ds"
    shutil.copytree(pinned[media], ds)
    return ds


def test_task_unpinned_in_a_pinned_dataset(pinned, tmp_path):
    ds = _private(pinned, "mount", tmp_path)
    t = ds / "chess-Fx7kQ2aB" / "task.toml"
    t.write_text(t.read_text().replace(PIN, "registry.example:5000/va/base:latest"))
    rep = V.Validator(TREE, with_compose=False).check(ds / "chess-Fx7kQ2aB")
    text = "\n".join(rep.problems)
    assert "is unpinned (a tag), but the dataset was made pinned to" in text
    assert "harbor lint [unpinned-image]" in text  # Harbor's own rule, selected for pinned datasets


def test_copy_task_from_an_unpinned_tag(pinned, tmp_path):
    ds = _private(pinned, "copy", tmp_path)
    df = ds / "chess-Fx7kQ2aB" / "environment" / "Dockerfile"
    df.write_text(df.read_text().replace(f"FROM {PIN}", "FROM registry.example:5000/va/base:latest"))
    rep = V.Validator(TREE, with_compose=False).check(ds / "chess-Fx7kQ2aB")
    text = "\n".join(rep.problems)
    assert "environment/Dockerfile FROM 'registry.example:5000/va/base:latest' is unpinned" in text
    assert "harbor lint [unpinned-image]" in text


def test_malformed_pin_in_task_and_marker(pinned, tmp_path):
    ds = _private(pinned, "mount", tmp_path)
    bad = "registry.example:5000/va/base@sha256:" + "AB" * 32  # Harbor's own rule accepts uppercase hex
    for t in ds.glob("chess-*/task.toml"):
        t.write_text(t.read_text().replace(PIN, bad))
    marker = json.loads((ds / S.DATASET_MARKER).read_text())
    marker["base_image"] = bad
    (ds / S.DATASET_MARKER).write_text(json.dumps(marker))
    reports, dproblems = V.Validator(TREE, with_compose=False).check_dataset(ds, progress=False)
    assert any("base_image:" in p and "64 lowercase hex" in p for p in dproblems), dproblems
    assert all(any("[environment].docker_image:" in p and "64 lowercase hex" in p for p in r.problems)
               for r in reports)


def test_marker_unpinned_by_hand_is_reported(pinned, tmp_path):
    """Unpinning the marker and the tasks consistently still leaves base_image_pinned: true behind."""
    ds = _private(pinned, "mount", tmp_path)
    for t in ds.glob("chess-*/task.toml"):
        t.write_text(t.read_text().replace(PIN, "registry.example:5000/va/base:latest"))
    marker = json.loads((ds / S.DATASET_MARKER).read_text())
    marker["base_image"] = "registry.example:5000/va/base:latest"
    (ds / S.DATASET_MARKER).write_text(json.dumps(marker))
    _reports, dproblems = V.Validator(TREE, with_compose=False).check_dataset(ds, progress=False)
    assert any("base_image_pinned=True but its base_image" in p for p in dproblems), dproblems


def test_unpinned_dataset_is_a_note_unless_required(tmp_path, capsys):
    out = tmp_path / "local"
    assert gen(out) == 0
    assert V.main([str(out), "--tasks-root", str(TREE), "--no-progress", "--no-compose"]) == 0
    said = capsys.readouterr().out
    assert "note: the base image video-arena/base:latest is a tag, not a digest" in said
    assert V.main([str(out), "--tasks-root", str(TREE), "--no-progress", "--no-compose", "--require-pinned"]) == 1
    said = capsys.readouterr().out
    assert "[environment].docker_image 'video-arena/base:latest' is unpinned" in said
