"""A held-out check leaves training as it found it (kit.train.training_state.training_state_kept): every module's
mode and gradient-checkpointing flag, the config's use_cache, the padding side, and a sleeping vLLM engine asleep.

On a GPU, Unsloth's generate calls for_inference (checkpointing off, eval mode, the KV cache on, left padding,
`_flag_for_generation`) and calls for_training after only if the model was training; the kit generates in eval mode,
so nothing is put back until the next rollout, and steps on buffered rollouts train in between. Unsloth's CPU
backend generates without any of that, so the quick test gives the tiny model the GPU's generate as far as the
model's state goes (`gpu_generate`); the slow one runs Unsloth's own GPU code (unsloth/models/llama.py) on this CPU,
in a process of its own, as importing it patches TRL for the whole process.
"""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from datasets import Dataset

from tests.conftest import REPO


def tiny_run():
    """The tiny model through the kit's loader (LoRA, Unsloth's gradient checkpointing), 2 held-out rows, 4 tokens."""
    from kit.models import loader
    from kit.recipes import load_recipe

    recipe = load_recipe("gsm8k")
    cfg = recipe.config({}, {"profile": "smoke", "eval": {"max_new_tokens": 4, "during_n": 2}}, gpu=False)
    assert cfg.model.gradient_checkpointing == "unsloth", "the smoke profile's checkpointing changed"
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": f"What is {i} plus 2?"}], "answer": str(i + 2)}
                              for i in range(2)])
    return cfg, recipe, model, tokenizer, rows


def state(model, tokenizer) -> dict:
    """What the next training step runs with: per module, (mode, checkpointing flag, generation flag, a decoding KV
    buffer kept); the config's use_cache; the padding side."""
    modules = {name or "(wrapper)": [m.training, getattr(m, "gradient_checkpointing", None),
                                     hasattr(m, "_flag_for_generation"), hasattr(m, "paged_attention")]
               for name, m in model.named_modules()}
    return {"modules": modules, "use_cache": model.config.use_cache, "padding_side": tokenizer.padding_side}


def held_out_check(cfg, recipe, model, tokenizer, rows, metrics) -> None:
    """One check of the curve at the end of a training step (eval.every_steps=1)."""
    from transformers import TrainerControl, TrainerState

    from kit.train.evaluation import HeldOutCurve, HeldOutEvaluations

    curve = HeldOutCurve(HeldOutEvaluations(cfg, recipe, model, tokenizer, rows, out=None), "grpo", 1, metrics)
    trainer_state, control = TrainerState(global_step=1, max_steps=10), TrainerControl()
    curve.on_step_begin(None, trainer_state, control)
    curve.on_step_end(None, trainer_state, control)


def gpu_generate(causal_lm):
    """The causal LM's generate as Unsloth binds it on a GPU (unsloth_fast_generate), as far as the model's state
    goes: FastLlamaModel.for_inference on the model and each `.model` below it, then the decoding, which keeps a KV
    buffer on each attention module. The kit calls it in eval mode, where Unsloth calls no for_training after."""
    original, calls = causal_lm.generate, []

    def generate(*args, **kwargs):
        calls.append(causal_lm.training)
        for m in [causal_lm, causal_lm.model]:  # the `.model` chain
            m._flag_for_generation = True
        causal_lm._saved_temp_tokenizer.padding_side = "left"  # the kit's tokenizer, which Unsloth's loader keeps
        for module in causal_lm.modules():
            module.training = False
            if hasattr(module, "gradient_checkpointing"):
                module.gradient_checkpointing = False
        causal_lm.config.use_cache = True  # restore_use_cache: the value disable_use_cache found at load
        output = original(*args, **kwargs)
        for layer in causal_lm.model.layers:
            layer.self_attn.paged_attention = torch.empty(8, 2)
        assert not calls[-1], "the kit generates in eval mode"
        return output

    causal_lm.generate = generate
    return calls


def test_a_check_puts_back_what_unsloths_generate_changed(tiny_model, tmp_path):
    from unsloth import FastLanguageModel

    cfg, recipe, model, tokenizer, rows = tiny_run()
    FastLanguageModel.for_training(model)  # as the rollout before the check leaves it
    calls = gpu_generate(model.base_model.model)
    before = state(model, tokenizer)
    assert before["use_cache"] is False and before["padding_side"] == "right"
    assert before["modules"]["base_model.model.model.layers.0"][:2] == [True, True]
    held_out_check(cfg, recipe, model, tokenizer, rows, tmp_path / "metrics.jsonl")
    assert calls, "the check did not generate through Unsloth's generate"
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["eval/n"] == 2
    assert state(model, tokenizer) == before


class Engine:
    """vLLM's LLM as the check sees it: sleep(level), wake_up(), llm_engine.is_sleeping(); its generate wakes it, as
    Unsloth's patch of LLM.generate does under sleep mode (unsloth_zoo/vllm_utils.py)."""

    def __init__(self, asleep: bool):
        self.asleep, self.calls = asleep, []
        self.llm_engine = SimpleNamespace(is_sleeping=lambda: self.asleep)

    def sleep(self, level: int = 1):
        self.asleep = True
        self.calls.append(f"sleep({level})")

    def wake_up(self, tags=None):
        self.asleep = False
        self.calls.append("wake_up")

    def generate(self):
        if self.asleep:
            self.wake_up()


@pytest.mark.parametrize("asleep", [True, False], ids=["standby", "awake"])
def test_vllm_sleeps_again_after_a_check_only_if_it_slept_before(asleep):
    from kit.plan.device_memory import engine_asleep
    from kit.train.training_state import training_state_kept

    model, engine = torch.nn.Linear(2, 2), Engine(asleep)
    model.vllm_engine = engine
    with training_state_kept(model, SimpleNamespace(padding_side="right")):
        engine.generate()
        assert not engine_asleep(engine)
    assert engine.asleep is asleep
    assert engine.calls == (["wake_up", "sleep(1)"] if asleep else [])


def unsloths_own_gpu_generate() -> None:
    """Run by the slow test in a fresh process: the tiny model with Unsloth's GPU generate and for_training (as
    FastLlamaModel binds and calls them), one check through the kit, then one generation without the kit's keeping.
    Prints the state before, after the check and after the bare generation."""
    import types

    cfg, recipe, model, tokenizer, rows = tiny_run()  # the kit's loader: Unsloth imported first
    from unsloth.models.llama import FastLlamaModel, unsloth_fast_generate

    from kit.models.generate import Sampling, generate

    causal_lm = model.base_model.model
    causal_lm._old_generate = causal_lm.generate
    causal_lm.generate = types.MethodType(unsloth_fast_generate, causal_lm)
    FastLlamaModel.for_training(model)  # each GRPO rollout does
    before = state(model, tokenizer)
    held_out_check(cfg, recipe, model, tokenizer, rows, "metrics.jsonl")
    kept = state(model, tokenizer)
    generate(model, tokenizer, list(rows["prompt"]), Sampling(max_new_tokens=2), progress=False)
    print("RESULT " + json.dumps({"before": before, "kept": kept, "bare": state(model, tokenizer)}))


@pytest.mark.slow  # Unsloth's GPU modules take half a minute to import on this CPU
@pytest.mark.gpu_route
def test_a_check_puts_back_what_unsloths_own_gpu_generate_changed(tiny_model, tmp_path):
    code = "from tests.train.test_training_state import unsloths_own_gpu_generate as run; run()"
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                            capture_output=True, text=True, timeout=600)  # Unsloth writes its compiled cache in cwd
    lines = [line.removeprefix("RESULT ") for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert result.returncode == 0 and lines, result.stdout[-3000:] + result.stderr[-3000:]
    seen = json.loads(lines[-1])
    before, bare = seen["before"], seen["bare"]
    assert seen["kept"] == before
    # what a check leaves without the keeping, so the generate here is Unsloth's GPU one: checkpointing off, the
    # generation flag on (use_cache stays off: with LoRA, for_inference on the causal LM finds no record of it)
    layer, causal_lm = before["modules"]["base_model.model.model.layers.0"], before["modules"]["base_model.model"]
    assert layer[1] is True and bare["modules"]["base_model.model.model.layers.0"][1] is False
    assert causal_lm[2] is False and bare["modules"]["base_model.model"][2] is True
    assert (before["padding_side"], bare["padding_side"]) == ("right", "left")
