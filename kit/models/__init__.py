"""Models: the training loader (loader.py, Unsloth), inference (inference.py, vllm_engine.py), generation
(generate.py; vision_generate.py for prompts with pictures), which models see images (vision_models.py), names
and the kit's own tiny and offline models."""


def import_unsloth_first(vllm_standby: bool = False) -> None:
    """Import Unsloth, through the kit's loader, before TRL or transformers' trainers are: it patches them when it
    is imported, and code imported earlier keeps the unpatched classes. `kit train` calls this once, before its
    memory plan (which reads config.json with transformers) and before anything that trains is imported.

    vllm_standby: Unsloth reads UNSLOTH_VLLM_STANDBY when imported (vLLM's memory freed while training runs).
    """
    import os

    if vllm_standby:
        os.environ["UNSLOTH_VLLM_STANDBY"] = "1"
    import kit.models.loader  # noqa: F401  (imports unsloth, then torch)
