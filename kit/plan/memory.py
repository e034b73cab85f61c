"""Peak GPU memory of a GRPO run, as a sum of named terms, each a small function of the config and shape.

    estimate = estimate_memory(cfg, read_shape(cfg.model.name))
    for term in estimate.terms: print(term.name, term.gib, term.why)

A run has phases that never hold their working memory at the same time: generating completions (the KV
cache), scoring them when a reward is a reward model (kit.rewards.reward_model: one forward pass's working
set), and the training step (activations and the loss's logits). Everything else is static: the CUDA context,
the weights, the LoRA weights with their gradients and optimizer state, a reward model's weights, and with vLLM
its reserved activations and KV cache. Peak = static + the largest phase.

`stack="unsloth"` is what the kit runs: vLLM shares the training weights, checkpoints are offloaded to
CPU RAM, the GRPO loss computes logits one completion at a time. `stack="trl"` is plain TRL with
FlashAttention 2 for comparison: vLLM holds a second copy of the weights, all logits at once,
checkpoints stay on the GPU. Sizes are in GiB (2**30 bytes), as nvidia-smi and torch report them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kit.config import RunConfig
from kit.plan.gpus import GIB
from kit.plan.shapes import ModelShape

Stack = Literal["unsloth", "trl"]
Phase = Literal["static", "generation", "scoring", "training"]
PHASES = ("generation", "scoring", "training")  # one after another in each step; none overlaps another

BF16 = 2  # bytes per 16-bit value
NF4_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)  # 4-bit value + 8-bit scale per 64 + fp32 scale per 256 blocks
CUDA_CONTEXT_GIB = 0.5  # driver context + cuBLAS workspace, outside PyTorch's allocator
VLLM_PROFILE_TOKENS = 8192  # the prefill batch vLLM profiles its activations with (Unsloth's default)
VLLM_MAX_SEQS = 256  # sequences vLLM samples at once: its sampler holds fp32 logits for each
VLLM_CUDA_GRAPHS_GIB = 0.6  # decode graphs for batch sizes up to 128+: 0.64 GiB logged for Phi-4 on a T4


@dataclass(frozen=True)
class Term:
    name: str
    gib: float
    phase: Phase
    why: str


@dataclass
class Estimate:
    terms: list[Term] = field(default_factory=list)

    def total(self, phase: Phase) -> float:
        return sum(t.gib for t in self.terms if t.phase == phase)

    @property
    def largest_phase(self) -> float:
        return max(self.total(phase) for phase in PHASES)

    @property
    def peak_gib(self) -> float:
        return self.total("static") + self.largest_phase

    def term(self, name: str) -> Term:
        return next(t for t in self.terms if t.name == name)


def gib(n_bytes: float) -> float:
    return n_bytes / GIB


# --- static terms ---------------------------------------------------------------------------------


def cuda_context() -> Term:
    return Term("CUDA context", CUDA_CONTEXT_GIB, "static", "driver and cuBLAS workspace; PyTorch does not see it")


def model_weights(shape: ModelShape, load_in_4bit: bool, name: str = "weights") -> Term:
    linear = shape.layers * shape.layer_linear_params
    if load_in_4bit:  # embeddings, the output head and norms stay 16-bit in bitsandbytes 4-bit models
        size = linear * NF4_BYTES + (shape.embedding_params + shape.small_params) * BF16
        why = f"{linear / 1e9:.2f}B linear weights in NF4 + {shape.embedding_params / 1e9:.2f}B embeddings in 16-bit"
    else:
        size = shape.total_params * BF16
        why = f"{shape.total_params / 1e9:.2f}B parameters in 16-bit"
    return Term(name, gib(size), "static", why)


def vision_weights(shape: ModelShape) -> Term:
    params = shape.vision.params
    return Term("vision tower", gib(params * BF16), "static",
                f"{params / 1e9:.2f}B parameters ({shape.vision.model_type}'s tower and projector) counted in "
                "16-bit: at most what it takes, as 4-bit loading may quantize some of its layers")


def lora_params(shape: ModelShape, rank: int, target_modules: list[str]) -> int:
    """LoRA's A (in x r) and B (r x out) for each targeted linear layer of every block."""
    per_layer = sum(rank * (i + o) for name, (i, o) in shape.linear_shapes().items() if name in target_modules)
    return shape.layers * per_layer


def optimizer_bytes(optim: str) -> int:
    """Adam's two moments per trainable parameter: 1 byte each for 8-bit optimizers, else 4."""
    return 2 if "8bit" in optim else 8


def trainable_state(cfg: RunConfig, shape: ModelShape) -> Term:
    """Trainable weights with their gradients and optimizer state."""
    optim = optimizer_bytes(cfg.grpo.optim)
    if cfg.model.full_finetuning:  # weights already counted; 16-bit gradients
        n = shape.all_params
        return Term("trainable state", gib(n * (BF16 + optim)), "static",
                    f"full fine-tuning: {n / 1e9:.2f}B 16-bit gradients + {optim}-byte optimizer state each")
    n = lora_params(shape, cfg.model.lora_rank, cfg.model.target_modules)
    return Term("LoRA + optimizer", gib(n * (4 + 4 + optim)), "static",
                f"{n / 1e6:.1f}M LoRA parameters: fp32 weight and gradient + {optim}-byte optimizer state")


def kv_cache_bytes_per_token(shape: ModelShape) -> int:
    return 2 * shape.layers * shape.kv_dim * BF16  # K and V, every layer, 16-bit


def vllm_activations(shape: ModelShape) -> Term:
    """What vLLM sets aside for one prefill batch and its sampler, measured by its profiling run."""
    forward = VLLM_PROFILE_TOKENS * (2 * shape.hidden + 3 * shape.intermediate * shape.experts_per_token) * BF16
    sampler = VLLM_MAX_SEQS * shape.vocab * 4
    return Term("vLLM activations", gib(forward + sampler), "static",
                f"one {VLLM_PROFILE_TOKENS}-token prefill and the sampler's fp32 logits for {VLLM_MAX_SEQS} sequences")


def vllm_cuda_graphs() -> Term:
    return Term("vLLM CUDA graphs", VLLM_CUDA_GRAPHS_GIB, "static",
                "captured decode steps; vLLM counts them in its share")


def vllm_kv_cache(shape: ModelShape, cfg: RunConfig) -> Term:
    """vLLM needs room for one whole sequence to start; it queues the rest of the batch when short."""
    tokens = cfg.model.max_seq_length
    return Term("vLLM KV cache (minimum)", gib(tokens * kv_cache_bytes_per_token(shape)), "static",
                f"one {tokens}-token sequence; more cache lets vLLM run more of the batch at once")


# --- the generation phase (without vLLM) ----------------------------------------------------------


def generation_sequences(cfg: RunConfig) -> int:
    """Completions one process generates per optimizer step (TRL's steps_per_generation = accumulation)."""
    return cfg.grpo.per_device_train_batch_size * cfg.grpo.gradient_accumulation_steps


def generation_kv_cache(shape: ModelShape, cfg: RunConfig) -> Term:
    """transformers' generate() holds the KV cache of every sequence in the generation batch at once."""
    sequences = generation_sequences(cfg)
    tokens = sequences * sequence_length(cfg, shape)
    return Term("KV cache (generate)", gib(tokens * kv_cache_bytes_per_token(shape)), "generation",
                f"{sequences} sequences x {sequence_length(cfg, shape)} tokens")


# --- the training phase ---------------------------------------------------------------------------


def sequence_length(cfg: RunConfig, shape: ModelShape) -> int:
    """Prompt, its pictures' image tokens, and completion, within the model's max_seq_length."""
    prompt = cfg.data.max_prompt_length + shape.image_tokens
    return min(prompt + cfg.grpo.max_completion_length, cfg.model.max_seq_length)


def saved_per_token_per_layer(shape: ModelShape, stack: Stack) -> int:
    """16-bit values one decoder block keeps for its backward pass, per token.

    Frozen-weight matmuls keep nothing; LoRA keeps its input. Eager transformers (trl): each RMSNorm keeps
    its fp32 input (2H), the attention and MLP inputs (H each), FlashAttention q, k, v and output
    (2H + 2kv), SwiGLU's gate, activation, up and product (4I). Unsloth's fused kernels keep each norm's
    16-bit input (H each) and only gate and up of the MLP (2I).
    """
    h, kv, i = shape.hidden, shape.kv_dim, shape.intermediate * shape.experts_per_token
    mlp = (4 if stack == "trl" else 2) * i if shape.gated else (3 if stack == "trl" else 2) * i
    norms = 4 * h if stack == "trl" else 2 * h
    return norms + 2 * h + (2 * h + 2 * kv) + mlp


def activations(shape: ModelShape, cfg: RunConfig, stack: Stack) -> Term:
    """Activations of one micro-batch (per_device_train_batch_size completions, prompt + completion)."""
    tokens = cfg.grpo.per_device_train_batch_size * sequence_length(cfg, shape)
    one_layer = tokens * saved_per_token_per_layer(shape, stack) * BF16
    checkpoints = tokens * shape.hidden * BF16 * shape.layers  # each block's input, kept for recomputation
    mode = cfg.model.gradient_checkpointing
    if stack == "trl" and mode == "unsloth":  # offloading is Unsloth's; plain TRL checkpoints on the GPU
        mode = "true"
    if mode == "false":
        size, why = one_layer * shape.layers, "no checkpointing: every block's activations"
    elif mode == "true":
        size, why = checkpoints + one_layer, "checkpoints on the GPU + one block recomputed"
    else:  # Unsloth streams each checkpoint to CPU RAM; two staging buffers stay on the GPU
        size, why = 2 * tokens * shape.hidden * BF16 + one_layer, "checkpoints offloaded to CPU + one block recomputed"
    return Term("activations", gib(size), "training", f"{tokens} tokens; {why}")


def loss_logits(shape: ModelShape, cfg: RunConfig, stack: Stack) -> Term:
    """The GRPO loss needs logits over the vocabulary for each completion token, and their gradient."""
    completions = cfg.grpo.per_device_train_batch_size
    rows = 1 if stack == "unsloth" else completions  # Unsloth's GRPO loss: one completion at a time
    size = 2 * rows * cfg.grpo.max_completion_length * shape.vocab * BF16
    how = "one completion at a time" if rows == 1 else f"all {completions} completions at once"
    return Term("loss logits", gib(size), "training",
                f"logits and their gradient, {cfg.grpo.max_completion_length} tokens x {shape.vocab} vocab, {how}")


# --- the sum --------------------------------------------------------------------------------------


def estimate_memory(cfg: RunConfig, shape: ModelShape, stack: Stack = "unsloth",
                    reward_model_terms: tuple[Term, ...] = ()) -> Estimate:
    """reward_model_terms: the weights and the scoring phase of the reward models the rewards load
    (kit.plan.reward_models.reward_model_terms); they do not change with the run's settings."""
    m = cfg.model
    terms = [cuda_context(), model_weights(shape, m.load_in_4bit)]
    terms += [vision_weights(shape)] if shape.vision else []
    terms.append(trainable_state(cfg, shape))
    if m.fast_inference:
        if stack == "trl":  # TRL's colocated vLLM loads the model again, 16-bit
            terms.append(model_weights(shape, load_in_4bit=False, name="vLLM weights (second copy)"))
        terms += [vllm_activations(shape), vllm_cuda_graphs(), vllm_kv_cache(shape, cfg)]
    else:
        terms.append(generation_kv_cache(shape, cfg))
    terms += reward_model_terms
    terms += [activations(shape, cfg, stack), loss_logits(shape, cfg, stack)]
    return Estimate(terms)
