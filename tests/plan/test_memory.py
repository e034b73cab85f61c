import pytest

from kit.plan.gpus import GIB
from kit.plan.memory import estimate_memory, kv_cache_bytes_per_token, lora_params
from kit.plan.shapes import read_shape
from tests.plan.conftest import MODEL_CONFIGS, config

LLAMA = "Llama-3.1-8B-Instruct"


def llama_shape():
    return read_shape(str(MODEL_CONFIGS / LLAMA))


def test_lora_parameter_count_matches_peft(tiny_model):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    targets = ["q_proj", "v_proj", "down_proj"]
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model),
                           LoraConfig(r=8, target_modules=targets))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert lora_params(read_shape(str(tiny_model)), 8, targets) == trainable


def test_lora_count_matches_the_notebook_logs():
    # Unsloth's notebooks print their trainable parameter counts: 83,886,080 (Llama 3.1 8B, r=32)
    assert lora_params(llama_shape(), 32, config(LLAMA).model.target_modules) == 83_886_080


def test_kv_cache_and_logits_follow_the_published_arithmetic():
    # unsloth.ai/blog/grpo: K and V, 32 layers, 1024 wide, 20K tokens, 16-bit = 2.5 GB; 8 x 20K logits x2 = 78.3 GB
    assert 20480 * kv_cache_bytes_per_token(llama_shape()) / GIB == pytest.approx(2.5, abs=0.01)
    cfg = config(LLAMA, grpo={"per_device_train_batch_size": 8, "num_generations": 8, "max_completion_length": 20480},
                 model={"max_seq_length": 20736})
    assert estimate_memory(cfg, llama_shape(), "trl").term("loss logits").gib == pytest.approx(78.3, abs=0.1)
    assert estimate_memory(cfg, llama_shape(), "unsloth").term("loss logits").gib == pytest.approx(78.3 / 8, abs=0.1)


def test_each_memory_saving_setting_saves_memory():
    shape = llama_shape()
    peak = lambda **sections: estimate_memory(config(LLAMA, **sections), shape).peak_gib  # noqa: E731
    assert peak(model={"load_in_4bit": True}) < peak(model={"load_in_4bit": False})
    assert peak(grpo={"optim": "adamw_8bit"}) < peak(grpo={"optim": "adamw_torch"})
    modes = [peak(model={"gradient_checkpointing": m}) for m in ("unsloth", "true", "false")]
    assert modes == sorted(modes) and len(set(modes)) == 3, f"offloaded < on GPU < none, got {modes}"
    assert peak(model={"lora_rank": 8}) < peak(model={"lora_rank": 64})


def test_longer_and_wider_batches_need_more():
    shape = llama_shape()
    peak = lambda **grpo: estimate_memory(config(LLAMA, grpo=grpo), shape).peak_gib  # noqa: E731
    assert peak(max_completion_length=256) < peak(max_completion_length=768)
    assert peak(per_device_train_batch_size=8) < peak(per_device_train_batch_size=16)


def test_without_vllm_generation_and_training_do_not_add_up():
    cfg = config(LLAMA, model={"fast_inference": False})
    estimate = estimate_memory(cfg, llama_shape())
    assert estimate.total("generation") > 0 and estimate.total("training") > 0
    assert estimate.peak_gib == pytest.approx(estimate.total("static") + max(estimate.total("generation"),
                                                                             estimate.total("training")))
    assert not any(t.name.startswith("vLLM") for t in estimate.terms)


def test_full_finetuning_counts_every_parameter():
    cfg = config(LLAMA, model={"full_finetuning": True, "load_in_4bit": False, "fast_inference": False})
    estimate = estimate_memory(cfg, llama_shape())
    assert estimate.term("weights").gib == pytest.approx(8.03e9 * 2 / GIB, rel=0.01)
    assert estimate.term("trainable state").gib > estimate.term("weights").gib
