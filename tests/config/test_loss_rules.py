"""The loss rules (kit.config.rules.loss_problems): gspo as a named loss, and the loss settings refused before
anything loads because TRL or Unsloth's GPU trainer would refuse or change them after loading."""

import pytest

from kit.config import build_config
from kit.errors import KitError

NO_VLLM = {"model": {"fast_inference": False}}


def refusal(*layers: dict) -> str:
    with pytest.raises(KitError) as err:
        build_config(list(layers))
    return str(err.value)


def test_gspo_is_a_loss_type_with_its_clip_range_left_to_the_kit():
    cfg = build_config([{"grpo": {"loss_type": "gspo"}}])
    assert cfg.grpo.loss_type == "gspo"
    assert cfg.grpo.epsilon is None and cfg.grpo.epsilon_high is None  # resolved from the loss when the config is built


def test_gspo_takes_a_sequence_level_extra_that_agrees_with_it():
    cfg = build_config([{"grpo": {"loss_type": "gspo", "extra": {"importance_sampling_level": "sequence"}}}])
    assert cfg.grpo.extra == {"importance_sampling_level": "sequence"}


def test_gspo_with_token_level_ratios_is_refused_with_the_fix():
    message = refusal({"grpo": {"loss_type": "gspo", "extra": {"importance_sampling_level": "token"}}})
    assert "grpo.loss_type gspo is one importance ratio per completion" in message
    assert "grpo.extra.importance_sampling_level is token: drop that key, or choose loss_type grpo" in message
    assert "1 problem(s)" in message, message


def test_a_stage_that_switches_to_gspo_is_checked_against_the_runs_extra():
    message = refusal({"grpo": {"extra": {"importance_sampling_level": "token"}},
                       "stages": ["grpo", {"grpo": {"loss_type": "gspo"}}]})
    assert "stages[1]: grpo.loss_type gspo is one importance ratio per completion" in message
    assert "stages[0]" not in message  # the first stage is dapo with token-level ratios: nothing contradicts


def test_sequence_level_ratios_with_other_losses_pass_through_as_trl_has_them():
    for loss in ("dapo", "bnpo", "grpo", "cispo"):
        cfg = build_config([{"grpo": {"loss_type": loss, "extra": {"importance_sampling_level": "sequence"}}}])
        assert cfg.grpo.loss_type == loss


def test_vespo_with_vllm_generation_needs_a_per_token_correction():
    message = refusal({"grpo": {"loss_type": "vespo"}})  # model.fast_inference defaults to true
    assert "grpo.loss_type vespo with vLLM generation (model.fast_inference) needs a per-token vLLM correction, and " \
           "its mode is sequence_mask" in message
    assert "grpo.extra.vllm_importance_sampling_mode=token_truncate (or token_mask), or model.fast_inference=false" \
        in message
    extra = {"use_vllm": True, "vllm_importance_sampling_mode": "geometric_mask"}  # vLLM asked for by grpo.extra
    message = refusal(NO_VLLM, {"grpo": {"loss_type": "vespo", "extra": extra}})
    assert "its mode is geometric_mask" in message


@pytest.mark.parametrize("layers", [
    [NO_VLLM, {"grpo": {"loss_type": "vespo"}}],  # transformers generation: no vLLM correction at all
    [{"grpo": {"loss_type": "vespo", "extra": {"vllm_importance_sampling_mode": "token_truncate"}}}],
    [{"grpo": {"loss_type": "vespo", "extra": {"vllm_importance_sampling_mode": "token_mask"}}}],
    [{"grpo": {"loss_type": "vespo", "extra": {"vllm_importance_sampling_correction": False}}}],
])
def test_vespo_runs_where_trl_and_unsloth_accept_it(layers):
    assert build_config(layers).grpo.loss_type == "vespo"


def test_other_losses_are_not_held_to_vespos_vllm_mode():
    for loss in ("dapo", "grpo", "gspo", "sapo"):
        assert build_config([{"grpo": {"loss_type": loss}}]).grpo.loss_type == loss


def test_gspo_stays_out_of_the_luspo_rule_and_luspo_still_needs_sequence_level():
    message = refusal({"grpo": {"loss_type": "luspo"}})
    assert "grpo.loss_type luspo is a sequence-level loss" in message and "gspo" not in message
