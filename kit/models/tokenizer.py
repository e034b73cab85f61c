"""Tokenizer settings every load needs, whichever loader made it (Unsloth for training, transformers or
Unsloth for inference). Kept apart from kit.models.loader, which imports Unsloth as soon as it is imported."""


def with_pad_token(tokenizer):
    """The tokenizer, with its end-of-sequence token as padding if it has no pad token: GRPO and batched
    generation pad batches of prompts, and most chat tokenizers already have one."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer
