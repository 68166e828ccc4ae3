"""Server limits in Protocol A (video_arena/protocol_a/server_limits.py): the real refusal texts and
JSON shapes of vLLM, SGLang, OpenAI and OpenRouter, and the runner against the local test server
answering like vLLM (tests/fixtures/openai_test_server.py VLLMLike) over real HTTP with the openai
client.  A 400 is never re-sent unchanged."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from fixtures.openai_test_server import VLLMLike, count_images
from fixtures.protocol_a_fixtures import cache, fast_retries, server, tree  # noqa: F401 (pytest fixtures)
from fixtures.protocol_a_tree import oracle_reply
from video_arena.protocol_a import runner
from video_arena.protocol_a import server_limits as SL
from video_arena.core.provenance import verify_cell

SHORT, LONG = "paShort1", "paLong02"

# -- the refusal texts, as the servers write them -----------------------------------------------------
# vLLM: vllm/multimodal/processing/context.py, BaseProcessingInfo.validate_num_items
VLLM_IMAGES = "At most 64 image(s) may be provided in one prompt."
VLLM_IMAGES_V = ("At most 64 image(s) may be provided in one prompt. Set `--limit-mm-per-prompt` to increase this "
                 "limit. (parameter=image)")
# vLLM: vllm/entrypoints/openai/serving_engine.py, OpenAIServing._validate_input (current and older forms)
VLLM_CTX_INPUT = ("This model's maximum context length is 32768 tokens. However, your request has 40000 input "
                  "tokens. Please reduce the length of the input messages.")
VLLM_CTX_TOTAL = ("This model's maximum context length is 8192 tokens. However, you requested 9100 tokens (8100 in "
                  "the messages, 1000 in the completion). Please reduce the length of the messages or completion.")
VLLM_CTX_MAXTOK = ("'max_tokens' or 'max_completion_tokens' is too large: 48000. This model's maximum context length "
                   "is 65536 tokens and your request has 30000 input tokens (48000 > 65536 - 30000).")
# SGLang: python/sglang/srt/managers/tokenizer_manager.py, TokenizerManager._validate_one_request
SGLANG_CTX_INPUT = "The input (140000 tokens) is longer than the model's context length (131072 tokens)."
SGLANG_CTX_TOTAL = ("Requested token count exceeds the model's maximum context length of 131072 tokens. You "
                    "requested a total of 171000 tokens: 123000 tokens from the input messages and 48000 tokens for "
                    "the completion. Please reduce the number of tokens in the input messages or the completion to "
                    "fit within the limit.")
# SGLang's image-count refusal as issue 22 quotes it (its source line was not found by search)
SGLANG_IMAGES = "Image count 256 exceeds limit 64"
# OpenAI: the error object of the Chat Completions API (code context_length_exceeded)
OPENAI_CTX = {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                                   "resulted in 144641 tokens. Please reduce the length of the messages.",
                        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
OPENAI_IMAGES = {"error": {"message": "Too many images in request. Max is 50.", "type": "invalid_request_error",
                           "param": None, "code": None}}
# OpenRouter: {"error": {"message", "code": 400, "metadata"}}
OPENROUTER_CTX = {"error": {"message": "This endpoint's maximum context length is 8192 tokens. However, you "
                                       "requested about 12000 tokens (10000 of text input, 2000 in the output). "
                                       "Please reduce the length of either one, or use the \"middle-out\" transform "
                                       "to compress your prompt automatically.", "code": 400,
                            "metadata": {"provider_name": None}}}
NGINX_413 = ("<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 "
             "Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


@pytest.mark.parametrize("status,text,kind,numbers", [
    (400, VLLM_IMAGES, "image_cap", {"cap": 64}),
    (400, VLLM_IMAGES_V, "image_cap", {"cap": 64}),
    (400, SGLANG_IMAGES, "image_cap", {"cap": 64}),
    (400, json.dumps(OPENAI_IMAGES), "image_cap", {"cap": 50}),
    (400, "Too many images in request: 300, maximum allowed: 250", "image_cap", {"cap": 250}),
    (400, "request contains 54 images, exceeding the maximum of 50 allowed per request", "image_cap", {"cap": 50}),
    (400, "Too many images in request", "image_cap", {"cap": None}),
    (400, "The number of images in the request exceeds the limit of 100.", "image_cap", {"cap": 100}),
    (400, VLLM_CTX_INPUT, "context_overflow", {"context": 32768, "prompt_tokens": 40000}),
    (400, VLLM_CTX_TOTAL, "context_overflow", {"context": 8192, "prompt_tokens": 8100, "completion_tokens": 1000}),
    (400, VLLM_CTX_MAXTOK, "context_overflow", {"context": 65536, "prompt_tokens": 30000,
                                                "completion_tokens": 48000}),
    (400, SGLANG_CTX_INPUT, "context_overflow", {"context": 131072, "prompt_tokens": 140000}),
    (400, SGLANG_CTX_TOTAL, "context_overflow", {"context": 131072, "prompt_tokens": 123000,
                                                 "completion_tokens": 48000}),
    (400, json.dumps(OPENAI_CTX), "context_overflow", {"context": 128000, "prompt_tokens": 144641}),
    (400, json.dumps(OPENROUTER_CTX), "context_overflow", {"context": 8192, "prompt_tokens": 10000,
                                                           "completion_tokens": 2000}),
    (413, NGINX_413, "too_large", {}),
    (400, "Request Entity Too Large", "too_large", {}),
    (502, "upstream: request body too large", "too_large", {}),
    # one image's size is not a count: never re-sampled to "20" stills
    (400, "Image size exceeds the maximum of 20 MB per image", None, {}),
    (400, "Request contains an image that exceeds the maximum allowed size of 5242880 bytes", None, {}),
    (400, "Invalid value for 'temperature'", None, {}),
    (500, "internal error", None, {}),
])
def test_classify_real_refusals(status, text, kind, numbers):
    lim = SL.classify(status, text)
    assert (lim.kind if lim else None) == kind
    for k, v in numbers.items():
        assert getattr(lim, k) == v, (k, lim)


def test_overflow_frames_cuts_in_proportion_or_gives_up():
    lim = SL.classify(400, VLLM_CTX_MAXTOK)  # 30000 prompt tokens at n stills, 65536 - 48000 left
    assert SL.overflow_frames(lim, 256, 48000) == int(256 * (65536 - 48000) / 30000 * SL.OVERFLOW_MARGIN)
    # the completion budget alone fills the context: fewer stills cannot help
    assert SL.overflow_frames(SL.classify(400, VLLM_CTX_INPUT.replace("32768", "40000")), 256, 48000) is None
    assert SL.overflow_frames(SL.Limit("context_overflow"), 256, 100) == 128
    assert SL.overflow_frames(SL.Limit("context_overflow"), 1, 100) is None


# -- the runner over real HTTP --------------------------------------------------------------------------


def run_long(tree, cache, server, out, *extra) -> int:
    """Run the 300.5 s case only (256 stills on the v1 grid)."""
    import shutil
    t = out.parent / "t_long"
    if not t.exists():
        shutil.copytree(tree, t)
        cases = json.loads((t / "chess" / "cases.json").read_text())
        cases["cases"] = [c for c in cases["cases"] if c["case_id"] == LONG]
        (t / "chess" / "cases.json").write_text(json.dumps(cases))
    return runner.main(["--model", "m", "--base-url", server.base_url, "--out", str(out), "--tasks-root", str(t),
                        "--cache-dir", str(cache), "--no-progress", *extra]), t


def rec(out) -> dict:
    return json.loads((Path(out) / "chess" / LONG / "run.json").read_text())


def n_images(server) -> list[int]:
    return [count_images(q["body"]) for q in server.requests]


def test_vllm_image_cap_resends_once_at_the_stated_cap(tree, cache, server, tmp_path):
    v = VLLMLike(max_images=64, reply={"content": oracle_reply(tree, LONG)})
    server.default = v
    out = tmp_path / "o"
    rc, t = run_long(tree, cache, server, out)
    assert rc == 0
    r = rec(out)
    assert n_images(server) == [256, 64] and v.refused == [VLLM_IMAGES]
    assert r["answer_state"] == "answered" and r["frames_used"] == 64
    assert r["degradations"][0]["kind"] == "max_frames" and (r["degradations"][0]["from"],
                                                             r["degradations"][0]["to"]) == (256, 64)
    assert r["attempts"][0]["error"] == "image_cap" and r["attempts"][0]["status"] == 400
    assert verify_cell(out / "chess" / LONG, t) == (True, "ok")


def test_vllm_legacy_error_shape_is_read_too(tree, cache, server, tmp_path):
    server.default = VLLMLike(max_images=64, reply={"content": oracle_reply(tree, LONG)}, legacy_shape=True)
    out = tmp_path / "o"
    assert run_long(tree, cache, server, out)[0] == 0
    assert n_images(server) == [256, 64] and rec(out)["frames_used"] == 64


def test_an_image_cap_refused_again_is_not_resent_a_third_time(tree, cache, server, tmp_path):
    server.default = {"status": 400, "body": {"error": {"message": VLLM_IMAGES, "type": "BadRequestError",
                                                        "param": "image", "code": 400}}}
    out = tmp_path / "o"
    assert run_long(tree, cache, server, out)[0] == 0
    r = rec(out)
    assert n_images(server) == [256, 64]
    assert r["stop_reason"] == "harness_error" and "already re-sent" in r["error"]


def test_an_image_refusal_without_a_cap_is_never_resent(tree, cache, server, tmp_path):
    server.default = {"status": 400, "body": {"error": {"message": "Too many images in request",
                                                        "type": "invalid_request_error"}}}
    out = tmp_path / "o"
    assert run_long(tree, cache, server, out)[0] == 0
    assert n_images(server) == [256] and rec(out)["stop_reason"] == "harness_error"


def test_context_overflow_stops_the_cell_in_its_own_stop_reason(tree, cache, server, tmp_path):
    v = VLLMLike(max_model_len=80000, reply={"content": oracle_reply(tree, LONG)})
    server.default = v
    out = tmp_path / "o"
    rc, t = run_long(tree, cache, server, out)
    assert rc == 0
    r = rec(out)
    assert n_images(server) == [256] and "is too large: 48000" in v.refused[0]
    assert r["stop_reason"] == "context_overflow" and r["answer_state"] is None
    assert not (out / "chess" / LONG / "answer.json").exists()
    # resuming does not send the refused request again
    assert run_long(tree, cache, server, out)[0] == 0 and len(server.requests) == 1


def test_context_overflow_degrade_resends_with_fewer_stills(tree, cache, server, tmp_path):
    v = VLLMLike(max_model_len=80000, reply={"content": oracle_reply(tree, LONG)})
    server.default = v
    out = tmp_path / "o"
    rc, t = run_long(tree, cache, server, out, "--on-overflow", "degrade")
    assert rc == 0
    r = rec(out)
    counts = n_images(server)
    assert counts[0] == 256 and len(counts) == 2 and counts[1] < 256
    assert v.prompt_tokens(server.requests[1]["body"]) + 48000 <= 80000
    assert r["answer_state"] == "answered" and r["frames_used"] == counts[1] and r["on_overflow"] == "degrade"
    d = r["degradations"][0]
    assert d["kind"] == "max_frames" and d["from"] == 256 and d["to"] == counts[1] and "context overflow" in d["why"]
    assert verify_cell(out / "chess" / LONG, t) == (True, "ok")


def test_openai_and_openrouter_context_bodies_over_http(tree, cache, server, tmp_path):
    for i, body in enumerate((OPENAI_CTX, OPENROUTER_CTX)):
        server.requests.clear()
        server.default = {"status": 400, "body": body}
        out = tmp_path / f"o{i}"
        assert run_long(tree, cache, server, out)[0] == 0
        assert rec(out)["stop_reason"] == "context_overflow" and len(server.requests) == 1


def test_a_gateway_413_page_steps_jpeg_q(tree, cache, server, tmp_path):
    server.script({"status": 413, "raw": NGINX_413, "content_type": "text/html"},
                  {"status": 400, "body": {"error": {"message": "Request Entity Too Large"}}},
                  {"content": oracle_reply(tree, LONG)})
    out = tmp_path / "o"
    assert run_long(tree, cache, server, out)[0] == 0
    r = rec(out)
    assert [d["kind"] for d in r["degradations"]] == ["jpeg_q", "jpeg_q"] and r["sampling"]["jpeg_q"] == 6
    sizes = [sum(len(base64.b64decode(p["image_url"]["url"].split(",", 1)[1]))
                 for p in q["body"]["messages"][-1]["content"] if p["type"] == "image_url") for q in server.requests]
    assert sizes[0] > sizes[1] > sizes[2]


# vLLM V1: the engine's input processor, once the images are expanded into their tokens
# (vllm/v1/engine/processor.py, Processor._validate_model_input; the multimodal suggestion appended): what a
# multimodal model answers when the stills, not the text, overflow the context
VLLM_DECODER = ("The decoder prompt (length 90000) is longer than the maximum model length of 80000. Make sure that "
                "`max_model_len` is no smaller than the number of text tokens plus multimodal tokens. For image "
                "inputs, the number of image tokens depends on the number of images, and possibly their aspect "
                "ratios as well.")
# vLLM's current serving check (renderer): the completion and the (lower bound of the) prompt stated
VLLM_CTX_REQUESTED = ("This model's maximum context length is 8192 tokens. However, you requested 64 output tokens "
                      "and your prompt contains at least 8129 input tokens, for a total of at least 8193 tokens. "
                      "Please reduce the length of the input prompt or the number of requested output tokens.")


@pytest.mark.parametrize("text,numbers", [
    (VLLM_DECODER, {"context": 80000, "prompt_tokens": 90000}),
    (VLLM_CTX_REQUESTED, {"context": 8192, "prompt_tokens": 8129, "completion_tokens": 64}),
    (VLLM_CTX_REQUESTED.replace("at least ", ""), {"context": 8192, "prompt_tokens": 8129, "completion_tokens": 64}),
])
def test_classify_vllm_engine_and_renderer_overflows(text, numbers):
    lim = SL.classify(400, text)
    assert lim is not None and lim.kind == "context_overflow", lim
    for k, v in numbers.items():
        assert getattr(lim, k) == v, (k, lim)


def _vllm_v1_engine(tree, max_images_that_fit: int):
    """A vLLM V1 server whose serving layer lets the request through and whose engine refuses it once the
    images are counted: the decoder-prompt text, as a 400 BadRequestError."""
    def act(body):
        n = count_images(body)
        if n > max_images_that_fit:
            msg = VLLM_DECODER.replace("90000", str(400 * n)).replace("80000", str(400 * max_images_that_fit))
            return {"status": 400, "body": {"error": {"message": msg, "type": "BadRequestError", "param": None,
                                                      "code": 400}}}
        return {"content": oracle_reply(tree, LONG)}
    return act


def test_a_vllm_engine_overflow_is_a_context_overflow_not_a_harness_error(tree, cache, server, tmp_path):
    server.default = _vllm_v1_engine(tree, 100)
    out = tmp_path / "o"
    assert run_long(tree, cache, server, out)[0] == 0
    r = rec(out)
    assert n_images(server) == [256] and r["stop_reason"] == "context_overflow"
    assert r["attempts"][0]["error"] == "context_overflow"


def test_a_vllm_engine_overflow_degrades_when_told(tree, cache, server, tmp_path):
    server.default = _vllm_v1_engine(tree, 100)
    out = tmp_path / "o"
    rc, t = run_long(tree, cache, server, out, "--on-overflow", "degrade", "--max-tokens", "1000")
    assert rc == 0
    r = rec(out)
    counts = n_images(server)
    assert counts[0] == 256 and counts[-1] <= 100 and r["answer_state"] == "answered"
    assert r["frames_used"] == counts[-1] and all(d["kind"] == "max_frames" for d in r["degradations"])
    assert verify_cell(out / "chess" / LONG, t) == (True, "ok")
