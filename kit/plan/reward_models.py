"""The reward models a recipe's rewards load (kit.rewards.reward_model), for the plan: their weights and their
scoring pass, read from each one's config.json alone (no weights; `kit plan` loads nothing).

    terms, notes = reward_model_terms(recipe.rewards, cfg.rewards, cfg.reward_models)   # (): none loads one
    estimate_memory(cfg, shape, stack, terms)

A reward says which model scores it in its `source` trait ({"kind": "reward_model", "model": ..., "device": ...,
"batch_size": ..., "max_length": ...}). Its weights stay on the GPU the whole run (static); its forward pass runs
after generation and before the training step, so it is a phase of its own, "scoring", that overlaps neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from kit.errors import KitError
from kit.plan.memory import BF16, Term, gib
from kit.plan.shapes import ModelShape, shape_from_config
from kit.rewards.reward_models.load import config_dict
from kit.rewards.traits import trait, unwrapped


@dataclass(frozen=True)
class RewardModel:
    reward: str  # the reward's name
    shape: ModelShape
    batch_size: int  # replies per forward pass
    max_length: int  # tokens each is cut to
    on_gpu: bool  # False: device="cpu", nothing on the GPU


def reward_model_terms(bundle, weights: dict | None = None,
                       models_by_reward: dict | None = None) -> tuple[tuple[Term, ...], list[str]]:
    """The two terms (weights, activations) for the reward models of `bundle` that the run keeps (a weight of 0
    in the config's `rewards` drops one), each the model the config's `reward_models` names for it, else the
    recipe's; and a note for each whose config cannot be read."""
    models, notes = [], []
    for reward in bundle.rewards if bundle is not None else ():
        source = trait(reward.fn, "source")
        if not isinstance(source, dict) or source.get("kind") != "reward_model":
            continue
        if (weights or {}).get(reward.name, reward.weight) == 0:
            continue
        try:
            shape = shape_from_config(config_dict(planned_model(reward, source, models_by_reward or {})))
        except KitError as err:
            notes.append(f"reward '{reward.name}': its reward model is not counted: {err}")
            continue
        models.append(RewardModel(reward.name, shape, source.get("batch_size", 8), source.get("max_length", 1024),
                                  on_gpu=source.get("device", "auto") != "cpu"))
    return ((weights_term(models), activations_term(models)) if models else ()), notes


def planned_model(reward, source: dict, models_by_reward: dict) -> str:
    """The run's `reward_models` entry for it, else its recipe's model (not one an earlier run in this process set)."""
    recipe_model = getattr(unwrapped(reward.fn), "recipe_model", source["model"])
    return models_by_reward.get(reward.name, recipe_model)


def classifier_params(shape: ModelShape) -> int:
    """A sequence classifier: the decoder and a one-score head, without a language model's output head."""
    return shape.total_params - (0 if shape.tied_embeddings else shape.vocab * shape.hidden) + shape.hidden


def weights_term(models: list[RewardModel]) -> Term:
    on_gpu = [m for m in models if m.on_gpu]
    counted = [f"{m.reward}: {classifier_params(m.shape) / 1e9:.3g}B parameters in 16-bit" for m in on_gpu]
    on_cpu = [f"{m.reward}: on the CPU (device=\"cpu\"), nothing on the GPU" for m in models if not m.on_gpu]
    size = sum(classifier_params(m.shape) for m in on_gpu) * BF16
    return Term("reward model weights", gib(size), "static", "; ".join(counted + on_cpu) + "; frozen, no gradients")


def scoring_bytes(model: RewardModel) -> float:
    """One forward pass without gradients holds one block's working set at a time (inference mode frees each
    block's as the next runs; no KV cache; attention through SDPA, no tokens x tokens scores): per token the
    residual, its norm and the block's output (3H), q, k, v and the attention output (2q + 2kv), the MLP's gate,
    up and their product (3I); and the head's logits for every token."""
    s = model.shape
    tokens = model.batch_size * model.max_length
    mlp = (3 if s.gated else 2) * s.intermediate * s.experts_per_token
    return tokens * (3 * s.hidden + 2 * s.q_dim + 2 * s.kv_dim + mlp) * BF16 + tokens * BF16


def activations_term(models: list[RewardModel]) -> Term:
    """Reward models score one after another (TRL calls the rewards in turn): the largest pass is the phase."""
    on_gpu = [m for m in models if m.on_gpu]
    if not on_gpu:
        return Term("reward model activations", 0.0, "scoring", "on the CPU (device=\"cpu\"), nothing on the GPU")
    largest = max(on_gpu, key=scoring_bytes)
    return Term("reward model activations", gib(scoring_bytes(largest)), "scoring",
                f"{largest.reward}: {largest.batch_size} replies x {largest.max_length} tokens, one block at a time, "
                "after generation, before training")
