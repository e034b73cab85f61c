"""A tiny chat model built on the spot, so the whole pipeline runs offline on a CPU.

The smoke profile and the tests use it instead of a hub model: a 2-layer Llama (a few hundred
thousand parameters) with a SentencePiece tokenizer trained on a fixed corpus and a ChatML chat
template. It learns nothing useful; it exists so that loading, GRPO, merging and exporting can be
exercised end to end with no network. Built once and cached (see `tiny_model_path`).

    python -c "from kit.tiny import tiny_model_path; print(tiny_model_path())"
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from pathlib import Path

TINY_MODEL_NAME = "kit:tiny-llama"
_VERSION = 1  # bump when the recipe below changes, so caches rebuild

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|im_start|>", "<|im_end|>"]

# Enough text for the tokenizer to learn words, digits and the tags the recipes ask for; anything
# else still tokenizes through byte fallback.
_CORPUS = [
    "You are a helpful assistant. Respond in the following format:",
    "<reasoning>\nThink step by step.\n</reasoning>\n<answer>\n42\n</answer>",
    "system user assistant question answer reasoning the a of to and in is was for on that with",
    "What is 4 plus 7 plus 2? How many apples does she have left? The total is 13.",
    "Natalia sold clips to 48 of her friends in April, and then half as many in May.",
    "Tom has 12 marbles. He gives 5 to Ann. 12 - 5 = 7. He has 7 marbles left.",
    "A shirt costs $15 and a hat costs $8. Together they cost $23. That is 35% off.",
    "def add(a, b):\n    return a + b\n```python\nprint(add(1, 2))\n```",
    '{"name": "Ada", "age": 36, "city": "London"}',
    "0 1 2 3 4 5 6 7 8 9 10 100 1,000 3/4 0.5 -3 = + - * / ( ) . , ? ! :",
]


def cache_dir() -> Path:
    """Where the kit keeps things it builds once (override with KIT_CACHE)."""
    return Path(os.environ.get("KIT_CACHE", Path.home() / ".cache" / "grpo-kit"))


def tiny_model_path() -> Path:
    """Path of the cached tiny model, building it first if needed."""
    path = cache_dir() / f"tiny-llama-v{_VERSION}"
    if not (path / "config.json").exists():
        build_tiny_model(path)
    return path


def build_tiny_model(path: Path, seed: int = 0) -> Path:
    """Build the tiny model and tokenizer into `path` (atomically: a temp dir renamed at the end)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=path.parent))
    try:
        tokenizer = _build_tokenizer(tmp)
        _build_model(tmp, vocab_size=len(tokenizer), tokenizer=tokenizer, seed=seed)
        if path.exists():  # another process built it meanwhile
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def _build_tokenizer(out: Path):
    import sentencepiece as spm
    from transformers import AutoTokenizer

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_CORPUS * 20),
        model_writer=model,
        vocab_size=512,
        model_type="bpe",
        byte_fallback=True,  # any text tokenizes, even characters never seen
        split_digits=True,  # one token per digit: arithmetic stays learnable
        user_defined_symbols=SPECIAL_TOKENS,
        unk_id=0, bos_id=1, eos_id=2, pad_id=3,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    (out / "tokenizer.model").write_bytes(model.getvalue())
    # transformers converts the SentencePiece file into a fast tokenizer when it sees no tokenizer.json
    config = {
        "tokenizer_class": "LlamaTokenizer",
        "bos_token": "<s>", "eos_token": "<|im_end|>", "unk_token": "<unk>", "pad_token": "<pad>",
        "add_bos_token": False, "add_eos_token": False,
        "chat_template": CHATML_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    tokenizer = AutoTokenizer.from_pretrained(out)
    tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.save_pretrained(out)
    return tokenizer


def _build_model(out: Path, vocab_size: int, tokenizer, seed: int) -> None:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,  # multiples of 64: bitsandbytes' 4-bit block size
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.save_pretrained(out)
