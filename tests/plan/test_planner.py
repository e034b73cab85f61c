import re

import pytest

from kit.plan.planner import FITS, NO_FIT, describe, fits, make_plan, with_settings
from kit.plan.shapes import read_shape
from tests.plan.conftest import config

QWEN, LLAMA = "Qwen2.5-1.5B-Instruct", "Llama-3.1-8B-Instruct"


def plan(model_dir, gpu="T4", gib=14.7, **sections):
    cfg = config(model_dir, **sections)
    return make_plan(cfg, read_shape(cfg.model.name), gpu, gib)


def test_the_16gb_config_fits_a_t4_and_a_16_bit_8b_model_does_not():
    assert plan(QWEN, model={"gpu_memory_utilization": 0.5}).verdict == FITS
    big = plan(LLAMA, model={"load_in_4bit": False})
    assert big.verdict == NO_FIT and big.refused


def test_a_vllm_share_too_small_for_the_weights_is_a_problem_with_a_fix():
    p = plan(LLAMA, model={"gpu_memory_utilization": 0.2})
    assert p.refused
    assert any("raise model.gpu_memory_utilization to" in problem for problem in p.problems), p.problems


def test_a_vllm_share_that_starves_training_proposes_a_lower_one():
    p = plan(LLAMA, model={"gpu_memory_utilization": 0.95, "max_seq_length": 2048},
             grpo={"max_completion_length": 1792})
    assert p.refused
    assert any("lower model.gpu_memory_utilization" in problem for problem in p.problems), p.problems


@pytest.mark.parametrize("setting", ["num_generations", "max_completion_length"])
def test_the_largest_proposal_fits_and_the_next_step_up_does_not(setting):
    cfg = config(QWEN)
    shape = read_shape(cfg.model.name)
    p = make_plan(cfg, shape, "T4", 14.7)
    line = next(line for line in p.proposals if line.startswith(setting))
    value = int(line.split("up to ")[1].split()[0])
    grow = (lambda n: with_settings(cfg, num_generations=n, per_device_train_batch_size=n)) \
        if setting == "num_generations" else (lambda n: with_settings(cfg, max_completion_length=n))
    assert fits(grow(value), shape, 14.7, "unsloth")
    bigger = {"num_generations": {8: 12, 12: 16, 16: 24, 24: 32, 32: 48, 48: 64},
              "max_completion_length": {2048: 3072, 3072: 4096, 4096: 6144, 6144: 8192}}[setting]
    if value in bigger:
        assert not fits(grow(bigger[value]), shape, 14.7, "unsloth")


def test_the_batch_proposal_keeps_completions_per_step_divisible():
    p = plan(LLAMA, model={"max_seq_length": 4352}, grpo={"max_completion_length": 4096},
             data={"max_prompt_length": 256})
    line = next(line for line in p.proposals if line.startswith("per_device_train_batch_size"))
    batch, accumulation = int(line.split("up to ")[1].split()[0]), int(line.split("steps ")[1].split()[0])
    assert (batch * accumulation) % 8 == 0, line


def test_the_description_names_every_term_and_the_verdict():
    p = plan(QWEN)
    text = describe(p)
    for term in p.estimate.terms:
        assert term.name in text
    assert f"verdict: {p.verdict}" in text and "largest that fits" in text


POPULAR = ["Llama-3.1-8B-Instruct", "Qwen3-4B", "Phi-4-mini-instruct", "gemma-3-4b-it"]


@pytest.mark.parametrize("model", POPULAR)
def test_popular_models_in_4bit_fit_a_t4_with_the_default_recipe(model):
    p = plan(model)  # gsm8k's full profile: 4-bit, LoRA r=16, vLLM
    assert p.verdict == FITS, describe(p)


def test_a_16_bit_model_that_does_not_fit_is_told_that_4_bit_does():
    p = plan(LLAMA, model={"load_in_4bit": False})
    assert p.refused
    assert p.proposals[0].startswith("load_in_4bit: true fits"), p.proposals
    assert any("model.load_in_4bit=true" in problem for problem in p.problems), p.problems
    assert not any(line.startswith("load_in_4bit") for line in plan(LLAMA).proposals)  # already 4-bit


@pytest.mark.parametrize("model", POPULAR + [QWEN])
@pytest.mark.parametrize("gpu, gib", [("T4", 14.7), ("L4", 22.0), ("A100-80GB", 79.2), ("8GB", 7.45)])
@pytest.mark.parametrize("util", [0.1, 0.3, 0.6, 0.9])
def test_no_advice_sets_gpu_memory_utilization_outside_its_range(model, gpu, gib, util):
    p = plan(model, gpu=gpu, gib=gib, model={"gpu_memory_utilization": util, "load_in_4bit": False})
    text = describe(p)
    advised = [float(v) for v in re.findall(r"gpu_memory_utilization(?: to| ) ?([0-9.]+)", text)]
    assert all(0 < v <= 0.95 for v in advised), text


def test_a_gpu_too_old_for_vllm_is_told_to_generate_without_it():
    p = plan(QWEN, gpu="P100", gib=15.9)
    assert p.refused and any("compute capability 7.0" in problem and "model.fast_inference=false" in problem
                             for problem in p.problems), p.problems
    assert plan(QWEN, gpu="P100", gib=15.9, model={"fast_inference": False}).verdict == FITS
    assert not plan(QWEN, gpu="Tesla T4", gib=14.7).problems  # the name CUDA reports


def test_what_the_plan_leaves_out_is_said():
    text = describe(plan("gemma-3-4b-it"))
    assert "not counted: vision tower (siglip_vision_model" in text
