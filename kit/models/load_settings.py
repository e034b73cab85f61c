"""The loaders' shared reading of ModelConfig: whether vLLM can generate, the weights' dtype, checkpointing, and
the one message for a model that cannot be found. Shared by kit.models.loader and kit.models.vision_loader."""

from __future__ import annotations

from kit import env
from kit.config import ModelConfig
from kit.errors import KitError, first_line


def fast_inference_available(cfg: ModelConfig) -> bool:
    """Whether vLLM generation can be used as asked; says why not, in one line, when it cannot."""
    if not cfg.fast_inference:
        return False
    if env.vllm_usable():
        return True
    if not env.has_gpu():
        print("loader: model.fast_inference=true needs a GPU (vLLM); none here, so generation uses "
              "transformers instead. Set model.fast_inference=false to silence this.")
    else:
        print("loader: model.fast_inference=true needs vLLM, which is not installed (pip install -e '.[gpu]'); "
              "generation uses transformers instead.")
    return False


def weights_dtype(cfg: ModelConfig, cuda: bool):
    import torch

    if cfg.dtype != "auto":
        return getattr(torch, cfg.dtype)
    if not cuda:
        return torch.float32
    return torch.bfloat16 if env.bf16_supported() else torch.float16


def cannot_load(cfg: ModelConfig, err: OSError) -> KitError:  # not on the hub, no network, no cached copy
    return KitError(f"cannot load model {cfg.name} ({str(err).splitlines()[0]}); offline, give a local folder "
                    "with MODEL=path, or run PROFILE=smoke for the kit's tiny model")


def checkpointing(value: str):
    return {"unsloth": "unsloth", "true": True, "false": False}[value]


def vllm_failed(what: str, err: Exception) -> KitError:
    gpu = env.gpu_name() or "no GPU"
    return KitError(f"vLLM's engine failed to {what} on this GPU ({gpu}): {type(err).__name__}: {first_line(err)}. "
                    "Nothing was trained. Train without vLLM: model.fast_inference=false (make train "
                    "ARGS='model.fast_inference=false'; generation with transformers, several times slower per "
                    "step, the same training otherwise)")
