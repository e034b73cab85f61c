"""`kit:tiny-reward`: a tiny reward model built on the spot, so the reward-model path runs offline on a CPU.

Its scores are meaningless: the weights are random (a fixed seed) and nothing was trained. It is there to show
that the path works end to end without a download (a recipe's REWARDS, `kit rewards check`, `kit plan`, a smoke
run, the tests): a 2-layer LlamaForSequenceClassification with one label (about 0.1M parameters), a byte-level
BPE tokenizer (any text tokenizes) and a ChatML chat template. Built once and cached, as kit/models/tiny.py
builds the tiny chat model (kit.rewards sits above kit.models, so it builds its own small tokenizer rather than
import that one's).

    python -c "from kit.rewards.reward_models.tiny import tiny_reward_path; print(tiny_reward_path())"
"""

from __future__ import annotations

from pathlib import Path

from kit.atomic import build_locked
from kit.cache import cache_dir

TINY_REWARD = "kit:tiny-reward"
_VERSION = 1  # bump when the recipe below changes, so caches rebuild
VOCAB = 384  # 256 bytes, 4 special tokens, merges up to here
CHATML_TEMPLATE = (  # the template of kit/models/tiny.py
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<pad>", "<s>", "<|im_start|>", "<|im_end|>"]  # ids 0..3
_CORPUS = [
    "You are a helpful assistant. Answer the question.",
    "<reasoning>\nThink step by step.\n</reasoning>\n<answer>\n42\n</answer>",
    "system user assistant question answer reasoning the a of to and in is was for on that with",
    "What is 4 plus 7 plus 2? The total is 13. 0 1 2 3 4 5 6 7 8 9 10 100 = + - * / ( ) . , ? ! :",
]


def tiny_reward_config(num_labels: int = 1) -> dict:
    """config.json of the tiny reward model, without building it (`kit plan` reads this)."""
    return {
        "architectures": ["LlamaForSequenceClassification"], "model_type": "llama", "vocab_size": VOCAB,
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 4096, "tie_word_embeddings": False,
        "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 3, "num_labels": num_labels,
    }


def tiny_reward_path() -> Path:
    """Path of the cached tiny reward model, building it first if needed."""
    path = cache_dir() / f"tiny-reward-v{_VERSION}"
    if not (path / "config.json").exists():
        build_tiny_reward_model(path)
    return path


def build_tiny_reward_model(path: Path, seed: int = 0, num_labels: int = 1, chat_template: bool = True) -> Path:
    """The tiny classifier and its tokenizer in `path` (once across processes: kit.atomic.build_locked).
    num_labels and chat_template other than the defaults make the ones the tests refuse or warn about."""

    def build(tmp: Path) -> None:
        import torch
        from transformers import LlamaConfig, LlamaForSequenceClassification

        tokenizer = _tokenizer(chat_template)
        torch.manual_seed(seed)
        settings = {k: v for k, v in tiny_reward_config(num_labels).items() if k not in ("architectures", "model_type")}
        model = LlamaForSequenceClassification(LlamaConfig(**settings))
        model.save_pretrained(tmp)  # fp32: 0.4 MB
        tokenizer.save_pretrained(tmp)

    build_locked(Path(path), build)
    return Path(path)


def _tokenizer(chat_template: bool):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(_CORPUS * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", bos_token="<s>",
                                        eos_token="<|im_end|>", additional_special_tokens=SPECIAL_TOKENS[2:])
    if chat_template:
        tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer
