"""The model's training state, kept across a held-out check: what generation changes, put back when it ends.

    with training_state_kept(model, tokenizer):
        evaluate(model, tokenizer, ...)   # kit.train.evaluation scores the in-memory model this way
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from kit.plan.device_memory import engine_asleep

# What Unsloth's generate leaves on the modules of a model it was given in eval mode (unsloth/models/llama.py,
# unsloth_fast_generate; vision.py, unsloth_base_fast_generate): for_inference's mode, gradient-checkpointing flag
# (off) and `_flag_for_generation` (with use_cache on, a forward takes the decoding path), and the KV cache its
# decoding keeps on each attention module until the next forward.
MODULE_STATE = ("training", "gradient_checkpointing", "_flag_for_generation")
DECODE_BUFFERS = ("paged_attention", "paged_attention_K", "paged_attention_V", "temp_QA", "temp_KV", "temp_O", "RH_Q",
                  "attention")
ENVIRONMENT = ("UNSLOTH_RETURN_HIDDEN_STATES",)  # FastBaseModel.for_inference sets it to "0"
ABSENT = object()  # an attribute the object did not hold itself


@contextmanager
def training_state_kept(model, tokenizer):
    """Score the model in the block, then put back what generation changed: each module's mode, gradient
    checkpointing and generation flags (and no decoding buffers), each config's `use_cache`, the tokenizers' padding
    side; a vLLM engine that slept (model.vllm_standby) is put back to sleep.

    Unsloth's generate calls for_inference and calls for_training after only if the model was training; the kit
    generates in eval mode, so nothing is put back, and vLLM's generate wakes the engine and leaves it awake. The
    next rollout calls for_training, but with num_iterations > 1 or steps_per_generation >
    gradient_accumulation_steps the steps after a check train on buffered rollouts first: without checkpointing,
    with the KV cache on and vLLM awake, in more memory than the plan and the memory probe allowed.
    """
    every = list(model.modules()) if hasattr(model, "modules") else []  # a stand-in for a model may have none
    modules = [(m, own_attributes(m, MODULE_STATE + DECODE_BUFFERS)) for m in every]
    configs = [(c, own_attributes(c, ("use_cache",))) for c in model_configs(model)]
    tokenizers = [(t, own_attributes(t, ("padding_side",))) for t in generation_tokenizers(every, tokenizer)]
    environment = {name: os.environ.get(name) for name in ENVIRONMENT}
    engine = getattr(model, "vllm_engine", None)
    was_asleep = engine_asleep(engine)
    try:
        yield
    finally:
        for thing, attributes in [*modules, *configs, *tokenizers]:
            put_back(thing, attributes)
        for name, value in environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if was_asleep:
            back_to_sleep(engine)


def own_attributes(thing, names) -> dict:
    """The values `thing` holds itself, not its class's defaults nor what a PEFT wrapper forwards from the model
    inside it: for_inference's `m.gradient_checkpointing = False` on a wrapper gives it a flag of its own, dropped
    again when put back."""
    return {name: vars(thing).get(name, ABSENT) for name in names}


def put_back(thing, attributes: dict) -> None:
    for name, value in attributes.items():
        if value is ABSENT:
            vars(thing).pop(name, None)
        else:
            vars(thing)[name] = value


def model_configs(model) -> list:
    """The model's config and the configs nested in it (a text_config, a vision_config), each once."""
    from transformers import PretrainedConfig

    found, stack = {}, [getattr(model, "config", None)]
    while stack:
        config = stack.pop()
        if isinstance(config, PretrainedConfig) and id(config) not in found:
            found[id(config)] = config
            stack += list(vars(config).values())
    return list(found.values())


def generation_tokenizers(modules: list, tokenizer) -> list:
    """The tokenizers whose padding side generation sets: the kit's (the one in a processor too), and the one
    Unsloth keeps on the model (`_saved_temp_tokenizer`, the same object on a GPU, padded on the left by
    for_inference)."""
    from kit.models.vision_models import text_tokenizer

    kept = [vars(m).get("_saved_temp_tokenizer") for m in modules]
    unique = {id(t): t for t in [tokenizer, text_tokenizer(tokenizer), *kept] if hasattr(t, "padding_side")}
    return list(unique.values())


def back_to_sleep(engine) -> None:
    """Put back to sleep an engine that generation woke (Unsloth's vLLM generate wakes a sleeping engine and leaves
    it awake, unsloth_zoo/vllm_utils.py). Level 1, as in Unsloth's own calls: its allocator leaves the weights it shares
    with training in place at either level, and the KV cache is freed at both."""
    if not engine_asleep(engine):
        engine.sleep(1)
