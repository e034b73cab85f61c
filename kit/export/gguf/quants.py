"""Quantization names: llama.cpp's, plus the aliases Unsloth's `save_pretrained_gguf` accepts."""

from __future__ import annotations

from kit.errors import KitError

# Written directly by the converter.
CONVERTER_TYPES = ("f32", "f16", "bf16", "q8_0")
# Made by llama.cpp's quantizer from an f16 / bf16 file.
QUANTIZER_TYPES = (
    "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_0", "q4_1", "q4_k_s", "q4_k_m", "q5_0", "q5_1", "q5_k_s", "q5_k_m",
    "q6_k",
)
# Unsloth's names for the same files.
ALIASES = {"not_quantized": "f16", "fast_quantized": "q8_0", "quantized": "q4_k_m", "q4_k": "q4_k_m", "q5_k": "q5_k_m"}
# Quantizations whose greedy output must match the 16-bit model token for token; lower ones are reported.
EXACT = ("f32", "f16", "bf16", "q8_0")


def normalize(name: str) -> str:
    """'Q4_K_M', 'quantized' or 'q4_k' -> 'q4_k_m'; an unknown name gets the list of valid ones."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key in CONVERTER_TYPES or key in QUANTIZER_TYPES:
        return key
    if key.startswith("iq"):
        raise KitError(f"quantization '{name}' needs an importance matrix, which the kit does not compute; "
                       f"use a k-quant such as q4_k_m")
    valid = ", ".join(CONVERTER_TYPES + QUANTIZER_TYPES + tuple(ALIASES))
    raise KitError(f"unknown quantization '{name}'; choose from: {valid}")


def file_name(model_name: str, quant: str) -> str:
    """Unsloth's naming: `<name>.Q4_K_M.gguf`."""
    return f"{model_name}.{quant.upper()}.gguf"


def llama_ftype(quant: str) -> int:
    import llama_cpp

    return getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{quant.upper()}")
