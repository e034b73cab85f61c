"""SentencePiece tokenizers (the Llama-2 / Mistral family) as llama.cpp's converter must read them.

The converter types each piece of `tokenizer.model` from the file itself, then upgrades added tokens
to CONTROL from `added_tokens_decoder` in tokenizer_config.json. transformers 5 no longer writes that
key, so ChatML tokens that are user-defined pieces land in the GGUF as NORMAL text and llama.cpp
spells `<|im_start|>` out character by character. Second, llama.cpp puts a space before every text
segment that follows a special token (`add_space_prefix`, default on), while transformers' Metaspace
`prepend_scheme="first"` adds it only at the very start of the input: in a chat prompt, never.

`converter_input` gives the converter a folder that says both things explicitly: the model folder's
files linked, and a tokenizer_config.json with the added tokens and `add_prefix_space` as the HF
tokenizer behaves. The model folder itself is left as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

SPACE = "\u2581"  # SentencePiece's visible space


def is_sentencepiece(model_dir: Path) -> bool:
    return (Path(model_dir) / "tokenizer.model").is_file()


def added_tokens(tokenizer) -> list[str]:
    """Tokens both tokenizers cut out of text before tokenizing the rest (special or user-defined)."""
    return [t.content for t in tokenizer.added_tokens_decoder.values() if t.content != tokenizer.unk_token]


def space_rules(tokenizer) -> tuple[bool, bool]:
    """(space added at the start of the input, space added after an added token), as transformers does it."""
    special = next(iter(added_tokens(tokenizer)), None)
    at_start = tokenizer.tokenize("a")[0].startswith(SPACE)
    if special is None:
        return at_start, at_start
    after = tokenizer.tokenize(special + "a")
    return at_start, len(after) > 1 and after[1].startswith(SPACE)


def converter_input(model_dir: Path, staging: Path) -> Path:
    """The folder to hand the converter: `model_dir` itself, or for SentencePiece a linked copy that spells
    out added-token types and the space rule."""
    model_dir = Path(model_dir)
    if not is_sentencepiece(model_dir):
        return model_dir
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    folder = Path(staging) / ".converter-input"
    folder.mkdir()
    for item in model_dir.iterdir():
        if item.name != "tokenizer_config.json":
            (folder / item.name).symlink_to(item.resolve())
    config_path = model_dir / "tokenizer_config.json"
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    config["added_tokens_decoder"] = {
        str(token_id): {"content": token.content, "special": token.special}
        for token_id, token in tokenizer.added_tokens_decoder.items()
    }
    # llama.cpp's only rule is "a space after every special token"; a chat prompt starts with one, so
    # match transformers there. A prefix transformers adds only at the input's start has no GGUF equivalent.
    config["add_prefix_space"] = space_rules(tokenizer)[1]
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False))
    return folder
