import re

import pytest

from kit.plan.page import describe
from kit.plan.planner import (
    FITS,
    NO_FIT,
    fits,
    make_plan,
    static_beyond_vllm,
    training_beyond_vllm,
    vllm_asleep_gib,
    with_settings,
)
from kit.plan.record import planned
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


@pytest.mark.parametrize("gpu, gib", [("P100", 15.9), ("V100", 15.8), ("Tesla P100-PCIE-16GB", 15.9)])
def test_a_gpu_below_the_stacks_kernels_is_refused_with_or_without_vllm(gpu, gib):
    """No binary of the pinned stack has kernels below sm_75: turning vLLM off does not rescue a P100 or V100."""
    for fast in (True, False):
        p = plan(QWEN, gpu=gpu, gib=gib, model={"fast_inference": fast})
        assert p.refused and any("7.5 (T4) and newer only" in problem and "GPU T4 x2" in problem
                                 for problem in p.problems), p.problems
        assert not any("fast_inference=false" in problem for problem in p.problems), p.problems
    assert not plan(QWEN, gpu="Tesla T4", gib=14.7).problems  # the name CUDA reports


def test_vllm_on_turing_is_said_to_be_unverified_and_on_ampere_not():
    notes = plan(QWEN, model={"gpu_memory_utilization": 0.5}).notes
    assert any("Triton attention" in n and "stops before training" in n for n in notes), notes
    assert "note: vLLM 0.31 on compute capability 7.5" in describe(plan(QWEN, model={"gpu_memory_utilization": 0.5}))
    assert not plan(QWEN, gpu="A100-40GB", gib=39.4).notes
    assert not plan(QWEN, model={"fast_inference": False}).notes


@pytest.mark.parametrize("gib, share", [(14.7, 0.76), (22.0, 0.78375), (39.4, 0.855), (79.2, 0.87875)])
def test_standby_plans_the_share_unsloth_sets_not_the_setting(gib, share, monkeypatch):
    """Unsloth replaces gpu_memory_utilization with its own level when standby is on (unsloth_zoo's tiers), and
    releases vLLM's KV cache after each generation: the peak is the larger of generating and training."""
    monkeypatch.delenv("UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE", raising=False)
    settings = {"gpu_memory_utilization": 0.3, "vllm_standby": True}
    with_standby, without = plan(QWEN, gib=gib, model=settings), plan(QWEN, gib=gib, model={**settings,
                                                                                            "vllm_standby": False})
    estimate = with_standby.estimate
    generating = share * gib + static_beyond_vllm(estimate)
    training = vllm_asleep_gib(estimate) + training_beyond_vllm(estimate)
    assert with_standby.peak_gib == pytest.approx(max(generating, training))
    assert with_standby.peak_gib < share * gib + training_beyond_vllm(estimate)  # no KV cache while training
    assert abs(without.peak_gib - (0.3 * gib + training_beyond_vllm(without.estimate))) < 1e-6
    assert any(f"vLLM's share to {share:.4g} of this GPU" in n for n in with_standby.notes), with_standby.notes
    assert f"vLLM's share {share * gib:.2f}" in describe(with_standby)
    assert planned(with_standby)["vllm_standby"].startswith("vLLM's KV cache is counted while it generates")
    assert "vllm_standby" not in planned(without)
    monkeypatch.setenv("UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE", "1")  # Unsloth's own switch to keep the setting
    kept = plan(QWEN, gib=gib, model=settings)
    assert kept.peak_gib == pytest.approx(max(0.3 * gib + static_beyond_vllm(estimate), training))


def test_standby_on_a_vision_model_plans_what_unsloth_does_the_setting_awake(monkeypatch):
    """Unsloth turns standby off for vision-language models and keeps gpu_memory_utilization (unsloth_zoo's
    load_vllm), unless UNSLOTH_VLLM_STANDBY_VISION=1."""
    monkeypatch.delenv("UNSLOTH_VLLM_STANDBY_VISION", raising=False)
    settings = {"gpu_memory_utilization": 0.5}
    standby = plan("Qwen2.5-VL-3B-Instruct", gpu="A100-40GB", gib=39.4, model={**settings, "vllm_standby": True})
    awake = plan("Qwen2.5-VL-3B-Instruct", gpu="A100-40GB", gib=39.4, model=settings)
    assert standby.peak_gib == awake.peak_gib
    assert "vllm_standby" not in planned(standby) and planned(standby)["vllm_gpu_memory_utilization"] == 0.5
    assert any("turns standby off for a vision-language model" in n for n in standby.notes), standby.notes
    monkeypatch.setenv("UNSLOTH_VLLM_STANDBY_VISION", "1")
    forced = plan("Qwen2.5-VL-3B-Instruct", gpu="A100-40GB", gib=39.4, model={**settings, "vllm_standby": True})
    assert planned(forced)["vllm_gpu_memory_utilization"] == pytest.approx(0.855)


def test_a_vision_tower_is_counted_not_left_out():
    text = describe(plan("gemma-3-4b-it"))
    assert "not counted: vision" not in text and "vision tower" in text and "(gemma3's tower and projector)" in text
