"""The loss settings as TRL's GRPOConfig gets them (kit.train.stages.grpo): gspo becomes TRL's GSPO fields and never
reaches TRL as a loss_type, and every unset clip value is resolved by the kit from the loss."""

import pytest

from kit.config import build_config
from kit.config.schema import literal_values
from kit.config.sections import GRPOSection
from kit.config.stages import stage_plans
from kit.rewards import RewardBundle
from kit.train.stages.grpo import grpo_args, trainer_settings


def reward(completions, **kwargs):
    return [0.0] * len(completions)


def built_args(tmp_path, **grpo):
    cfg = build_config([{"model": {"fast_inference": False}, "grpo": {"optim": "adamw_torch", **grpo}}])
    return grpo_args(cfg, tmp_path, RewardBundle((reward, 1.0)))


def test_gspo_reaches_trl_as_its_gspo_settings(tmp_path):
    args = built_args(tmp_path, loss_type="gspo")
    assert args.loss_type == "grpo" and args.importance_sampling_level == "sequence"
    assert (args.epsilon, args.epsilon_high) == (3e-4, 4e-4)  # the GSPO paper's, for its one ratio per completion
    assert args.beta == 0.0


@pytest.mark.parametrize("clip, expected", [
    ({"epsilon": 0.2}, (0.2, 0.2)),  # a range of the user's own: TRL's rule for the upper clip
    ({"epsilon_high": 1e-3}, (3e-4, 1e-3)),
    ({"epsilon": 1e-3, "epsilon_high": 2e-3}, (1e-3, 2e-3)),
])
def test_gspo_keeps_a_clip_range_set_by_hand(tmp_path, clip, expected):
    args = built_args(tmp_path, loss_type="gspo", **clip)
    assert (args.epsilon, args.epsilon_high) == expected and args.loss_type == "grpo"


@pytest.mark.parametrize("loss, expected", [("dapo", (0.2, 0.2)), ("grpo", (0.2, 0.2)), ("cispo", (0.2, 5.0))])
def test_other_losses_keep_trls_clip_range(tmp_path, loss, expected):
    args = built_args(tmp_path, loss_type=loss)
    assert (args.loss_type, args.importance_sampling_level) == (loss, "token")
    assert (args.epsilon, args.epsilon_high) == expected


@pytest.mark.parametrize("loss", literal_values(GRPOSection.model_fields["loss_type"].annotation))
def test_no_loss_type_reaches_trl_under_a_name_it_lacks(tmp_path, loss):
    extra = {"importance_sampling_level": "sequence"} if loss == "luspo" else {}
    args = built_args(tmp_path, loss_type=loss, extra=extra)  # TRL's GRPOConfig accepts what it is given
    assert args.loss_type != "gspo"
    assert args.loss_type == ("grpo" if loss == "gspo" else loss)


def test_a_stage_that_switches_to_gspo_gets_its_clip_range():
    cfg = build_config([{"stages": ["grpo", {"grpo": {"loss_type": "gspo"}}]}])
    first, second = (trainer_settings(plan.cfg.grpo) for plan in stage_plans(cfg))
    assert (first["loss_type"], first["epsilon"]) == ("dapo", 0.2) and "importance_sampling_level" not in first
    assert (second["loss_type"], second["importance_sampling_level"]) == ("grpo", "sequence")
    assert (second["epsilon"], second["epsilon_high"]) == (3e-4, 4e-4)


def test_an_extra_that_agrees_with_gspo_passes_through(tmp_path):
    args = built_args(tmp_path, loss_type="gspo", extra={"importance_sampling_level": "sequence",
                                                         "steps_per_generation": 4})
    assert args.importance_sampling_level == "sequence" and args.steps_per_generation == 4
