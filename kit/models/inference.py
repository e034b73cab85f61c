"""Loading a trained model for evaluation and chat: merged folder, or base + LoRA adapter.

On a GPU with vLLM, Unsloth's loader with fast_inference=True and the adapter folder as vLLM's LoRARequest;
elsewhere plain transformers (+ PEFT for an adapter), float32 on a CPU. With an adapter, the base
model's outputs are one `disable_adapter()` away, so baseline and trained share one load.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kit import env
from kit.errors import KitError
from kit.models.names import base_16bit_name
from kit.models.tokenizer import with_pad_token


@dataclass
class Loaded:
    model: object
    tokenizer: object
    lora_request: object = None  # vLLM only
    adapter: str | None = None

    @contextmanager
    def baseline(self):
        """The base model's behaviour: the adapter switched off (transformers) or not requested (vLLM)."""
        if self.adapter is None or self.lora_request is not None:
            yield None
        else:
            with self.model.disable_adapter():
                yield None


def adapter_base(adapter: str) -> str:
    config = Path(adapter) / "adapter_config.json"
    if not config.is_file():
        raise KitError(f"{adapter} is not a LoRA adapter folder (no adapter_config.json)")
    return json.loads(config.read_text())["base_model_name_or_path"]


def load_for_inference(model_name: str | None, adapter: str | None = None, max_seq_length: int = 2048) -> Loaded:
    if model_name is None:
        if adapter is None:
            raise KitError("give --model (a merged folder or hub id), --adapter (a LoRA folder), or both")
        # the 16-bit weights the merge uses, not Unsloth's '-bnb-4bit' copy the adapter may have trained on
        model_name = base_16bit_name(adapter_base(adapter))
    from kit.models.names import resolve_model_name

    path = resolve_model_name(model_name)
    if env.vllm_usable():
        return _load_vllm(path, adapter, max_seq_length)
    if env.has_gpu():
        print("inference: vLLM is not installed; generating with transformers (slower)")
    return _load_transformers(path, adapter)


def _load_transformers(path: str, adapter: str | None) -> Loaded:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer_source = adapter if adapter and (Path(adapter) / "tokenizer_config.json").exists() else path
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)
    dtype = "auto" if env.has_gpu() else torch.float32
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, device_map="auto" if env.has_gpu() else None)
    except OSError as err:
        raise KitError(f"cannot load model {path} ({str(err).splitlines()[0]})") from None
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    return Loaded(model.eval(), with_pad_token(tokenizer), adapter=adapter)


def _load_vllm(path: str, adapter: str | None, max_seq_length: int) -> Loaded:
    from kit.models.training import FastLanguageModel

    rank = json.loads((Path(adapter) / "adapter_config.json").read_text())["r"] if adapter else 16
    model, tokenizer = FastLanguageModel.from_pretrained(model_name=path, max_seq_length=max_seq_length,
                                                         load_in_4bit=False, fast_inference=True, max_lora_rank=rank)
    return Loaded(model, tokenizer, lora_request=saved_adapter_request(adapter) if adapter else None, adapter=adapter)


def saved_adapter_request(adapter: str):
    """vLLM reads a saved adapter from its folder. (Unsloth's model.load_lora exists only on a model that went
    through get_peft_model; a model loaded for inference has none.)"""
    from vllm.lora.request import LoRARequest

    return LoRARequest(lora_name=Path(adapter).name or "adapter", lora_int_id=1, lora_path=str(Path(adapter).resolve()))


