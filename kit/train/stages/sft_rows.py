"""The SFT warm start's rows as token ids and a loss mask, made by the kit for every backend.

    rows = tokenized(worked_answers, tokenizer, tools, {"enable_thinking": False}, max_length=1024)

`input_ids` + `completion_mask` is the one form TRL's SFTTrainer (the CPU) and the trainer Unsloth generates on a
GPU (unsloth_zoo's sft_prepare_dataset) both take as it is, so both train on the same tokens. The rows are
rendered as GRPO's rollouts render them (the recipe's tools, the template options, TRL's training template where
it swaps one in), and the loss covers what the model writes alone: a tool's result, and the turn markers around
it, are the tool's text, which the warm start must not teach the model to write (GRPO's tool_mask leaves them
out the same way).
"""

from __future__ import annotations

from kit.errors import KitError


def tokenized(rows, tokenizer, tools: list | None = None, template_kwargs: dict | None = None,
              max_length: int | None = None):
    """Prompt-completion rows (chat messages) as `input_ids` + `completion_mask`, cut to `max_length` tokens."""
    template = rollout_template(tokenizer, tools)

    def row_tokens(row: dict) -> dict:
        return assistant_token_mask(tokenizer, row["prompt"], row["completion"], tools, template_kwargs or {},
                                    template)

    return within_length(rows.map(row_tokens, remove_columns=rows.column_names), max_length)


def rollout_template(tokenizer, tools: list | None) -> str | None:
    """The chat template GRPO's rollouts use: with tools, TRL's GRPOTrainer swaps in its prefix-preserving training
    template where the tokenizer's own is not (Qwen3's writes a think block before the last turn alone)."""
    if not tools:
        return None
    from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

    return None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)


def assistant_token_mask(tokenizer, prompt: list[dict], completion: list[dict], tools, template_kwargs: dict,
                         template: str | None = None) -> dict:
    """The conversation's token ids, and a mask that is 1 on the tokens of each assistant turn of `completion`.

    A turn runs from where the template opens it (the part the prompt so far, with the generation prompt, shares
    with the whole conversation) through its end-of-turn token, the last one the model generates. A template that
    renders a turn differently when it is the last one (a think block) moves neither end."""

    def ids(messages: list[dict], opening: bool = False) -> list[int]:
        return tokenizer.apply_chat_template(messages, tools=tools or None, chat_template=template, tokenize=True,
                                             return_dict=True, add_generation_prompt=opening,
                                             **template_kwargs)["input_ids"]

    whole = ids(prompt + completion)
    mask = [0] * len(whole)
    for turn, message in enumerate(completion):
        if message["role"] == "assistant":
            start = shared_prefix(ids(prompt + completion[:turn], opening=True), whole)
            end = end_of_turn(whole, start, tokenizer.eos_token_id)
            if end is None:  # a template that does not close the turn with the end token: as far as it agrees
                end = shared_prefix(ids(prompt + completion[: turn + 1]), whole)
            mask[start:end] = [1] * (end - start)
    return {"input_ids": whole, "completion_mask": mask}


def end_of_turn(ids: list[int], start: int, eos: int | None) -> int | None:
    """Just past the first end-of-turn token from `start`, or None."""
    return ids.index(eos, start) + 1 if eos is not None and eos in ids[start:] else None


def shared_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def within_length(rows, max_length: int | None):
    """Rows cut to `max_length` tokens, as TRL cuts them on a CPU (Unsloth's GPU preparation leaves tokenized rows
    as they are); a row with no answer token left is dropped, and no row left is an error."""
    if max_length is None:
        return rows
    long = sum(len(ids) > max_length for ids in rows["input_ids"])
    if not long:
        return rows
    cut = rows.map(lambda row: {key: row[key][:max_length] for key in ("input_ids", "completion_mask")})
    kept = cut.filter(lambda row: 1 in row["completion_mask"])
    if not len(kept):
        raise KitError(f"sft: every worked answer starts past model.max_seq_length ({max_length} tokens); raise it, "
                       "or shorten the prompts (data.max_prompt_length)")
    print(f"sft: {long} of {len(rows)} worked answers are longer than model.max_seq_length ({max_length} tokens): "
          f"cut to it{f', {len(rows) - len(kept)} with no answer left dropped' if len(kept) < len(rows) else ''}")
    return kept
