"""concise_helpful's task, paid by a reward model instead of a judge: a preference-trained classifier scores each
reply, beside the same length and finished-reply rewards.

    make train RECIPE=helpful_preference DATA=my_requests.jsonl      # GPU: Skywork-Reward-V2-Qwen3-0.6B from the hub
    make train RECIPE=helpful_preference PROFILE=smoke ARGS='reward_models.preference=kit:tiny-reward'   # offline
    python -m kit plan helpful_preference                            # the reward model's memory is in the plan
    python -m kit eval helpful_preference --model outputs/<run>/merged

The reward model is a sequence classifier with one label (kit/rewards/reward_models/reward.py): it reads the
request and the reply as a chat in its own template and gives one logit, here squashed to (0, 1) by a sigmoid so
it sits on the scale of the other two rewards. Any other one-label classifier, a hub id or a folder, goes in by
the reward's name: `reward_models.preference=./my-rm` (`--reward-model preference=./my-rm` for `kit rewards check`
and `kit eval`). `kit:tiny-reward` is built on the spot from random weights: it shows the
path works offline (loaded, scored, planned, recorded) and teaches nothing.
"""

from __future__ import annotations

from kit.recipe import Passes, Scoring
from kit.recipes import concise_helpful as same_task  # its data, its prompt and its two rule rewards
from kit.rewards import RewardBundle, reward_model

REWARD_MODEL = "Skywork/Skywork-Reward-V2-Qwen3-0.6B"  # 0.6B parameters, ~1.2 GB in bf16 beside the policy

SYSTEM_PROMPT, DATA = same_task.SYSTEM_PROMPT, same_task.DATA
prepare, write_sample, SAMPLE_COMPLETIONS = same_task.prepare, same_task.write_sample, same_task.SAMPLE_COMPLETIONS

preference = reward_model(REWARD_MODEL, normalise="sigmoid", name="preference")

REWARDS = RewardBundle((preference, 1.0), (same_task.concise, 0.5), (same_task.finished_reply, 0.25))
EVAL = Scoring(strict=(Passes(preference, 0.7), same_task.finished_reply), lenient=Passes(preference, 0.5),
               formatted=same_task.finished_reply)

DEFAULTS = {"grpo": {"max_completion_length": 128}}

__all__ = ["DATA", "DEFAULTS", "EVAL", "REWARDS", "SAMPLE_COMPLETIONS", "SYSTEM_PROMPT", "prepare", "write_sample"]
