"""A tiny vision-language model built on the spot, so the vision pipeline runs offline on a CPU.

`kit:tiny-vision` is an Idefics3 (SmolVLM's architecture) from random weights: a SigLIP-style vision tower of
2 layers, 64 wide, reading 64x64 images in 8x8 patches; a pixel-shuffle connector that folds each 2x2 block of
patches into one of 16 image tokens; a 4-layer Llama, 128 wide, as the language model. The tokenizer is the
kit's tiny SentencePiece one (kit.models.tiny) with Idefics3's image tokens added, and its chat template takes a
message's content as text or as a list of parts ({"type": "image"}, {"type": "text", ...}), the form TRL gives
a vision-language model.

Idefics3 because its processor runs without torchvision, which this CPU stack cannot load beside its torch
(Qwen2-VL's and SmolVLM's processors need a video processor, and that needs torchvision), and because llama.cpp's
converter writes a vision projector (mmproj) for it. Built once and cached.

    python -c "from kit.models.tiny_vision import tiny_vision_path; print(tiny_vision_path())"
"""

from __future__ import annotations

from pathlib import Path

from kit.atomic import build_locked
from kit.cache import cache_dir

_VERSION = 1  # bump when the recipe below changes, so caches rebuild

IMAGE_SIZE, PATCH, SCALE = 64, 8, 2
IMAGE_TOKENS = (IMAGE_SIZE // PATCH) ** 2 // SCALE**2  # image tokens per image after the pixel shuffle
IMAGE_SPECIAL_TOKENS = ["<fake_token_around_image>", "<image>", "<global-img>", "<end_of_utterance>"]

VISION_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<image>' }}{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def tiny_vision_path() -> Path:
    path = cache_dir() / f"tiny-vision-v{_VERSION}"
    if not (path / "config.json").exists():
        build_tiny_vision_model(path)
    return path


def build_tiny_vision_model(path: Path, seed: int = 0) -> Path:
    """Model, tokenizer and processor into `path`, once across processes (kit.atomic.build_locked)."""

    def build(tmp: Path) -> None:
        from kit.models.tiny import build_tokenizer

        print(f"model: building the kit's tiny vision-language model in {path} (once: random weights)", flush=True)
        tokenizer = build_tokenizer(tmp)
        tokenizer.add_tokens(IMAGE_SPECIAL_TOKENS, special_tokens=True)
        tokenizer.chat_template = VISION_CHAT_TEMPLATE
        processor = _processor(tokenizer)
        _model(tokenizer, seed).save_pretrained(tmp)
        processor.save_pretrained(tmp)

    build_locked(Path(path), build)
    return Path(path)


def _processor(tokenizer):
    from transformers import Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    edge = {"longest_edge": IMAGE_SIZE}  # one image of IMAGE_SIZE, never split into tiles
    images = Idefics3ImageProcessorPil(do_image_splitting=False, size=edge, max_image_size=edge)
    return Idefics3Processor(image_processor=images, tokenizer=tokenizer, image_seq_len=IMAGE_TOKENS,
                             chat_template=VISION_CHAT_TEMPLATE)


def _model(tokenizer, seed: int):
    import torch
    from transformers import GenerationConfig, Idefics3Config, Idefics3ForConditionalGeneration, LlamaConfig

    torch.manual_seed(seed)
    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
           "pad_token_id": tokenizer.pad_token_id}
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
                       tie_word_embeddings=False, **ids)
    vision = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "image_size": IMAGE_SIZE, "patch_size": PATCH}
    config = Idefics3Config(vision_config=vision, text_config=text.to_dict(), scale_factor=SCALE,
                            image_token_id=tokenizer.convert_tokens_to_ids("<image>"), tie_word_embeddings=False,
                            **ids)
    model = Idefics3ForConditionalGeneration(config)
    model.generation_config = GenerationConfig(**ids)
    return model.to(torch.float32)
