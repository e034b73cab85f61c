"""The GPU vision route as far as a CPU can take it: what Unsloth's vLLM path would refuse is said before loading,
and the calls the kit makes to FastVisionModel bind to Unsloth's own signatures (unsloth 2026.10.9)."""

import inspect
import json

import pytest

from kit import env
from kit.config import ModelConfig
from kit.errors import KitError
from kit.models import vision_loader
from kit.models.tiny_vision import tiny_vision_path


def config_folder(tmp_path, model_type: str):
    config = json.loads((tiny_vision_path() / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": model_type}))
    return str(tmp_path)


def test_what_unsloths_vllm_path_refuses_is_said_first(tmp_path):
    tiny = ModelConfig(name="kit:tiny-vision", fast_inference=True)
    assert vision_loader.vllm_refusal(tiny) is None  # idefics3 is among Unsloth's VLLM_SUPPORTED_VLM
    llava = vision_loader.vllm_refusal(ModelConfig(name=config_folder(tmp_path, "llava"), fast_inference=True))
    assert "serves these vision-language models only: qwen2_5_vl, gemma3" in llava and "is llava" in llava
    assert "model.fast_inference=false" in llava
    full = vision_loader.vllm_refusal(tiny.model_copy(update={"full_finetuning": True}))
    assert full.startswith("model.full_finetuning=true with model.fast_inference=true")
    tower = vision_loader.vllm_refusal(tiny.model_copy(update={"finetune_vision_layers": True}))
    assert tower.startswith("model.finetune_vision_layers=true with model.fast_inference=true")


class Recorder:
    """FastVisionModel's two calls, recorded and bound to Unsloth's real signatures instead of run."""

    def __init__(self):
        from unsloth import FastVisionModel

        self.real, self.calls = FastVisionModel, {}

    def from_pretrained(self, **kwargs):
        inspect.signature(self.real.from_pretrained).bind(**kwargs)  # raises on a name Unsloth does not take
        self.calls["from_pretrained"] = kwargs
        return "model", "processor"

    def get_peft_model(self, model, **kwargs):
        inspect.signature(self.real.get_peft_model).bind(model, **kwargs)
        self.calls["get_peft_model"] = kwargs
        return "peft model"


@pytest.mark.parametrize("fast", [True, False])
def test_the_gpu_route_calls_bind_to_unsloths_signatures(monkeypatch, fast):
    import unsloth

    recorder = Recorder()
    monkeypatch.setattr(unsloth, "FastVisionModel", recorder)
    monkeypatch.setattr(env, "has_gpu", lambda: True)
    monkeypatch.setattr(env, "vllm_usable", lambda: fast)
    cfg = ModelConfig(name="kit:tiny-vision", fast_inference=True, target_modules=["q_proj", "v_proj"])
    assert vision_loader.load_vision_model(cfg, seed=5) == ("peft model", "processor")
    loaded, peft = recorder.calls["from_pretrained"], recorder.calls["get_peft_model"]
    assert loaded["fast_inference"] is fast and ("gpu_memory_utilization" in loaded) is fast
    assert peft["target_modules"] == ["q_proj", "v_proj"] and peft["finetune_vision_layers"] is False


def test_a_vllm_engine_that_fails_to_load_is_one_line(monkeypatch):
    import unsloth

    recorder = Recorder()

    def fails(**kwargs):
        raise RuntimeError("CUDA error: no kernel image is available")

    recorder.from_pretrained = fails
    monkeypatch.setattr(unsloth, "FastVisionModel", recorder)
    monkeypatch.setattr(env, "has_gpu", lambda: True)
    monkeypatch.setattr(env, "vllm_usable", lambda: True)
    monkeypatch.setattr(env, "gpu_name", lambda: "Tesla T4")
    with pytest.raises(KitError, match=r"vLLM's engine failed to load on this GPU \(Tesla T4\): RuntimeError: CUDA"):
        vision_loader.load_vision_model(ModelConfig(name="kit:tiny-vision", fast_inference=True))
