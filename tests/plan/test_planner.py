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
