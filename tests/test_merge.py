import pytest
import torch

from kit.merge import atomic_dir, base_16bit_name, merge_on_cpu


def test_atomic_dir_leaves_nothing_on_failure(tmp_path):
    final = tmp_path / "merged"
    with pytest.raises(RuntimeError):
        with atomic_dir(final) as tmp:
            (tmp / "model.safetensors").write_text("half")
            raise RuntimeError("disk full")
    assert list(tmp_path.iterdir()) == []


def test_atomic_dir_renames_on_success(tmp_path):
    final = tmp_path / "merged"
    with atomic_dir(final) as tmp:
        (tmp / "a").write_text("x")
    assert [p.name for p in tmp_path.iterdir()] == ["merged"]
    assert (final / "a").read_text() == "x"


@pytest.mark.parametrize(
    "name, base",
    [
        ("unsloth/Qwen2.5-1.5B-Instruct-bnb-4bit", "unsloth/Qwen2.5-1.5B-Instruct"),
        ("unsloth/Llama-3.2-1B-Instruct-unsloth-bnb-4bit", "unsloth/Llama-3.2-1B-Instruct"),
        ("Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct"),
    ],
)
def test_base_16bit_name(name, base):
    assert base_16bit_name(name) == base


def test_cpu_merge_matches_adapter_outputs(tiny_model, tmp_path):
    """The merged model computes what base + adapter computed (a non-zero adapter, so merging matters)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"]))
    for name, param in peft_model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(param, std=0.5)
    adapter = tmp_path / "adapter"
    peft_model.save_pretrained(adapter)
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(adapter)
    ids = torch.tensor([[5, 60, 61, 62, 63, 64, 65]])
    with torch.no_grad():
        expected = peft_model(ids).logits
        plain = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)(ids).logits

    merge_on_cpu(adapter, str(tiny_model), tmp_path / "merged", "float32")
    merged = AutoModelForCausalLM.from_pretrained(tmp_path / "merged", dtype=torch.float32)
    with torch.no_grad():
        got = merged(ids).logits
    assert (expected - plain).abs().max() > 1e-2, "adapter too small to tell merged from base"
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    assert (tmp_path / "merged" / "tokenizer_config.json").exists()
