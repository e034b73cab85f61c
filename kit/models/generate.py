"""One generation function, the same call on every machine: for evaluation and chat, the held-out checks during
training, and `kit doctor`'s GPU route (prompts that show pictures: kit/models/vision_generate.py).

    texts = generate(model, tokenizer, prompts, Sampling(max_new_tokens=256))

Three engines behind it: the kit's own vLLM engine (kit/models/vllm_engine.py, for eval and chat: a
saved adapter by its folder), Unsloth's vLLM engine during a GPU run (`fast_generate`; the adapter
being trained by its live weights, `live_adapter_request`), and batched transformers `generate` with
left padding and the KV cache. All render prompts with the tokenizer's chat template, tokenize them the
same way as training's rollouts (no special tokens added: the template has them), hand the engine token
ids (given text, vLLM would add a BOS of its own), decode the completions' ids with one call, and honour
temperature (0 = greedy), top_p, max_new_tokens and seed.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache

from tqdm.auto import tqdm

from kit import cpu_threads, env
from kit.models.vllm_engine import VllmEngine, sampling_params
from kit.tools.budget import ToolBudget


@dataclass
class Sampling:
    max_new_tokens: int = 256
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    seed: int = 0
    min_new_tokens: int = 0  # benchmarks set it = max_new_tokens, so every run generates the same length
    chat_template_kwargs: dict = field(default_factory=dict)  # as in training: grpo.chat_template_kwargs
    # with tools: rounds of tool calls, at most (grpo.max_tool_calling_iterations; None: no limit); max_new_tokens
    # is then the budget of the whole multi-turn completion, as max_completion_length is in training
    max_tool_rounds: int | None = 4
    tool_budget: ToolBudget = field(default_factory=ToolBudget)  # each rollout's (grpo.tool_calls_per_turn, ...)


def render(tokenizer, prompts: list[list[dict]], chat_template_kwargs: dict | None = None, tools=None) -> list[str]:
    """Each prompt through the chat template, ready for the reply; `tools` (functions) are shown as schemas."""
    return [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True, tools=tools or None,
                                          **(chat_template_kwargs or {}))
            for p in prompts]


def prompt_token_ids(tokenizer, prompts: list[list[dict]], chat_template_kwargs: dict | None = None, tools=None
                     ) -> list[list[int]]:
    """The rendered prompts as token ids: the chat template already holds BOS and the turn markers."""
    texts = render(tokenizer, prompts, chat_template_kwargs, tools)
    return [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]


def uses_vllm(model) -> bool:
    """vLLM only where it can run (a GPU, vLLM installed: kit.env.vllm_usable) and on a model loaded with
    fast_inference, which has vLLM's engine."""
    return env.vllm_usable() and hasattr(model, "fast_generate") and getattr(model, "vllm_engine", None) is not None


def live_adapter_request(model):
    """A vLLM LoRA request for the adapter as it is now in the training model; None off the vLLM path.

    Unsloth's vLLM engine shares the base weights with training and never sees the adapter unless a
    request carries it (its GRPO trainer builds one for every rollout the same way). Without it, an
    evaluation after training would score the base model.
    """
    if not uses_vllm(model) or not hasattr(model, "load_lora"):  # load_lora: set by get_peft_model with vLLM
        return None
    return model.load_lora(live_adapter_dir(), load_tensors=True)  # a fresh id per call: vLLM caches adapters by id


@cache
def live_adapter_dir() -> str:
    """Where Unsloth writes the live adapter's config (not its tensors) to build a request: a temporary
    folder of this process, not the user's working directory, where a relative name would land."""
    path = tempfile.mkdtemp(prefix="kit-live-adapter-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def generate(model, tokenizer, prompts: list[list[dict]], sampling: Sampling, batch_size: int = 32,
             lora_request=None, progress: bool = True) -> list[str]:
    """Completions (text only, special tokens removed) for chat-format prompts, in order."""
    if isinstance(model, VllmEngine):
        ids = model.generate(prompt_token_ids(tokenizer, prompts, sampling.chat_template_kwargs), sampling,
                             lora_request, progress)
        return tokenizer.batch_decode(ids, skip_special_tokens=True)  # the same call as generate_hf's
    if uses_vllm(model):
        return generate_vllm(model, tokenizer, prompts, sampling, lora_request)
    return generate_hf(model, tokenizer, prompts, sampling, batch_size, progress)


def generate_vllm(model, tokenizer, prompts, sampling: Sampling, lora_request=None) -> list[str]:
    ids = fast_generate_ids(model, prompt_token_ids(tokenizer, prompts, sampling.chat_template_kwargs), sampling,
                            lora_request)
    return tokenizer.batch_decode(ids, skip_special_tokens=True)  # the same call as generate_hf's


def fast_generate_ids(model, prompt_ids: list[list[int]], sampling: Sampling, lora_request=None) -> list[list[int]]:
    """Unsloth's vLLM engine, given token ids: vLLM encodes a text prompt with add_special_tokens=True, which
    puts a second BOS before the template's own (Llama-3, Gemma), a prompt training never saw."""
    outputs = model.fast_generate([{"prompt_token_ids": ids} for ids in prompt_ids],
                                  sampling_params=sampling_params(sampling), lora_request=lora_request)
    return [list(output.outputs[0].token_ids) for output in outputs]


def generate_hf(model, tokenizer, prompts, sampling: Sampling, batch_size: int, progress: bool) -> list[str]:
    ids = prompt_token_ids(tokenizer, prompts, sampling.chat_template_kwargs)
    return tokenizer.batch_decode(generate_hf_ids(model, tokenizer, ids, sampling, batch_size, progress),
                                  skip_special_tokens=True)


def generate_ids(model, tokenizer, prompt_ids: list[list[int]], sampling: Sampling, batch_size: int = 32,
                 lora_request=None, progress: bool = True) -> list[list[int]]:
    """Completions as token ids for prompts already rendered (multi-turn rollouts, kit.eval.rollout): each up
    to and with its first end-of-turn token, as TRL's trainer hands them to its parser."""
    if isinstance(model, VllmEngine):
        return [until_eos(ids, tokenizer) for ids in model.generate(prompt_ids, sampling, lora_request, progress)]
    if uses_vllm(model):  # Unsloth's engine during a GPU run
        return [until_eos(ids, tokenizer) for ids in fast_generate_ids(model, prompt_ids, sampling, lora_request)]
    return generate_hf_ids(model, tokenizer, prompt_ids, sampling, batch_size, progress)


def until_eos(ids: list[int], tokenizer) -> list[int]:
    """The ids up to and with the first end-of-sequence token; the padding after it dropped."""
    eos = tokenizer.eos_token_id
    return ids[: ids.index(eos) + 1] if eos in ids else ids


def generate_hf_ids(model, tokenizer, prompt_ids: list[list[int]], sampling: Sampling, batch_size: int,
                    progress: bool) -> list[list[int]]:
    """transformers generate, batched, prompts padded on the left (generation continues at the right edge)."""
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    torch.manual_seed(sampling.seed)
    was_training = model.training
    model.eval()
    results: list[list[int]] = []
    try:
        batches = range(0, len(prompt_ids), batch_size)
        for start in tqdm(batches, desc="generate", unit="batch", disable=not progress or len(batches) < 2):
            input_ids, attention_mask = left_padded(prompt_ids[start : start + batch_size], pad, model.device)
            started = time.perf_counter()
            with torch.no_grad():
                out = model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                     max_new_tokens=sampling.max_new_tokens, pad_token_id=pad,
                                     min_new_tokens=sampling.min_new_tokens,
                                     do_sample=sampling.temperature > 0, use_cache=True,
                                     **({"temperature": sampling.temperature, "top_p": sampling.top_p}
                                        if sampling.temperature > 0 else {}))
            new_tokens = out[:, input_ids.shape[1]:]
            results += [until_eos(row, tokenizer) for row in new_tokens.tolist()]
            # per decoded position: batches that stop early are not "slow" (kit.cpu_threads re-counts on slow ones)
            cpu_threads.step_finished((time.perf_counter() - started) / max(1, new_tokens.shape[1]))
    finally:
        model.train(was_training)
    return results


def left_padded(batch: list[list[int]], pad: int, device):
    import torch

    width = max(len(ids) for ids in batch)
    input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in batch], device=device)
    attention_mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in batch], device=device)
    return input_ids, attention_mask
