"""A reward model of the policy's family scores the same after Unsloth has loaded that policy as in a process
Unsloth never touched: `kit:tiny-reward` (a LlamaForSequenceClassification) beside a Llama policy. Each side runs
in a fresh process (nothing unpatches a class) and prints the reward model's scores and the classes it ran.

Unsloth patches a family's transformers classes process-wide when it loads a policy of that family, but how
depends on its backend (read in unsloth 2026.10.9):
- Its CPU backend (unsloth/_cpu_init.py, unsloth_zoo/cpu), the one this machine runs, never imports
  unsloth/models/llama.py: no pre_patch runs, the classes keep transformers' forwards. It changes the policy's own
  instance (unsloth_zoo/cpu/loader.py: a chunked loss on its forward, frozen bf16 linears) and process-wide
  settings (trainer defaults). The first test loads a tiny Llama policy through the kit's loader and generates
  with it, so it guards that none of that reaches a same-family reward model, now or if that backend starts
  patching classes.
- On a GPU, FastLlamaModel.from_pretrained runs FastLlamaModel.pre_patch (likewise for Qwen2, Qwen3, Mistral,
  Gemma): Unsloth's forwards on LlamaModel, LlamaDecoderLayer and LlamaAttention, gated so that a module Unsloth
  did not load runs transformers' own (_gate_pre_patch_to_unsloth_models), and Unsloth's LlamaRotaryEmbedding put
  into transformers.models.llama.modeling_llama, not gated: every Llama built afterwards got it, a reward model
  too, and its cos/sin cache sits on the current CUDA device whatever the model's. That sequence imports and runs
  on a CPU too, so the second test runs it here (without a GPU model, which would need CUDA), then the reward
  model: kit.rewards.reward_models.load builds it with transformers' own classes, else it would fail here as
  a reward model on device="cpu" beside a GPU policy would, and its scores must equal the unpatched ones.
What neither shows: the numbers on a GPU (16-bit, CUDA kernels) and Unsloth's other GPU-only process-wide patches
(torch functions, attention back ends); those need this comparison run on a GPU, with a 16-bit tolerance.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kit.rewards.reward_models.tiny import TINY_REWARD, tiny_reward_path
from tests.conftest import REPO

PROMPTS = [
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 4 plus 7?"}],
    [{"role": "user", "content": "Name a colour."}],
]
REPLIES = ["11", "It is 11.", "", "<reasoning>\n4 + 7 = 11\n</reasoning>\n<answer>\n11\n</answer>", "blue", "x" * 300]
CHATS = [(prompt, reply) for prompt in PROMPTS for reply in REPLIES]

# Every side computes in fp32 on this CPU with transformers' forwards, so the scores should agree to the last bit;
# the tolerance lets through only another summation order (another thread count: fp32 rounding, ~1e-7 relative).
# A forward that computes differently moves them far more: this model's logits lie in -0.15..0.07, and loading it
# in fp16 moves them by up to 1.9e-4, in bf16 by 2.3e-3 (measured), 20x and 200x the tolerance.
TOLERANCE = dict(rtol=1e-5, atol=1e-5)
LLAMA = "transformers.models.llama.modeling_llama"

SCORE = textwrap.dedent(
    """
    import json, sys
    side, chats, policy = sys.argv[1], json.loads(sys.argv[2]), None
    if side == "gpu-pre-patch":  # what FastLlamaModel.from_pretrained does to transformers on a GPU before it loads
        from kit.models.before_unsloth import before_unsloth
        before_unsloth()  # as the kit's every import of Unsloth: on an AVX2 CPU its vLLM probe dies of SIGILL without
        import unsloth  # noqa: F401  (its CPU backend here; the GPU route's module below imports on a CPU too)
        from unsloth.models import llama as fast
        patcher = fast.FastLlamaModel
        fast._restore_uncompiled_transformers_classes(patcher)
        snapshot = fast._snapshot_transformers_modules(patcher)
        patcher.pre_patch()
        fast._record_pre_patch_changes(snapshot)
        fast._gate_pre_patch_to_unsloth_models(snapshot)
    elif side:  # a Llama policy loaded by Unsloth through the kit's loader, which then generates once
        from kit.config import ModelConfig
        from kit.models.loader import load_model
        cfg = ModelConfig(name=side, max_seq_length=256, fast_inference=False, lora_rank=4, lora_alpha=8)
        model, tokenizer = load_model(cfg, seed=0)
        prompt = tokenizer.apply_chat_template(chats[0][0], add_generation_prompt=True, return_tensors="pt",
                                               return_dict=True)
        model.generate(**prompt, max_new_tokens=4, do_sample=False)
        policy = type(getattr(model, "get_base_model", lambda: model)()).__name__
    from transformers.models.llama import modeling_llama as llama
    from kit.rewards import reward_model
    fn = reward_model(sys.argv[3], device="cpu", batch_size=4)
    scores = fn(prompts=[p for p, _ in chats], completions=[[{"role": "assistant", "content": r}] for _, r in chats])
    names = ("LlamaModel", "LlamaDecoderLayer", "LlamaAttention", "LlamaRMSNorm", "LlamaForSequenceClassification")
    forwards = {n: getattr(llama, n).forward.__module__ + "." + getattr(llama, n).forward.__qualname__ for n in names}
    forwards["LlamaRotaryEmbedding"] = llama.LlamaRotaryEmbedding.__module__  # what a model built now would get
    model = fn.scorer.loaded.model
    print("RESULT " + json.dumps({"scores": scores, "policy": policy, "unsloth": "unsloth" in sys.modules,
                                  "dtype": str(model.dtype), "forwards": forwards,
                                  "reward_model_rotary": type(model.model.rotary_emb).__module__}))
    """
)


def score_in_a_fresh_process(side: str) -> dict:
    """side: "" (Unsloth never imported), a policy's folder, or "gpu-pre-patch"."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "UNSLOTH_DISABLE_STATISTICS": "1"}  # KIT_CACHE comes along: the models built for this session
    tiny_reward_path()  # built here once, so no side builds it
    result = subprocess.run([sys.executable, "-c", SCORE, side, json.dumps(CHATS), TINY_REWARD], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=500, check=False)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert result.returncode == 0 and lines, (
        f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    scored = json.loads(lines[-1].removeprefix("RESULT "))
    print(f"{side or 'unpatched'}: {scored}")
    return scored


@pytest.fixture(scope="module")
def unpatched():
    scored = score_in_a_fresh_process("")
    assert not scored["unsloth"] and scored["dtype"] == "torch.float32", "the unpatched side imported Unsloth"
    assert len(set(scored["scores"])) > 3, "the scores hardly differ, so equal scores would show little"
    return scored


def assert_same_scores(beside: dict, alone: dict) -> None:
    difference = np.max(np.abs(np.array(alone["scores"]) - np.array(beside["scores"])))
    assert np.allclose(beside["scores"], alone["scores"], **TOLERANCE), (
        f"Unsloth changed a same-family reward model's scores by up to {difference:.3g}; forwards unpatched "
        f"{alone['forwards']}, after {beside['forwards']}")


@pytest.mark.slow
def test_the_same_scores_after_unsloth_loaded_a_policy_of_its_family(unpatched, tiny_model):
    beside = score_in_a_fresh_process(str(tiny_model))
    assert beside["unsloth"] and beside["policy"] == "LlamaForCausalLM", "the policy was not a Llama loaded by Unsloth"
    assert beside["dtype"] == "torch.float32"
    assert_same_scores(beside, unpatched)


@pytest.mark.slow
@pytest.mark.gpu_route
def test_the_same_scores_after_the_gpu_route_patched_its_family(unpatched):
    beside = score_in_a_fresh_process("gpu-pre-patch")
    assert beside["forwards"]["LlamaModel"].startswith("unsloth."), "pre_patch did not patch LlamaModel"
    assert beside["forwards"]["LlamaRotaryEmbedding"] == "unsloth.models.llama", (
        "pre_patch no longer replaces the rotary embedding: check whether kit.rewards.reward_models.load still must "
        "build reward models with transformers' classes")
    assert beside["reward_model_rotary"] == unpatched["reward_model_rotary"] == LLAMA
    assert_same_scores(beside, unpatched)
