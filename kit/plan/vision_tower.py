"""A vision-language model's vision side for the memory plan: the tower's parameters, and the image tokens one
picture of a given size becomes in the prompt.

    vision = vision_shape(config, processor)     # config.json and the processor's settings, as dicts
    vision.params                                # 668,684,288 for Qwen2.5-VL-3B: the tower and its projector
    vision.tokens(640, 480)                      # 384 image tokens, as the processor resizes the picture

The parameters are counted exactly: transformers builds the model on the meta device (no memory, no weights) and
the language model's share is taken out. The image tokens follow each family's processor:
- Qwen2-VL, Qwen2.5-VL, Qwen3-VL: the picture is resized to a multiple of patch x merge pixels within the
  processor's min and max pixels (transformers' own `smart_resize`), one token per merged patch.
- Idefics3 / SmolVLM: each tile of max_image_size pixels is image_seq_len tokens; with image splitting a picture
  is cut into tiles after its longest edge is resized, plus one global tile.
- Gemma 3: every picture is mm_tokens_per_image tokens (pan and scan off, its default).
Other families: the tower is counted, the tokens are not (`tokens` returns None), and the plan says so.
"""

from __future__ import annotations

from dataclasses import dataclass

QWEN_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe")
IDEFICS_TYPES = ("idefics3", "smolvlm")


@dataclass(frozen=True)
class VisionShape:
    model_type: str
    params: int  # the vision tower and its projector into the language model
    family: str  # "qwen", "idefics3", "gemma3" or "other": how pictures become tokens
    processor: dict  # the image processor's settings that size pictures (from the processor's file, or defaults)

    def tokens(self, width: int, height: int) -> int | None:
        """Image tokens one width x height picture becomes in the prompt; None when the family is not known."""
        p = self.processor
        if self.family == "qwen":
            from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

            factor = p["patch_size"] * p["merge_size"]
            h, w = smart_resize(height, width, factor, p["min_pixels"], p["max_pixels"])
            return (h // factor) * (w // factor)
        if self.family == "idefics3":
            return idefics3_tiles(width, height, p) * p["image_seq_len"]
        if self.family == "gemma3":
            return p["mm_tokens_per_image"]
        return None

    @property
    def sizing(self) -> str:
        """How the processor sizes pictures, in words, for the plan's page."""
        p = self.processor
        if self.family == "qwen":
            return (f"resized to a multiple of {p['patch_size'] * p['merge_size']} px within {p['min_pixels']:,} to "
                    f"{p['max_pixels']:,} pixels ({p['source']})")
        if self.family == "idefics3":
            split = f"split into {p['tile']} px tiles + a global one" if p["splitting"] else "not split"
            return (f"{p['image_seq_len']} tokens a tile; longest edge to {p['longest_edge']} px, {split} "
                    f"({p['source']})")
        if self.family == "gemma3":
            return f"{p['mm_tokens_per_image']} tokens a picture, whatever its size"
        return "unknown to the kit: image tokens are not counted"


def idefics3_tiles(width: int, height: int, p: dict) -> int:
    """Tiles one picture is cut into, counted by transformers' own Idefics3 image processor (1 when not split)."""
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    processor = Idefics3ImageProcessorPil(do_image_splitting=p["splitting"], size={"longest_edge": p["longest_edge"]},
                                          max_image_size={"longest_edge": p["tile"]})
    tiles, _, _ = processor.get_number_of_image_patches(height, width, {})
    return max(tiles, 1)


def vision_shape(config: dict, processor: dict | None) -> VisionShape | None:
    """The vision side of a config.json (None for a text model). `processor`: the processor's settings file
    (preprocessor_config.json, or processor_config.json's "image_processor"), None when it is not at hand."""
    if not isinstance(config.get("vision_config"), dict):
        return None
    model_type = config.get("model_type", "unknown")
    family, settings = image_sizing(model_type, config, processor or {})
    return VisionShape(model_type, vision_params(config), family, settings)


def image_sizing(model_type: str, config: dict, processor: dict) -> tuple[str, dict]:
    source = "the model's processor settings" if processor else "no processor file found: typical settings assumed"
    image = processor.get("image_processor", processor)
    if model_type in QWEN_TYPES:
        vision = config["vision_config"]
        size = image.get("size") or {}
        return "qwen", {
            "patch_size": image.get("patch_size") or vision.get("patch_size", 14),
            "merge_size": image.get("merge_size") or vision.get("spatial_merge_size", 2),
            "min_pixels": image.get("min_pixels") or size.get("shortest_edge") or 56 * 56,
            "max_pixels": image.get("max_pixels") or size.get("longest_edge") or 28 * 28 * 1280,
            "source": source}
    if model_type in IDEFICS_TYPES:
        vision = config["vision_config"]
        tile = (image.get("max_image_size") or {}).get("longest_edge") or vision.get("image_size", 512)
        patches = (vision.get("image_size", tile) // vision.get("patch_size", 16)) ** 2
        per_tile = patches // config.get("scale_factor", 2) ** 2
        return "idefics3", {
            "image_seq_len": processor.get("image_seq_len") or per_tile, "tile": tile,
            "longest_edge": (image.get("size") or {}).get("longest_edge") or 4 * tile,
            "splitting": image.get("do_image_splitting", True), "source": source}
    if model_type == "gemma3":
        return "gemma3", {"mm_tokens_per_image": config.get("mm_tokens_per_image", 256)}
    return "other", {}


def vision_params(config: dict) -> int:
    """Every parameter outside the language model and its output head: built on the meta device by transformers,
    so the count is the model's own, whatever the tower's architecture."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    try:
        settings = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
        with torch.device("meta"):
            model = AutoModelForImageTextToText.from_config(settings)
    except (ValueError, KeyError, TypeError):  # a family transformers cannot build: its tower's blocks, roughly
        return rough_tower_params(config["vision_config"])
    decoder = model.get_decoder()
    head = model.get_output_embeddings()
    text = sum(p.numel() for p in decoder.parameters())
    if head is not None and head.weight is not decoder.get_input_embeddings().weight:
        text += head.weight.numel()
    return sum(p.numel() for p in model.parameters()) - text


def rough_tower_params(tower: dict) -> int:
    """Attention (4 h^2) and MLP (2 h I) of each block: the bulk of any vision transformer."""
    h = tower.get("hidden_size") or tower.get("embed_dim") or 0
    layers = tower.get("num_hidden_layers") or tower.get("depth") or 0
    return layers * (4 * h * h + 2 * h * tower.get("intermediate_size", 4 * h))
