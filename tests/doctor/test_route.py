"""kit.doctor.route: the evaluation after the default route's training draws the base twice and the live adapter
once through vLLM, and compares the draws."""

import sys
from types import SimpleNamespace

import pytest

from kit import env
from kit.doctor.processes import PASS
from kit.doctor.route import base_generations, sampled_generations
from kit.doctor.workers import adapter_verdict


class PrefixCachingLLM:
    """vLLM's engine as the doctor's draws meet it on a GPU: a prompt already in its prefix cache is read back
    instead of computed, by kernels that round differently, and a random model's near-uniform logits then sample
    other tokens. Here they always do."""

    def __init__(self):
        self.cached: set = set()

    def generate(self, prompts, sampling_params=None, lora_request=None):
        outputs = []
        for prompt in prompts:  # text, or {"prompt_token_ids": ids}
            key = (prompt if isinstance(prompt, str) else tuple(prompt["prompt_token_ids"]), lora_request)
            text = f"{'read back' if key in self.cached else 'computed'}, lora {lora_request}"
            self.cached.add(key)
            completion = SimpleNamespace(text=text, token_ids=[ord(c) for c in text])
            outputs.append(SimpleNamespace(outputs=[completion]))
        return outputs

    def reset_prefix_cache(self) -> bool:
        self.cached.clear()
        return True


class FastInferenceModel:
    """What Unsloth's loader returns with fast_inference: its vLLM engine, and fast_generate that engine's generate."""

    def __init__(self):
        self.vllm_engine = PrefixCachingLLM()
        self.fast_generate = self.vllm_engine.generate


class CharacterTokenizer:
    """Enough of a tokenizer for the generation path: the prompt's text, one id per character, and back."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True, tools=None, **kwargs):
        return messages[-1]["content"]

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}

    def batch_decode(self, rows, skip_special_tokens=True):
        return ["".join(map(chr, ids)) for ids in rows]


@pytest.fixture
def on_vllm(monkeypatch):
    monkeypatch.setattr(env, "vllm_usable", lambda: True)  # a GPU with vLLM, as the default route needs
    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(SamplingParams=dict))  # only carries the settings here


def test_the_base_drawn_twice_repeats_though_vllm_cached_its_prompts(on_vllm):
    model, tokenizer = FastInferenceModel(), CharacterTokenizer()
    plain, again = base_generations(model, tokenizer), base_generations(model, tokenizer)
    tuned = sampled_generations(model, tokenizer, lora_request="live adapter")
    verdict = adapter_verdict(tuned, plain, again)
    assert verdict["figures"]["base_repeatable"], (plain, again)
    assert verdict["status"] == PASS, verdict["reason"]
