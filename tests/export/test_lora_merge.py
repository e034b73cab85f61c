import json
import shutil

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from kit.errors import KitError
from kit.export.lora_merge import merge_lora_shards

IDS = torch.tensor([[5, 60, 61, 62, 63, 64, 65]])


def make_adapter(base_dir, out, **lora):
    """A LoRA adapter with large random B, so that merged and base outputs clearly differ."""
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    settings = {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj", "down_proj"], **lora}
    model = get_peft_model(base, LoraConfig(**settings))
    for name, param in model.named_parameters():
        if "lora_B" in name or "lora_magnitude" in name:
            torch.nn.init.normal_(param, std=0.5)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base_dir).save_pretrained(out)
    with torch.no_grad():
        return model(IDS).logits


def logits_of(path):
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    with torch.no_grad():
        return model(IDS).logits


@pytest.fixture(scope="module")
def sharded_base(tiny_model, tmp_path_factory):
    """The tiny model saved in many small shards, as big models are."""
    path = tmp_path_factory.mktemp("sharded")
    AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).save_pretrained(path, max_shard_size="40KB")
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(path)
    shutil.copy2(tiny_model / "tokenizer.model", path / "tokenizer.model")
    return path


@pytest.mark.parametrize("rslora", [False, True])
def test_shard_merge_matches_peft_adapter(tiny_model, tmp_path, rslora):
    expected = make_adapter(tiny_model, tmp_path / "adapter", use_rslora=rslora)
    merge_lora_shards(tmp_path / "adapter", tiny_model, tmp_path / "merged", "float32")
    assert (expected - logits_of(tiny_model)).abs().max() > 1e-2, "adapter too small to tell merged from base"
    torch.testing.assert_close(logits_of(tmp_path / "merged"), expected, rtol=1e-4, atol=1e-4)


def test_shard_merge_keeps_shard_layout(sharded_base, tmp_path):
    expected = make_adapter(sharded_base, tmp_path / "adapter")
    merge_lora_shards(tmp_path / "adapter", sharded_base, tmp_path / "merged", "float32")
    shards = sorted(p.name for p in (tmp_path / "merged").glob("*.safetensors"))
    assert len(shards) > 3 and shards == sorted(p.name for p in sharded_base.glob("*.safetensors"))
    torch.testing.assert_close(logits_of(tmp_path / "merged"), expected, rtol=1e-4, atol=1e-4)
    config = json.loads((tmp_path / "merged" / "config.json").read_text())
    assert config["dtype"] == "float32" and "quantization_config" not in config
    assert (tmp_path / "merged" / "tokenizer.model").exists()  # the SentencePiece file travels for GGUF


def test_merged_weights_are_written_in_the_asked_dtype(tiny_model, tmp_path):
    make_adapter(tiny_model, tmp_path / "adapter")
    merge_lora_shards(tmp_path / "adapter", tiny_model, tmp_path / "merged", "bfloat16")
    assert AutoModelForCausalLM.from_pretrained(tmp_path / "merged").dtype == torch.bfloat16


def test_dora_falls_back_to_peft_merge(tiny_model, tmp_path, capsys):
    expected = make_adapter(tiny_model, tmp_path / "adapter", use_dora=True)
    merge_lora_shards(tmp_path / "adapter", tiny_model, tmp_path / "merged", "float32")
    assert "DoRA in the adapter: merging in memory with PEFT" in capsys.readouterr().out
    torch.testing.assert_close(logits_of(tmp_path / "merged"), expected, rtol=1e-4, atol=1e-4)


def test_adapter_for_another_model_is_refused(tiny_model, tmp_path):
    make_adapter(tiny_model, tmp_path / "adapter")
    other = tmp_path / "other"
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    model.config.num_hidden_layers = 1
    AutoModelForCausalLM.from_config(model.config).save_pretrained(other)
    with pytest.raises(KitError, match="modules the base lacks .*different base model"):
        merge_lora_shards(tmp_path / "adapter", other, tmp_path / "merged", "float32")


def test_quantized_base_is_refused(tiny_model, tmp_path):
    make_adapter(tiny_model, tmp_path / "adapter")
    base = tmp_path / "base4bit"
    shutil.copytree(tiny_model, base)
    config = json.loads((base / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True}
    (base / "config.json").write_text(json.dumps(config))
    with pytest.raises(KitError, match="stored quantized; merging needs its 16-bit weights"):
        merge_lora_shards(tmp_path / "adapter", base, tmp_path / "merged", "bfloat16")
    assert not (tmp_path / "merged").exists()
