"""Export tiny models of two architectures for real: convert, quantize, verify in llama.cpp."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from kit.errors import KitError
from tests.conftest import REPO
from tests.e2e.cli import HANG_GUARD_S

pytestmark = pytest.mark.slow


def kit_export(*args):
    return subprocess.run([sys.executable, "-m", "kit", "export", *map(str, args)], cwd=REPO, env=dict(os.environ),
                          capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)


def run_folder(tmp_path, architecture):
    """A copy of a tiny model laid out as a training run leaves it: RUN/merged."""
    from kit.models.tiny import tiny_model_path

    merged = tmp_path / "myrun" / "merged"
    shutil.copytree(tiny_model_path(architecture), merged)
    return merged


def test_export_converts_quantizes_and_verifies(tmp_path):
    merged = run_folder(tmp_path, "llama")
    result = kit_export(merged, "--quant", "q8_0", "Q4_K_M", "f16")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    gguf = merged.parent / "gguf"
    names = sorted(p.name for p in gguf.iterdir())
    assert names == ["Modelfile", "myrun.F16.gguf", "myrun.Q4_K_M.gguf", "myrun.Q8_0.gguf", "verification.json"]
    report = {r["quant"]: r for r in json.loads((gguf / "verification.json").read_text())}
    for quant in ("q8_0", "f16"):
        checks = {c["name"]: c for c in report[quant]["checks"]}
        assert report[quant]["ok"] and all(checks[n]["passed"] for n in ("tokenizer", "template", "eos", "greedy"))
        assert checks["greedy"]["required"]
    assert not {c["name"]: c for c in report["q4_k_m"]["checks"]}["greedy"]["required"]  # reported, not required
    assert "PASS" in result.stdout and "FROM ./myrun.Q8_0.gguf" in (gguf / "Modelfile").read_text()


def test_qwen2_weights_verify_and_a_tokenizer_mismatch_is_caught(tmp_path):
    """A second architecture (GGUF arch qwen2: biased q/k/v). Its weights path must match token for token.

    transformers 5 loads any qwen2 model's tokenizer as Qwen2Tokenizer (byte-level BPE), whatever
    tokenizer_config.json names, so the tiny model's SentencePiece tokenizer is read differently by
    transformers and by llama.cpp: a real mismatch that the tokenizer check must report.
    """
    merged = run_folder(tmp_path, "qwen2")
    result = kit_export(merged, "--quant", "q8_0", "f16")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    for report in json.loads((merged.parent / "gguf" / "verification.json").read_text()):
        checks = {c["name"]: c for c in report["checks"]}
        assert checks["greedy"]["passed"] and checks["template"]["passed"] and checks["eos"]["passed"]
        assert not checks["tokenizer"]["passed"] and not report["ok"]
    assert "a required check failed" in result.stderr


def test_unrecognized_bpe_tokenizer_fails_clearly_and_leaves_nothing(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.train_from_iterator(["a fresh tokenizer llama.cpp has never seen"] * 50,
                                trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>")
    merged = tmp_path / "bperun" / "merged"
    tokenizer.save_pretrained(merged)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2)
    Qwen2ForCausalLM(config).save_pretrained(merged)
    result = kit_export(merged, "--quant", "q8_0", "q4_k_m")
    assert result.returncode == 2
    assert "does not recognize the BPE pre-tokenizer" in result.stderr and "Traceback" not in result.stderr
    gguf = merged.parent / "gguf"
    assert not gguf.exists() or list(gguf.iterdir()) == [], "a failed export left files behind"


def test_unsupported_architecture_fails_clearly(tmp_path):
    merged = run_folder(tmp_path, "llama")
    config = json.loads((merged / "config.json").read_text())
    config["architectures"] = ["TinyFooForCausalLM"]
    (merged / "config.json").write_text(json.dumps(config))
    result = kit_export(merged, "--quant", "q8_0")
    assert result.returncode == 2
    assert "does not support the architecture TinyFooForCausalLM" in result.stderr
    assert list((merged.parent / "gguf").iterdir()) == []


def test_unknown_quant_is_refused_before_any_work(tmp_path):
    merged = run_folder(tmp_path, "llama")
    result = kit_export(merged, "--quant", "q4_k_x")
    assert result.returncode == 2 and "unknown quantization 'q4_k_x'" in result.stderr
    assert not (merged.parent / "gguf").exists()


def test_verification_catches_a_wrong_template_and_eos(tmp_path):
    """A GGUF whose metadata disagrees with the model must fail the required checks."""
    from kit.export.gguf.convert import convert
    from kit.export.gguf.reference import Reference
    from kit.export.gguf.verify import verify

    merged = run_folder(tmp_path, "llama")
    gguf = tmp_path / "m.q8_0.gguf"
    convert(merged, "q8_0", gguf)
    (merged / "chat_template.jinja").write_text("{% for m in messages %}{{ m['content'] }}\n{% endfor %}")
    config = json.loads((merged / "tokenizer_config.json").read_text())
    config["eos_token"] = "<pad>"  # the model now claims a different end-of-turn token
    (merged / "tokenizer_config.json").write_text(json.dumps(config))
    generation = json.loads((merged / "generation_config.json").read_text())
    generation["eos_token_id"] = 3
    (merged / "generation_config.json").write_text(json.dumps(generation))
    result = verify(gguf, "q8_0", Reference(merged))
    failed = {c.name for c in result.checks if not c.passed}
    assert {"template", "eos"} <= failed and not result.ok


def test_export_api_rejects_a_folder_without_a_model(tmp_path):
    from kit.export.gguf.export import export_gguf

    with pytest.raises(KitError, match="not a model folder"):
        export_gguf(tmp_path, ["q8_0"])


def test_greedy_tolerates_near_ties_only():
    import numpy as np

    from kit.export.gguf.verify import NEAR_TIE, divergence_margin, near_tie_for

    logits = np.zeros((3, 5), dtype=np.float32)
    logits[:, 1] = 10.0  # the reference is sure of token 1 at every step...
    logits[2, 2] = 10.0 - 10.0 * NEAR_TIE / 2  # ...except at step 2, where token 2 nearly ties with it
    assert divergence_margin([1, 1, 1], [1, 1, 1], logits) is None
    assert divergence_margin([1, 1, 2], [1, 1, 1], logits) <= NEAR_TIE  # rounding may flip a near-tie
    assert divergence_margin([1, 3, 1], [1, 1, 1], logits) == pytest.approx(1.0)  # a broken file flips a sure one
    assert near_tie_for("f16") == NEAR_TIE < near_tie_for("q8_0") < 0.1  # 8-bit rounding moves logits further


def test_verification_fails_a_gguf_of_different_weights(tmp_path):
    """The greedy check compares with the reference where it is sure: other weights must fail it."""
    import torch
    from safetensors.torch import load_file, save_file

    from kit.export.gguf.convert import convert
    from kit.export.gguf.reference import Reference
    from kit.export.gguf.verify import verify

    merged = run_folder(tmp_path, "llama")
    gguf = tmp_path / "m.q8_0.gguf"
    convert(merged, "q8_0", gguf)
    weights = load_file(merged / "model.safetensors")
    generator = torch.Generator().manual_seed(0)
    save_file({k: v + 0.5 * v.float().std() * torch.randn(v.shape, generator=generator).to(v.dtype) if v.dim() == 2
               else v for k, v in weights.items()}, merged / "model.safetensors", metadata={"format": "pt"})
    checks = {c.name: c for c in verify(gguf, "q8_0", Reference(merged)).checks}
    assert not checks["greedy"].passed and "where the reference is sure" in checks["greedy"].detail
