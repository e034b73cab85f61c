"""The reference a GGUF file is checked against: what the merged Hugging Face model, loaded with transformers,
says on a fixed set of texts and prompts (its token ids, greedy continuations and logits), computed once per
export and compared with every GGUF file by kit.export.gguf.verify.
"""

from __future__ import annotations

from pathlib import Path

from kit.export.gguf import spm

SAMPLE_TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  two leading spaces and  a double one",
    "numbers: 1,234.56, -7/8 and $42",
    "unicode: café, naïve, 日本語, 🙂",
    "code:\n\tdef f(x):\n\t\treturn x * 2\n",
    "<reasoning>\n4 + 3 = 7\n</reasoning>\n<answer>\n7\n</answer>",
]
PROMPTS = ["What is 7 plus 5?", "Name three colors.", "Write one sentence about the sea."]
GREEDY_TOKENS = 16


class Reference:
    """What the merged HF model says, computed once and compared with every GGUF file."""

    def __init__(self, model_dir: Path):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=reference_dtype(model_dir)).eval()
        self.eos_ids = eos_ids(self.model.generation_config, self.tokenizer)
        self.texts = SAMPLE_TEXTS + chat_texts(self.tokenizer)
        # A SentencePiece tokenizer that puts a space only at the input's start (transformers' Metaspace
        # "first"): llama.cpp has no such rule, so the export matches it after special tokens instead
        # (kit.export.gguf.spm)
        at_start, after_special = spm.space_rules(self.tokenizer) if spm.is_sentencepiece(model_dir) else (False, False)
        self.start_space_only = at_start and not after_special
        self.prompts = [self.prompt_ids(p) for p in PROMPTS]
        with torch.no_grad():
            self.continuations = [self.greedy(ids) for ids in self.prompts]
            self.logits = [self.model(torch.tensor([ids + cont])).logits[0].float().numpy()
                           for ids, cont in zip(self.prompts, self.continuations)]

    def prompt_ids(self, question: str) -> list[int]:
        text = self.tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                                  add_generation_prompt=True)
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def greedy(self, ids: list[int]) -> list[int]:
        import torch

        out = self.model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                  max_new_tokens=GREEDY_TOKENS, do_sample=False, eos_token_id=self.eos_ids,
                                  pad_token_id=self.tokenizer.pad_token_id or self.eos_ids[0])
        return until_eos(out[0, len(ids):].tolist(), self.eos_ids)


def reference_dtype(model_dir: Path):
    """float32 when it fits comfortably (the fairest reference), else the model's own 16-bit type."""
    import psutil
    import torch

    weight_bytes = sum(p.stat().st_size for p in Path(model_dir).glob("*.safetensors"))
    return torch.float32 if 2 * weight_bytes < psutil.virtual_memory().available / 2 else "auto"


def eos_ids(generation_config, tokenizer) -> list[int]:
    """Every token that ends a turn: the generation config's (often several) and the tokenizer's."""
    ids = generation_config.eos_token_id if generation_config else None
    ids = [ids] if isinstance(ids, int) else list(ids or [])
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.insert(0, tokenizer.eos_token_id)
    return ids


def chat_texts(tokenizer) -> list[str]:
    """Rendered chat turns, with their special tokens, as the model sees them in training and use."""
    conversation = [
        {"role": "system", "content": "You are a careful assistant."},
        {"role": "user", "content": "What is 2 plus 3?"},
        {"role": "assistant", "content": "<reasoning>\n2 + 3 = 5\n</reasoning>\n<answer>\n5\n</answer>"},
    ]
    return [
        tokenizer.apply_chat_template(conversation, tokenize=False),
        tokenizer.apply_chat_template(conversation[:2], tokenize=False, add_generation_prompt=True),
    ]


def until_eos(tokens: list[int], eos: list[int]) -> list[int]:
    for i, token in enumerate(tokens):
        if token in eos:
            return tokens[: i + 1]
    return tokens
