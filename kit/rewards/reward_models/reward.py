"""A reward model as a reward: a sequence classifier scores each (prompt, completion), in TRL's signature.

    from kit.rewards import RewardBundle, reward_model
    REWARDS = RewardBundle((reward_model("Skywork/Skywork-Reward-V2-Qwen3-0.6B", normalise="group"), 1.0))

Each completion is scored as a chat, the prompt's messages and the reply as an assistant message, rendered by
the reward model's own tokenizer and chat template (a tokenizer without one: "prompt\\n\\ncompletion", said once).
Replies go in batches of `batch_size`, each cut to its last `max_length` tokens: the end of a long reply, where
its answer is, is what the model reads. The model loads on the first call (importing a recipe, `kit plan` and
`--help` load nothing), frozen and in eval mode, on the GPU when there is one ("auto"; bf16, or fp16 where the GPU
has no native bf16, as the policy), else the CPU in fp32; it is never trained. What it holds on the GPU is in
`kit plan` (kit/plan/reward_models.py).

normalise   "raw"      the logit as it is; its scale is the reward model's own, so the weight sets it
            "group"    z-score among the completions of one prompt (TRL passes num_generations of each): what
                       GRPO's advantage looks at anyway, so the weight means the same for any reward model;
                       0.0 where a prompt has one completion or all score the same
            "sigmoid"  in (0, 1), as the kit's other rewards

The run may score a reward with another model than its recipe names, by the reward's name: `reward_models:
{preference: ./my-rm}` in a config, `reward_models.preference=kit:tiny-reward` on the command line.
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict

from kit.errors import KitError, first_line
from kit.rewards.reward_models.load import LoadedRewardModel, check_reward_model, load_reward_model
from kit.rewards.text import completion_text
from kit.rewards.traits import with_traits
from kit.tools.reply_guard import safe_text

NORMALISE = ("raw", "group", "sigmoid")
UNBOUNDED = (-math.inf, math.inf)  # so `kit rewards check` does not hold a logit to the kit's 0..1
RANGES = {"raw": UNBOUNDED, "group": UNBOUNDED, "sigmoid": (0.0, 1.0)}
CHARACTERS_PER_TOKEN = 64  # a message is cut to its last max_length x 64 characters before tokenizing: more than
# max_length tokens survive any tokenizer, and a 10 MB reply costs no more than a long one


def reward_model(name_or_path, *, device: str = "auto", batch_size: int = 8, normalise: str = "raw",
                 max_length: int = 1024, name: str = "reward_model"):
    """A reward function `name(prompts, completions, **kwargs) -> list[float]` scored by a reward model (a hub id
    or a local folder of a *ForSequenceClassification with one label; `kit:tiny-reward` offline)."""
    settings_problems(name_or_path, device, batch_size, normalise, max_length, name)

    def score(prompts, completions, **kwargs) -> list[float]:
        if prompts is None or len(prompts) != len(completions):  # a caller without prompts: the replies alone
            prompts = [None] * len(completions)
        raw = score.scorer([conversation(p, c, max_length) for p, c in zip(prompts, completions)])
        return normalised(raw, prompts, normalise)

    def use_model(model: str) -> None:
        """Score with `model` from now on (the run's `reward_models` setting); it loads on the next call."""
        if getattr(score, "source", {}).get("model") == model:
            return
        settings_problems(model, device, batch_size, normalise, max_length, name)
        score.scorer = Scorer(model, device, batch_size, max_length, name)  # what it loaded, once it has
        score.source = {"kind": "reward_model", "model": model, "device": device, "normalise": normalise,
                        "batch_size": batch_size, "max_length": max_length}
        score.preflight = functools.partial(check_reward_model, model)

    score.__name__ = score.__qualname__ = name  # TRL's metric: rewards/<name>/mean
    score.recipe_model, score.use_model = str(name_or_path), use_model
    use_model(str(name_or_path))
    return with_traits(score, reward_range=RANGES[normalise])


def configure_reward_models(funcs, models: dict[str, str]) -> None:
    """The run's `reward_models` setting, {reward name: model}: each named reward model scores with that model,
    every other one with its recipe's own (so a setting from an earlier run in this process does not linger)."""
    from kit.rewards.traits import unwrapped

    scorers = {inner.__name__: inner for inner in map(unwrapped, funcs) if hasattr(inner, "use_model")}
    unknown = sorted(set(models) - set(scorers))
    if unknown:
        have = ", ".join(sorted(scorers)) or "none: no reward here is a kit.rewards.reward_model"
        raise KitError(f"reward_models: '{unknown[0]}' is not a reward model reward of this recipe; its reward "
                       f"models: {have}")
    for name, inner in scorers.items():
        inner.use_model(str(models.get(name, inner.recipe_model)))


def settings_problems(name_or_path, device, batch_size, normalise, max_length, name) -> None:
    """Every setting that is wrong, in one KitError: each with what to write instead."""
    problems = []
    if not isinstance(name_or_path, str) and not hasattr(name_or_path, "__fspath__"):
        problems.append(f"the model must be a hub id or a folder, not {name_or_path!r:.40}")
    if not isinstance(device, str) or not (device in ("auto", "cpu", "cuda") or device.startswith("cuda:")):
        problems.append(f"device={device!r}: use \"auto\" (the GPU when there is one), \"cpu\" or \"cuda[:N]\"")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        problems.append(f"batch_size={batch_size!r}: give a whole number of replies per forward pass, 1 or more")
    if normalise not in NORMALISE:
        problems.append(f"normalise={normalise!r}: choose from {', '.join(NORMALISE)}")
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        problems.append(f"max_length={max_length!r}: give the tokens the reward model reads, 1 or more")
    if not isinstance(name, str) or not name or any(c.isspace() or c == "/" for c in name):  # rewards/<name>/mean
        problems.append(f"name={name!r}: give a name TRL can log the metric under, e.g. \"helpfulness\"")
    if problems:
        raise KitError(f"reward_model({name_or_path!r:.60}): " + "; ".join(problems))


def conversation(prompt, completion, max_length: int) -> list[dict]:
    """The prompt's messages and the reply as an assistant message; text made safe and cut to its end."""
    keep = max_length * CHARACTERS_PER_TOKEN
    if prompt is None:
        messages = []
    elif isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    else:
        messages = [{"role": str(m.get("role", "user")), "content": completion_text(m)}
                    for m in prompt if isinstance(m, dict)]
    messages.append({"role": "assistant", "content": completion_text(completion)})
    return [{"role": safe_text(m["role"]), "content": safe_text(m["content"][-keep:])} for m in messages]


class Scorer:
    """The reward model, loaded on the first call, and its logits for chats, `batch_size` at a time."""

    def __init__(self, name: str, device: str, batch_size: int, max_length: int, reward: str):
        self.name, self.device, self.batch_size, self.max_length, self.reward = (
            name, device, batch_size, max_length, reward)
        self.loaded: LoadedRewardModel | None = None

    def load(self) -> LoadedRewardModel:
        if self.loaded is None:
            self.loaded = load_reward_model(self.name, self.device)
            if not self.loaded.chat_template:
                print(f"warning: reward '{self.reward}': the tokenizer of {self.name} has no chat template, so "
                      "it scores plain text: the prompt, a blank line, the reply", flush=True)
            positions = getattr(self.loaded.model.config, "max_position_embeddings", None)
            if isinstance(positions, int) and self.max_length > positions:
                print(f"warning: reward '{self.reward}': max_length={self.max_length}, but {self.name} reads at most "
                      f"{positions} tokens: it reads the last {positions}", flush=True)
                self.max_length = positions
        return self.loaded

    def __call__(self, chats: list[list[dict]]) -> list[float]:
        loaded = self.load()
        texts = [self.render(loaded, chat) for chat in chats]
        unique = list(dict.fromkeys(texts))  # the same reply twice is scored once: equal, not equal up to padding
        size = self.batch_size if loaded.tokenizer.pad_token_id is not None else 1  # no pad token: no batches
        scores = [value for start in range(0, len(unique), size)
                  for value in self.logits(loaded, unique[start:start + size])]
        by_text = dict(zip(unique, scores))
        return [by_text[text] for text in texts]

    def render(self, loaded: LoadedRewardModel, chat: list[dict]) -> str:
        if not loaded.chat_template:  # never empty: a forward pass needs a token
            return "\n\n".join(m["content"] for m in chat) or loaded.tokenizer.eos_token or " "
        from jinja2 import TemplateError

        try:
            return loaded.tokenizer.apply_chat_template(chat, tokenize=False)
        except (TemplateError, ValueError) as err:  # the model's template refuses the roles, whatever the reply
            raise KitError(f"reward '{self.reward}': the chat template of {self.name} refused a conversation with "
                           f"roles {[m['role'] for m in chat]} ({first_line(err, 120)}); give prompts it accepts "
                           "(some templates take no system message)") from None

    def logits(self, loaded: LoadedRewardModel, texts: list[str]) -> list[float]:
        batch = loaded.tokenizer(texts, padding=len(texts) > 1, truncation=True, max_length=self.max_length,
                                 add_special_tokens=not loaded.chat_template,  # the template writes its own
                                 return_tensors="pt").to(loaded.device)
        return self.forward(loaded, batch["input_ids"], batch["attention_mask"])

    def forward(self, loaded: LoadedRewardModel, input_ids, attention_mask) -> list[float]:
        import torch

        # eager: Unsloth compiles transformers' mask builder for the policy, and that compiled graph breaks on
        # a second model's shapes in inference mode (an aliasing check in torch's AOT runtime)
        with torch.inference_mode(), torch.compiler.set_stance("force_eager"):
            out = loaded.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        return out.logits[:, 0].float().cpu().tolist()  # (batch, 1 label) -> one score per reply

    def largest_pass(self) -> None:
        """Load, and score one batch at the largest shapes a step can give: batch_size replies of max_length
        tokens each (the memory probe's scoring phase, kit/plan/probe.py)."""
        import torch

        loaded = self.load()
        pad = loaded.tokenizer.pad_token_id
        rows = self.batch_size if pad is not None else 1  # no pad token: one reply at a time, as __call__ scores
        token = 1 if pad == 0 else 0  # any token but the pad token, which pooling would skip
        ids = torch.full((rows, self.max_length), token, dtype=torch.long, device=loaded.device)
        self.forward(loaded, ids, torch.ones_like(ids))


def normalised(raw: list[float], prompts: list, mode: str) -> list[float]:
    if mode == "raw":
        return raw
    if mode == "sigmoid":
        return [sigmoid(x) for x in raw]
    groups = defaultdict(list)
    for row, prompt in enumerate(prompts):
        groups[json.dumps(prompt, sort_keys=True, default=str)].append(row)
    scores = list(raw)
    for rows in groups.values():
        finite = [raw[r] for r in rows if math.isfinite(raw[r])]
        mean = math.fsum(finite) / len(finite) if finite else 0.0
        std = math.sqrt(math.fsum((x - mean) ** 2 for x in finite) / len(finite)) if finite else 0.0
        for r in rows:
            if math.isfinite(raw[r]):  # NaN stays NaN: the guard counts it as None
                scores[r] = (raw[r] - mean) / std if len(finite) > 1 and std > 0 else 0.0
    return scores


def sigmoid(x: float) -> float:
    if math.isnan(x):
        return x
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # never overflows for x < 0
    return z / (1.0 + z)
