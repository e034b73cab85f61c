"""The GPU's vLLM paths score the adapter, not the base model: stand-ins record what reaches vLLM.

Unsloth's vLLM engine exists only on a GPU, so these tests replace it with objects that record their calls;
what they check is the kit's wiring (which LoRA request goes where), the part that can be wrong on a CPU
too. The kit's own engine runs for real on the CPU in tests/models/test_vllm_engine.py.
"""

import sys
import tempfile
import types
from pathlib import Path

import pytest
from datasets import Dataset

from kit import env
from kit.config import build_config
from kit.models import generate as gen
from kit.models import (
    inference,
    loader,  # noqa: F401 - imported before vllm is faked: Unsloth and TRL look it up
)
from kit.recipes import load_recipe
from kit.train.evaluation import evaluate_held_out_here

ANSWER = "<reasoning>\n1 + 1\n</reasoning>\n<answer>\n2\n</answer>"


class FakeOutput:
    def __init__(self, token_ids):
        self.outputs = [types.SimpleNamespace(token_ids=token_ids)]  # the kit decodes them itself


class TrainingModelWithVLLM:
    """What Unsloth's get_peft_model returns with fast_inference: a vLLM engine and load_lora; it answers
    every prompt with ANSWER's token ids, in `tokenizer`'s vocabulary."""

    vllm_engine = object()

    def __init__(self, tokenizer=None):
        self.tokenizer, self.requests_built, self.generate_calls = tokenizer, [], []

    def load_lora(self, name, load_tensors=False):
        request = ("live adapter", name, load_tensors, len(self.requests_built))
        self.requests_built.append(request)
        return request

    def fast_generate(self, prompts, sampling_params=None, lora_request=None):
        self.generate_calls.append(lora_request)
        return [FakeOutput(self.tokenizer(ANSWER, add_special_tokens=False).input_ids) for _ in prompts]


@pytest.fixture
def vllm_here(monkeypatch):
    """A GPU and vLLM, as far as the kit can tell; vllm.SamplingParams and LoRARequest record their arguments."""
    monkeypatch.setattr(env, "has_gpu", lambda: True)
    monkeypatch.setattr(env, "has_vllm", lambda: True)
    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = lambda **kwargs: kwargs
    lora = types.ModuleType("vllm.lora")
    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = lambda **kwargs: ("saved adapter", kwargs)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.lora", lora)
    monkeypatch.setitem(sys.modules, "vllm.lora.request", request)


def test_live_adapter_request_is_built_from_the_training_weights(vllm_here):
    model = TrainingModelWithVLLM()
    first, second = gen.live_adapter_request(model), gen.live_adapter_request(model)
    assert first[2] is True, "the request must carry the in-memory tensors (load_tensors=True)"
    folder = Path(first[1])  # Unsloth writes the adapter's config there: never the user's working directory
    assert folder.is_absolute() and folder.is_dir() and folder.parent == Path(tempfile.gettempdir())
    assert first != second, "each evaluation gets a fresh request, so vLLM does not reuse a cached adapter"


def test_no_live_adapter_request_off_the_vllm_path(monkeypatch):
    monkeypatch.setattr(env, "has_gpu", lambda: False)
    model = TrainingModelWithVLLM()
    assert gen.live_adapter_request(model) is None and model.requests_built == []
    monkeypatch.setattr(env, "has_gpu", lambda: True)
    monkeypatch.setattr(env, "has_vllm", lambda: True)
    without_lora = types.SimpleNamespace(vllm_engine=object(), fast_generate=lambda *a, **k: [])  # full fine-tuning
    assert gen.live_adapter_request(without_lora) is None


def test_runner_evaluation_hands_vllm_the_trained_adapter(vllm_here, tiny_tokenizer):
    cfg = build_config([{"grpo": {"max_completion_length": 16}}])
    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": "What is 1 plus 1?"}], "answer": "2"}] * 3)
    model = TrainingModelWithVLLM(tiny_tokenizer)
    result = evaluate_held_out_here(cfg, load_recipe("gsm8k"), model, tiny_tokenizer, rows, "after")
    assert len(model.requests_built) == 1
    assert model.generate_calls == model.requests_built, "vLLM generated without the adapter: it scored the base model"
    assert result.strict_accuracy == 1.0


def test_eval_of_a_saved_adapter_on_vllm_asks_for_it_by_folder(vllm_here, monkeypatch, tmp_path):
    """On a GPU the kit's own engine gets the adapter's 16-bit base, the GPU's dtype, and the adapter by folder.
    (tests/models/test_vllm_engine.py runs the same engine for real on the CPU.)"""
    from kit.models import vllm_engine

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text('{"r": 8, "base_model_name_or_path": "org/Model-bnb-4bit"}')
    loads = []
    sys.modules["vllm"].LLM = lambda model, **kwargs: loads.append((model, kwargs)) or "engine"
    monkeypatch.setattr(vllm_engine, "model_context", lambda path, wanted: wanted)
    monkeypatch.setattr("transformers.AutoTokenizer.from_pretrained", lambda source: types.SimpleNamespace(
        pad_token="<pad>", pad_token_id=0, eos_token="</s>"))
    loaded = inference.load_for_inference(None, str(adapter), backend="vllm")
    model, settings = loads[0]
    assert model == "org/Model", "a '-bnb-4bit' base resolves to its 16-bit repo, as the merge does"
    assert settings["enable_lora"] is True and settings["max_lora_rank"] == 8
    assert "dtype" not in settings and "enforce_eager" not in settings  # the GPU's own choices
    kind, request = loaded.lora_request
    assert kind == "saved adapter" and request["lora_path"] == str(adapter.resolve()) and request["lora_int_id"] >= 1
