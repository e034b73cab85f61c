"""`kit eval --baseline` loads one model at a time: two vLLM engines at 0.9 of a GPU's memory each do not fit.

The baseline that is the adapter's own base is scored by the adapter's engine without its LoRA request; any
other baseline is shut down before the model loads. Stand-ins for vllm.LLM log every load, generation and
shutdown in order; the kit's VllmEngine, evaluate and compare run as they are.
"""

from __future__ import annotations

import gc
import json
import weakref
from types import SimpleNamespace

import pytest
from datasets import Dataset

from kit.eval import command
from kit.models.generate import Sampling
from kit.models.inference import Loaded, is_adapters_base
from kit.models.vllm_engine import VllmEngine
from kit.recipes import load_recipe

ANSWER = "<reasoning>\n1 + 1\n</reasoning>\n<answer>\n2\n</answer>"
ROWS = Dataset.from_list([{"prompt": [{"role": "user", "content": "What is 1 plus 1?"}], "answer": "2"}] * 2)


class LoggingLLM:
    """vllm.LLM as VllmEngine uses it: generate, and the engine's renderer and core to shut down."""

    def __init__(self, name: str, log: list, answer_ids: list[int]):
        self.name, self.log, self.answer_ids = name, log, answer_ids
        self.llm_engine = SimpleNamespace(renderer=SimpleNamespace(shutdown=lambda: None),
                                          engine_core=SimpleNamespace(shutdown=lambda: log.append(("shut down", name))))

    def generate(self, prompts, sampling_params=None, use_tqdm=False, lora_request=None):
        self.log.append(("generate", self.name, lora_request))
        return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=self.answer_ids)]) for _ in prompts]


@pytest.fixture
def log(monkeypatch, tiny_tokenizer) -> list:
    """Every load_for_inference of the command gives a logging vLLM engine (named by what it loads)."""
    events = []
    answer_ids = tiny_tokenizer(ANSWER, add_special_tokens=False).input_ids

    def load_for_inference(model_name, adapter=None, backend="auto", new_tokens=256):
        name = model_name or "the adapter's base"
        events.append(("load", name))
        request = ("lora", adapter) if adapter else None
        engine = VllmEngine(LoggingLLM(name, events, answer_ids), request)
        return Loaded(engine, tiny_tokenizer, lora_request=request, adapter=adapter)

    monkeypatch.setattr(command, "load_for_inference", load_for_inference)
    return events


def adapter_on(tmp_path, base: str) -> str:
    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"r": 8, "base_model_name_or_path": base}))
    return str(folder)


def model_folder(tmp_path, name: str) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return str(folder)


def scored(model, adapter, baseline) -> list[str]:
    results = command.score_models(load_recipe("gsm8k"), ROWS, Sampling(max_new_tokens=16), model, adapter, baseline,
                                   backend="vllm")
    assert all(r.strict_accuracy == 1.0 for r in results), "a column was not scored from the engine's answer"
    return [r.name for r in results]


def test_the_adapters_base_as_baseline_is_scored_by_the_adapters_engine(log, tmp_path):
    adapter = adapter_on(tmp_path, "org/Model-bnb-4bit")
    columns = scored(None, adapter, "org/Model-bnb-4bit")
    loads = [event for event in log if event[0] == "load"]
    assert loads == [("load", "the adapter's base")], f"one engine for both columns, not {loads}"
    assert columns == ["baseline", "trained"]
    assert [event[2] for event in log if event[0] == "generate"] == [None, ("lora", adapter)], \
        "the baseline column is the base without the LoRA request; the trained column has it"


def test_the_adapters_base_is_known_by_any_name_for_it(tmp_path, monkeypatch):
    base = model_folder(tmp_path, "base")
    adapter = adapter_on(tmp_path, base)
    monkeypatch.chdir(tmp_path)
    assert all(is_adapters_base(name, None, adapter) for name in (base, base + "/", "./base", "base"))
    assert is_adapters_base(base, base, adapter)  # --model names the base itself
    hub = tmp_path / "hub"
    hub.mkdir()
    trained_in_4bit = adapter_on(hub, "org/Model-bnb-4bit")  # its evaluation loads the 16-bit org/Model
    assert is_adapters_base("org/Model-bnb-4bit", None, trained_in_4bit)
    assert is_adapters_base("org/Model", None, trained_in_4bit)


def test_another_baseline_is_not_the_adapters_base(tmp_path):
    adapter = adapter_on(tmp_path, model_folder(tmp_path, "base"))
    assert not is_adapters_base(model_folder(tmp_path, "other"), None, adapter)
    assert not is_adapters_base("org/Other", None, adapter)
    assert not is_adapters_base(model_folder(tmp_path, "merged"), None, None)  # no adapter: nothing to share


def test_another_baseline_is_shut_down_before_the_model_loads(log, tmp_path):
    adapter = adapter_on(tmp_path, model_folder(tmp_path, "base"))
    other = model_folder(tmp_path, "other")
    assert scored(None, adapter, other) == ["baseline", "base", "trained"]
    assert ("shut down", other) in log, "the baseline's engine was never shut down"
    assert log.index(("shut down", other)) < log.index(("load", "the adapter's base")), log


def test_a_merged_model_beside_a_baseline_loads_after_the_baseline_is_shut_down(log, tmp_path):
    merged, base = model_folder(tmp_path, "merged"), model_folder(tmp_path, "base")
    assert scored(merged, None, base) == ["baseline", "model"]
    assert [event[:2] for event in log] == [("load", base), ("generate", base), ("shut down", base),
                                            ("load", merged), ("generate", merged)]


def test_closing_a_vllm_engine_shuts_it_down_once(tiny_tokenizer):
    events = []
    loaded = Loaded(VllmEngine(LoggingLLM("m", events, [])), tiny_tokenizer)
    engine = loaded.model
    loaded.close()
    engine.close()
    assert events == [("shut down", "m")] and loaded.model is None and engine.llm is None


def test_closing_a_transformers_model_lets_its_weights_go(tiny_tokenizer):
    class Model:  # a transformers model, as far as Loaded.close can tell
        pass

    model = Model()
    gone = weakref.ref(model)
    loaded = Loaded(model, tiny_tokenizer)
    del model
    loaded.close()
    gc.collect()
    assert gone() is None, "the closed load still holds the model's weights"
