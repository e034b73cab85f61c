"""A reward model for kit.rewards.reward_model: its name resolved, its config checked, its weights loaded frozen.

    check_reward_model("Skywork/Skywork-Reward-V2-Qwen3-0.6B")   # config.json only; raises KitError
    loaded = load_reward_model("Skywork/Skywork-Reward-V2-Qwen3-0.6B", device="auto")   # eval, no gradients

A reward model is a *ForSequenceClassification with one label: its logit is the score. Anything else is refused
from its config, before a weight loads: AutoModelForSequenceClassification would put a randomly initialised head
on a causal LM without a word (every score noise), and a classifier with several labels has no one score.
It is built with its family's transformers classes even where Unsloth replaced some for a policy of the same
family (transformers_own_classes). `kit:tiny-reward` is the tiny one built on the spot
(kit/rewards/reward_models/tiny.py).
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit import env
from kit.errors import KitError, first_line
from kit.hub import HubUnreachable, hub_config_file
from kit.rewards.reward_models.tiny import TINY_REWARD, tiny_reward_config, tiny_reward_path

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


def reward_model_dtype(target):
    """The weights' dtype on `target`, by the policy's rule (kit.models.load_settings.weights_dtype, model.dtype
    auto), so the two models beside each other on one GPU never disagree about it: bf16 where the GPU computes it
    natively, fp16 where it would only emulate bf16 (a T4, compute capability 7.5: every scoring pass several times
    slower, though torch.cuda.is_bf16_supported() says True there), fp32 on the CPU. kit.env.bf16_supported() is
    the kit's one test of that; weights_dtype itself sits in kit.models, a layer above this one, so not imported."""
    import torch

    if target.type != "cuda":
        return torch.float32
    return torch.bfloat16 if env.bf16_supported() else torch.float16


def load_reward_model(name: str, device: str = "auto") -> LoadedRewardModel:
    """Weights in reward_model_dtype (16-bit on a GPU, fp32 on the CPU); requires_grad off, eval mode: scored,
    never trained."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    config = read_config(name)
    check_config(config, name)
    target = pick_device(device)
    path = resolve(name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        with transformers_own_classes(config):
            model = AutoModelForSequenceClassification.from_pretrained(path, dtype=reward_model_dtype(target))
    except (OSError, ValueError) as err:
        raise KitError(f"cannot load the reward model {name!r}: {first_line(err, 200)}") from None
    model.to(target).requires_grad_(False).eval()
    set_padding(model, tokenizer)
    return LoadedRewardModel(model, tokenizer, target, bool(getattr(tokenizer, "chat_template", None)))


@contextmanager
def transformers_own_classes(config):
    """The module-level classes of the reward model's family as transformers wrote them, while it is built.

    On a GPU, Unsloth loading a policy runs its family's pre_patch (unsloth/models/llama.py; Llama, Qwen2, Qwen3,
    Mistral, Gemma...), which changes transformers process-wide. Its forwards it gates (a module Unsloth did not
    load runs transformers' own), but it also puts its own rotary embedding class into the family's modeling
    module, ungated, so a same-family reward model built afterwards would get it: cos/sin computed its own way and
    cached on the current CUDA device whatever the model's device (so, by its source, a reward model on
    device="cpu" beside a GPU policy would fail; on a CPU it fails outright). Unsloth records what it replaced;
    transformers' classes go back for the build and Unsloth's return after it, so the policy keeps its own.
    Nothing recorded (no policy of this family, or Unsloth's CPU backend, which patches no class): nothing to do.
    tests/rewards/reward_models/test_beside_policy.py runs that GPU patch on the CPU."""
    model_type = getattr(config, "model_type", "")
    modeling = sys.modules.get(f"transformers.models.{model_type}.modeling_{model_type}")
    record = vars(modeling).get("_unsloth_pre_patch_originals") if modeling is not None else None
    originals = dict(record[0]) if record else {}  # record: (module globals it replaced, class attributes)
    patched = {name: getattr(modeling, name) for name in originals if hasattr(modeling, name)}
    for name, value in originals.items():
        setattr(modeling, name, value)
    try:
        yield
    finally:
        for name, value in patched.items():
            setattr(modeling, name, value)


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
