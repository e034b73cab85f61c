"""A reward model for kit.rewards.reward_model: its name resolved, its config checked, its weights loaded frozen.

    check_reward_model("Skywork/Skywork-Reward-V2-Qwen3-0.6B")   # config.json only; raises KitError
    loaded = load_reward_model("Skywork/Skywork-Reward-V2-Qwen3-0.6B", device="auto")   # eval, no gradients

A reward model is a *ForSequenceClassification with one label: its logit is the score. Anything else is refused
from its config, before a weight loads: AutoModelForSequenceClassification would put a randomly initialised head
on a causal LM without a word (every score noise), and a classifier with several labels has no one score.
`kit:tiny-reward` is the tiny one built on the spot (kit/rewards/reward_model_tiny.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.errors import KitError, first_line
from kit.hub import HubUnreachable, hub_config_file
from kit.rewards.reward_model_tiny import TINY_REWARD, tiny_reward_config, tiny_reward_path

EXAMPLE = "Skywork/Skywork-Reward-V2-Qwen3-0.6B"
INSTEAD = (f"give a reward model saved as *ForSequenceClassification with num_labels=1 (e.g. {EXAMPLE}), or "
           "score with a generative judge instead (kit.rewards.llm_judge)")


def resolve(name: str) -> str:
    """A local folder (checked), `kit:tiny-reward` (built once), or a hub id as given."""
    if name == TINY_REWARD:
        return str(tiny_reward_path())
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise KitError(f"reward model folder {path} has no config.json: {INSTEAD}")
        return str(path)
    if path.exists():
        raise KitError(f"reward model {path} is a file; give the model's folder (the one holding config.json)")
    if name.startswith(("./", "../", "/", "~")) or name.count("/") > 1 or not name.strip():
        raise KitError(f"reward model {name!r} does not exist: give a local model folder or a hub id (e.g. {EXAMPLE})")
    return name


def config_file(name: str) -> Path:
    """config.json of a local folder or of a hub id (kit.hub: the Hugging Face cache, else the hub, asked once)."""
    path = resolve(name)
    if Path(path).is_dir():
        return Path(path) / "config.json"
    try:
        return hub_config_file(path)
    except HubUnreachable as err:
        raise KitError(f"cannot read the reward model {name!r}: not a local folder, not in the Hugging Face cache, "
                       f"and the hub did not answer ({err}); give a local folder holding its "
                       f"config.json, or a hub id that is reachable or cached; offline, {TINY_REWARD} runs the "
                       "path (its scores mean nothing)") from None


def config_dict(name: str) -> dict:
    """config.json as a mapping, no weights (`kit plan` reads this); the tiny one's without building it."""
    if name == TINY_REWARD:
        return tiny_reward_config()
    try:
        return json.loads(config_file(name).read_text())
    except (OSError, ValueError) as err:
        raise KitError(f"cannot read the config.json of the reward model {name!r} ({first_line(err, 160)})") from None


def read_config(name: str):
    """The model's config as transformers reads it (config.json alone, no weights), or one KitError line."""
    from transformers import AutoConfig

    try:
        if name == TINY_REWARD:
            return AutoConfig.for_model(**tiny_reward_config())
        return AutoConfig.from_pretrained(config_file(name).parent)
    except (OSError, ValueError, KeyError) as err:  # a model_type transformers does not know, a broken file
        raise KitError(f"cannot read the reward model {name!r} ({first_line(err, 160)}): {INSTEAD}") from None


def check_config(config, name: str) -> None:
    """A one-label sequence classifier, or one KitError that says what to give instead."""
    architectures = list(getattr(config, "architectures", None) or [])
    if not any(a.endswith("ForSequenceClassification") for a in architectures):
        what = ", ".join(architectures) or "a model whose config.json names no architecture"
        raise KitError(f"reward model {name!r} is {what}, not a sequence classifier (its head would be random "
                       f"weights): {INSTEAD}")
    if config.num_labels != 1:
        raise KitError(f"reward model {name!r} has {config.num_labels} labels; a reward model gives one score per "
                       f"reply: {INSTEAD}")


def check_reward_model(name: str) -> None:
    """The cheap check (config.json only, no weights): a reward's `preflight` trait calls it before training."""
    check_config(read_config(name), name)


def pick_device(device: str):
    """"auto": CUDA when there is a GPU, else the CPU; "cpu", "cuda" or "cuda:N" as asked."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise KitError(f"reward model device {device!r}, but torch sees no GPU: use device=\"auto\" or \"cpu\"")
    if device == "cuda":  # this process's GPU (a multi-process launch gives each its own)
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device(device)


@dataclass
class LoadedRewardModel:
    model: Any  # a *ForSequenceClassification, frozen, in eval mode
    tokenizer: Any  # pads on the right, truncates on the left (the end of a long reply is kept)
    device: Any
    chat_template: bool  # False: the tokenizer has none, so a chat is scored as "prompt\n\ncompletion"


def load_reward_model(name: str, device: str = "auto") -> LoadedRewardModel:
    """Weights in bf16 on a GPU, fp32 on the CPU; requires_grad off, eval mode: scored, never trained."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    config = read_config(name)
    check_config(config, name)
    target = pick_device(device)
    path = resolve(name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(
            path, dtype=torch.bfloat16 if target.type == "cuda" else torch.float32)
    except (OSError, ValueError) as err:
        raise KitError(f"cannot load the reward model {name!r}: {first_line(err, 200)}") from None
    model.to(target).requires_grad_(False).eval()
    set_padding(model, tokenizer)
    return LoadedRewardModel(model, tokenizer, target, bool(getattr(tokenizer, "chat_template", None)))


def set_padding(model, tokenizer) -> None:
    """Right padding, left truncation, and one pad id shared by tokenizer and config: the classifier scores the
    last token that is not the pad token (transformers' sequence-classification pooling), so they must agree."""
    tokenizer.padding_side, tokenizer.truncation_side = "right", "left"
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    pad = config.pad_token_id
    if pad is None or not 0 <= pad < len(tokenizer):  # none, or one the tokenizer cannot write
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pad is not None:
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(pad)
    model.config.pad_token_id = config.pad_token_id = pad  # None: no pad token at all, so one reply at a time
