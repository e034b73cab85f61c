"""A model's shape, read from its config.json alone (no weights downloaded), and its parameter counts.

    shape = read_shape("unsloth/Qwen2.5-1.5B-Instruct")   # local folder, HF cache, or the hub
    shape.total_params  # 1.54e9
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from kit.errors import KitError
from kit.hub import HubUnreachable, hub_config_file
from kit.plan.vision_tower import VisionShape, vision_shape

# Architectures whose MLP is up -> activation -> down, without the gate projection of SwiGLU models.
UNGATED_MLP = {"gpt2", "gpt_neox", "gptj", "phi", "starcoder2", "falcon", "opt", "bloom"}
QKV_BIAS_TYPES = ("qwen2", "qwen2_vl_text", "qwen2_5_vl_text")  # biased q, k, v projections that configs do not name
ATTENTION_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_MODULES = ("gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class ModelShape:
    model_type: str
    hidden: int  # H
    layers: int  # L
    intermediate: int  # I, per expert for mixture-of-experts models
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int  # V
    tied_embeddings: bool
    attention_bias: bool = False
    experts: int = 1  # mixture-of-experts: experts per layer
    experts_per_token: int = 1
    left_out: tuple[str, ...] = ()  # what the config holds that this shape does not count, in words
    vision: VisionShape | None = None  # a vision-language model's tower (kit.plan.vision_tower)
    image_tokens: int = 0  # what the pictures of one prompt add to it, when the plan knows their size

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def gated(self) -> bool:
        return self.model_type not in UNGATED_MLP

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer in one decoder block, by the names LoRA targets use."""
        shapes = {
            "q_proj": (self.hidden, self.q_dim),
            "k_proj": (self.hidden, self.kv_dim),
            "v_proj": (self.hidden, self.kv_dim),
            "o_proj": (self.q_dim, self.hidden),
            "up_proj": (self.hidden, self.intermediate),
            "down_proj": (self.intermediate, self.hidden),
        }
        if self.gated:
            shapes["gate_proj"] = (self.hidden, self.intermediate)
        return shapes

    @property
    def layer_linear_params(self) -> int:
        """Weights of one block's linear layers: what 4-bit quantization shrinks."""
        attention = sum(i * o for name, (i, o) in self.linear_shapes().items() if name in ATTENTION_MODULES)
        mlp = sum(i * o for name, (i, o) in self.linear_shapes().items() if name in MLP_MODULES)
        return attention + mlp * self.experts

    @property
    def embedding_params(self) -> int:
        """Input embedding plus the output head (once when tied): kept in 16-bit even in 4-bit models."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def small_params(self) -> int:
        """Norms, biases and routers: 16-bit, a rounding error next to the rest."""
        bias = (self.q_dim + 2 * self.kv_dim) if self.attention_bias else 0
        router = self.hidden * self.experts if self.experts > 1 else 0
        return self.layers * (2 * self.hidden + bias + router) + self.hidden

    @property
    def total_params(self) -> int:
        """The language model's: what 4-bit loading quantizes and LoRA adapts."""
        return self.layers * self.layer_linear_params + self.embedding_params + self.small_params

    @property
    def all_params(self) -> int:
        """With a vision-language model's tower and projector."""
        return self.total_params + (self.vision.params if self.vision else 0)


def shape_from_config(config: dict, processor: dict | None = None) -> ModelShape:
    """The shape from a config.json mapping, with the defaults transformers fills in for what the file leaves
    out (published Gemma 3 configs name 6 of their text model's keys). A vision-language model's tower is counted
    apart (`vision`; `processor`: its processor's settings, which size pictures); an audio tower is named in
    `left_out`, not counted."""
    filled, note = with_defaults(config)
    text = filled.get("text_config") or filled
    try:
        hidden, heads = text["hidden_size"], text["num_attention_heads"]
        experts = text.get("num_local_experts") or text.get("num_experts") or 1
        return ModelShape(
            model_type=text.get("model_type") or filled.get("model_type", "unknown"),
            hidden=hidden,
            layers=text["num_hidden_layers"],
            intermediate=(text.get("moe_intermediate_size") if experts > 1 else None) or text["intermediate_size"],
            heads=heads,
            kv_heads=text.get("num_key_value_heads") or heads,
            head_dim=text.get("head_dim") or hidden // heads,
            vocab=text["vocab_size"],
            tied_embeddings=bool(filled.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
            attention_bias=bool(text.get("attention_bias", text.get("model_type") in QKV_BIAS_TYPES)),
            experts=experts,
            experts_per_token=text.get("num_experts_per_tok") or 1,
            left_out=tuple(filter(None, [note, *towers_left_out(filled)])),
            vision=vision_shape(config, processor),
        )
    except KeyError as missing:
        raise KitError(f"config.json has no {missing} key: the planner reads decoder-only transformer configs "
                       f"(Llama, Qwen, Mistral, Gemma, Phi-3 and the like)") from None


def with_defaults(config: dict) -> tuple[dict, str | None]:
    """config.json as transformers reads it: its config class fills every key the file leaves out. A
    model_type transformers does not know is read as written, and said."""
    from transformers import AutoConfig

    model_type = config.get("model_type")
    try:
        filled = AutoConfig.for_model(model_type, **{k: v for k, v in config.items() if k != "model_type"})
    except (ValueError, KeyError, TypeError):
        return config, f"model_type '{model_type}' is unknown to transformers: config.json read as written"
    return filled.to_dict(), None


def towers_left_out(config: dict) -> list[str]:
    """Sub-models beside the text model that the plan does not count (an audio tower): loaded with it."""
    notes = []
    for key in ("audio_config",):
        tower = config.get(key)
        if isinstance(tower, dict) and tower.get("hidden_size") and tower.get("num_hidden_layers"):
            h, layers = tower["hidden_size"], tower["num_hidden_layers"]
            params = layers * (4 * h * h + 2 * h * tower.get("intermediate_size", 4 * h))
            notes.append(f"{key.split('_')[0]} tower ({tower.get('model_type', 'unknown')}, about {params / 1e9:.2f}B "
                         f"parameters, {2 * params / 2**30:.2f} GiB in 16-bit) is not counted: text training "
                         "leaves it frozen, but a multimodal loader keeps it in memory")
    return notes


def read_shape(name: str, picture_size: tuple[int, int] | None = None) -> ModelShape:
    """Read config.json from a local folder, the Hugging Face cache, or the hub (one small file). For a
    vision-language model, `picture_size` (width, height) sizes the image tokens each prompt carries."""
    from kit.models.names import resolve_model_name

    name = resolve_model_name(name)
    shape = shape_from_config(json.loads(config_path(name).read_text()), processor_settings(name))
    if shape.vision and picture_size:
        return replace(shape, image_tokens=shape.vision.tokens(*picture_size) or 0)
    return shape


def processor_settings(name: str) -> dict | None:
    """The image processor's settings beside config.json, in a local folder or the Hugging Face cache (never asked
    of the hub: the plan falls back on typical settings, and says so)."""
    from huggingface_hub import try_to_load_from_cache

    folder = Path(name).expanduser()
    for file in ("preprocessor_config.json", "processor_config.json"):
        try:
            path = folder / file if folder.is_dir() else try_to_load_from_cache(name, file)
        except ValueError:  # not a repo id the cache could hold
            return None
        if isinstance(path, str | Path) and Path(path).is_file():
            return json.loads(Path(path).read_text())
    return None


def config_path(name: str) -> Path:
    local = Path(name).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise KitError(f"{local} has no config.json; give the folder of a Hugging Face model")
        return local / "config.json"
    try:
        return hub_config_file(name)
    except HubUnreachable as err:
        raise KitError(f"cannot read config.json for '{name}': not a local folder, not in the Hugging Face cache, "
                       f"and the hub did not answer ({err}). Give a local folder holding the "
                       f"model's config.json, or check the model id.") from None
