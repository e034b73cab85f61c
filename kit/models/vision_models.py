"""Which models see images, and their processors.

    is_vision_model("kit:tiny-vision")   # True: its config.json has a vision_config
    processor = load_processor(path)     # AutoProcessor, or the same processor built without torchvision

A vision-language model is told apart by its config.json, which holds a `vision_config` (Qwen2.5-VL, Qwen3-VL,
Gemma 3, Idefics3/SmolVLM, Llava...). Its processor (tokenizer + image processor + chat template) takes the place
of the tokenizer everywhere a text model's tokenizer goes: TRL's trainers switch to their vision path when given
one. No torch or Unsloth is imported here.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from kit.errors import KitError

# Tokens a processor writes into a prompt for each image. A completion that holds one would ask the model's
# forward pass for an image that is not there (transformers raises in the middle of a GRPO step), so generation
# is never allowed to write them.
IMAGE_PLACEHOLDERS = ("<image>", "<fake_token_around_image>", "<global-img>", "<|image_pad|>", "<|vision_start|>",
                      "<|vision_end|>", "<image_soft_token>", "<start_of_image>", "<end_of_image>")


def model_config(name: str) -> dict | None:
    """A model's config.json as a dict: a local folder's, or a hub model's from the cache or the hub; None when
    neither can be read (the loader then says why, in its own words)."""
    from kit.hub import HubUnreachable, hub_config_file
    from kit.models.names import resolve_model_name

    resolved = resolve_model_name(name)
    path = Path(resolved) / "config.json"
    if not path.is_file():
        try:
            path = hub_config_file(resolved)
        except HubUnreachable:
            return None
    return json.loads(path.read_text())


def is_vision_model(name: str) -> bool:
    config = model_config(name)
    return bool(config and config.get("vision_config"))


def load_processor(path: str):
    """The model's processor. Without torchvision (this kit's CPU install: its wheel cannot load beside the CPU
    torch) transformers' AutoProcessor refuses every image processor, so the same processor is built from its
    parts with the image processor's PIL twin, which gives the same pixels to within resampling."""
    from transformers import AutoProcessor
    from transformers.utils import is_torchvision_available

    if is_torchvision_available():
        return AutoProcessor.from_pretrained(path)
    return processor_without_torchvision(path)


def processor_without_torchvision(path: str):
    import transformers
    from transformers import AutoConfig, AutoTokenizer
    from transformers.utils import cached_file

    found = cached_file(path, "processor_config.json", _raise_exceptions_for_missing_entries=False)
    if found is None:
        raise KitError(f"model {path} has no processor_config.json: a vision-language model needs its processor "
                       "(save it beside the weights with processor.save_pretrained)")
    settings = json.loads(Path(found).read_text())
    image_settings = settings.pop("image_processor", {})
    processor_class = getattr(transformers, settings.pop("processor_class"))
    model_type = AutoConfig.from_pretrained(path).model_type
    try:
        module = importlib.import_module(f"transformers.models.{model_type}.image_processing_pil_{model_type}")
    except ModuleNotFoundError:
        raise KitError(f"model {path} ({model_type}): its image processor needs torchvision, which this install "
                       "lacks, and transformers has no PIL version of it; on a CPU the kit's vision path takes "
                       "Idefics3 / SmolVLM models (a GPU install has torchvision)") from None
    pil_class = getattr(module, image_settings.get("image_processor_type", "").removesuffix("Fast") + "Pil")
    tokenizer = AutoTokenizer.from_pretrained(path)
    return processor_class(image_processor=pil_class.from_pretrained(path), tokenizer=tokenizer,
                           chat_template=tokenizer.chat_template, **settings)


def placeholder_ids(processor) -> list[int]:
    """The ids of the image placeholder tokens this processor's tokenizer has."""
    tokenizer = getattr(processor, "tokenizer", processor)
    vocab = tokenizer.get_vocab()
    return sorted(vocab[token] for token in IMAGE_PLACEHOLDERS if token in vocab)


def text_tokenizer(processing_class):
    """The tokenizer inside a processor, or the tokenizer itself."""
    return getattr(processing_class, "tokenizer", processing_class)


def is_processor(processing_class) -> bool:
    from transformers import ProcessorMixin

    return isinstance(processing_class, ProcessorMixin)


def placeholder_ban(processor, generation_kwargs: dict | None, vllm: bool) -> dict:
    """Generation settings that never write an image placeholder: transformers' suppress_tokens, or for vLLM a
    logit bias of -100 (its SamplingParams have no suppress list)."""
    ids = placeholder_ids(processor)
    settings = dict(generation_kwargs or {})
    if vllm:
        settings["logit_bias"] = {**settings.get("logit_bias", {}), **{i: -100.0 for i in ids}}
    else:
        settings["suppress_tokens"] = sorted({*settings.get("suppress_tokens", []), *ids})
    return settings
