import pytest
import torch
from transformers import AutoModelForCausalLM

from kit import env
from kit.models import generate as gen
from kit.models import inference

PROMPTS = [[{"role": "user", "content": f"What is {i} plus {2 * i}?"}] for i in range(6)]


@pytest.fixture(scope="module")
def model(tiny_model):
    return AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)


def test_batched_greedy_equals_one_at_a_time(model, tiny_tokenizer):
    sampling = gen.Sampling(max_new_tokens=12)
    batched = gen.generate(model, tiny_tokenizer, PROMPTS, sampling, batch_size=6)
    single = gen.generate(model, tiny_tokenizer, PROMPTS, sampling, batch_size=1)
    assert batched == single and all(batched)


def test_padding_side_is_restored(model, tiny_tokenizer):
    tiny_tokenizer.padding_side = "right"
    gen.generate(model, tiny_tokenizer, PROMPTS[:2], gen.Sampling(max_new_tokens=4))
    assert tiny_tokenizer.padding_side == "right"


def test_sampling_honours_seed_and_temperature(model, tiny_tokenizer):
    hot = gen.Sampling(max_new_tokens=12, temperature=1.5, seed=1)
    first = gen.generate(model, tiny_tokenizer, PROMPTS, hot)
    assert gen.generate(model, tiny_tokenizer, PROMPTS, hot) == first
    greedy = gen.generate(model, tiny_tokenizer, PROMPTS, gen.Sampling(max_new_tokens=12))
    assert first != greedy


def test_exact_lengths_with_min_new_tokens(model, tiny_tokenizer):
    sampling = gen.Sampling(max_new_tokens=10, min_new_tokens=10)
    texts = gen.generate(model, tiny_tokenizer, PROMPTS[:2], sampling)
    assert all(len(tiny_tokenizer(t, add_special_tokens=False).input_ids) >= 8 for t in texts)


class FakeVLLMModel:
    vllm_engine = object()

    def fast_generate(self, *args, **kwargs):
        raise AssertionError("not called directly in this test")


@pytest.mark.parametrize("gpu, vllm, model, expected", [
    (True, True, FakeVLLMModel(), True),
    (False, True, FakeVLLMModel(), False),  # no GPU
    (True, False, FakeVLLMModel(), False),  # no vLLM installed
    (True, True, object(), False),  # a model loaded without fast_inference
])
def test_vllm_path_only_where_it_can_run(monkeypatch, gpu, vllm, model, expected):
    monkeypatch.setattr(env, "has_gpu", lambda: gpu)
    monkeypatch.setattr(env, "has_vllm", lambda: vllm)
    assert gen.uses_vllm(model) is expected
    calls = []
    monkeypatch.setattr(gen, "generate_vllm", lambda *a, **k: calls.append("vllm") or ["v"])
    monkeypatch.setattr(gen, "generate_hf", lambda *a, **k: calls.append("hf") or ["h"])
    gen.generate(model, None, PROMPTS[:1], gen.Sampling())
    assert calls == (["vllm"] if expected else ["hf"])


def test_gpu_without_vllm_announces_the_fallback(monkeypatch, capsys, tiny_model):
    monkeypatch.setattr(env, "has_gpu", lambda: True)
    monkeypatch.setattr(env, "has_vllm", lambda: False)
    monkeypatch.setattr(inference, "_load_transformers", lambda path, adapter: "loaded")
    assert inference.load_for_inference(str(tiny_model)) == "loaded"
    assert "generating with transformers on the GPU (vLLM is not installed; slower)" in capsys.readouterr().out
