"""Every generation path hands its engine the same prompt tokens that training's rollouts use.

Training renders a prompt with TRL's `GRPOTrainer._tokenize_prompts` (Unsloth's generated trainer keeps it);
evaluation and chat go through kit.models.generate to transformers, the kit's vLLM engine, or, during a GPU run,
Unsloth's vLLM engine (`fast_generate`). Stand-ins record what reaches each engine, as vLLM would tokenize it:
a text prompt with add_special_tokens=True (vllm/renderers/base.py), a token prompt as it is.

Three tokenizers, built here offline: a Llama-3-style one (its chat template writes a BOS and the tokenizer
adds one more to any text it encodes with special tokens, so a text prompt gets two), a Qwen-style one (no
BOS at all) and the kit's tiny one.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

from kit import env
from kit.models import generate as gen
from kit.models.vllm_engine import VllmEngine

pytestmark = pytest.mark.gpu_route

PROMPTS = [
    [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is 2 plus 3?"}],
    [{"role": "user", "content": "Name a colour, then explain why you chose it."}],  # longer: left padding
]
SAMPLING = gen.Sampling(max_new_tokens=8)
REPLY = "Five."

LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_level_tokenizer(folder: Path, specials: list[str], chat_template: str, eos: str, bos: str | None = None):
    """A byte-level BPE tokenizer (no merges: every byte a token, so any text encodes), saved and loaded back
    with AutoTokenizer as vLLM and the kit load a model's; with `bos`, a post-processor adds it, as Llama-3's does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={byte: i for i, byte in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(specials)
    if bos:
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, backend.token_to_id(bos))])
    PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=bos, eos_token=eos, pad_token=eos,
                            chat_template=chat_template).save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def llama3_tokenizer(tmp_path_factory):
    specials = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    return byte_level_tokenizer(tmp_path_factory.mktemp("llama3"), specials, LLAMA3_TEMPLATE, eos="<|eot_id|>",
                                bos="<|begin_of_text|>")


@pytest.fixture(scope="module")
def qwen_tokenizer(tmp_path_factory):
    return byte_level_tokenizer(tmp_path_factory.mktemp("qwen"), ["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
                                QWEN_TEMPLATE, eos="<|im_end|>")


@pytest.fixture(params=["llama3_tokenizer", "qwen_tokenizer", "tiny_tokenizer"])
def tokenizer(request):
    return request.getfixturevalue(request.param)


def as_vllm_tokenizes_it(tokenizer, prompt) -> list[int]:
    """The ids vLLM 0.31 generates from: a text prompt encoded with special tokens added, a token prompt as given."""
    if isinstance(prompt, str):
        return tokenizer(prompt, add_special_tokens=True)["input_ids"]
    return list(prompt["prompt_token_ids"])


def vllm_output(ids: list[int]):
    """A vllm.RequestOutput, as far as the kit reads it; `text` is not what batch_decode gives."""
    return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, text="vLLM's own detokenized text")])


def reply_ids(tokenizer) -> list[int]:
    return tokenizer(REPLY, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]


class RecordingLLM:
    """vllm.LLM behind the kit's VllmEngine."""

    def __init__(self, tokenizer):
        self.tokenizer, self.seen = tokenizer, []

    def generate(self, prompts, sampling_params=None, use_tqdm=False, lora_request=None):
        self.seen += [as_vllm_tokenizes_it(self.tokenizer, p) for p in prompts]
        return [vllm_output(reply_ids(self.tokenizer)) for _ in prompts]


class UnslothModelWithVLLM:
    """A model Unsloth loaded with fast_inference: its vLLM engine is reached through fast_generate."""

    vllm_engine = object()

    def __init__(self, tokenizer):
        self.tokenizer, self.seen = tokenizer, []

    def fast_generate(self, prompts, sampling_params=None, lora_request=None):
        self.seen += [as_vllm_tokenizes_it(self.tokenizer, p) for p in prompts]
        return [vllm_output(reply_ids(self.tokenizer)) for _ in prompts]


class RecordingTransformersModel:
    """A transformers model's generate: records each row's prompt (its padding dropped by the mask)."""

    training, device = False, "cpu"

    def __init__(self, tokenizer):
        self.tokenizer, self.seen = tokenizer, []

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    def generate(self, input_ids, attention_mask, **kwargs):
        import torch

        self.seen += [row[mask.bool()].tolist() for row, mask in zip(input_ids, attention_mask)]
        reply = torch.tensor([reply_ids(self.tokenizer)] * len(input_ids))
        return torch.cat([input_ids, reply], dim=1)


def training_rollout_ids(tokenizer, prompts) -> list[list[int]]:
    """TRL's own tokenization of a GRPO batch, called on a stand-in holding the attributes it reads
    (a plain text model, no tools, no environments, the tokenizer's own template, no template options)."""
    from trl.trainer.grpo_trainer import GRPOTrainer

    trainer = SimpleNamespace(processing_class=tokenizer, _is_vlm=False, environment_factories=None, tools=None,
                              chat_template=None, chat_template_kwargs={})
    prompt_ids, _, _ = GRPOTrainer._tokenize_prompts(trainer, prompts)
    return [list(ids) for ids in prompt_ids]


def test_unsloths_trainer_keeps_trls_prompt_tokenization():
    """Unsloth rewrites GRPOTrainer's source on a GPU; were it to replace _tokenize_prompts, the path above
    would no longer be training's."""
    package = Path(importlib.util.find_spec("unsloth").origin).parent
    rewriters = [package / "models" / "rl.py", package / "models" / "rl_replacements.py"]
    assert all(path.is_file() for path in rewriters), f"Unsloth's trainer rewriters moved: {rewriters}"
    assert not [p.name for p in rewriters if "_tokenize_prompts" in p.read_text()], \
        "Unsloth now rewrites _tokenize_prompts: call its generated trainer's here instead of TRL's"


def test_the_llama3_style_tokenizer_would_get_two_bos_from_text(llama3_tokenizer, qwen_tokenizer):
    """What lets the test below fail: vLLM's text path doubles this tokenizer's BOS (and adds none to Qwen's)."""
    text = gen.render(llama3_tokenizer, PROMPTS[:1])[0]
    bos = llama3_tokenizer.bos_token_id
    assert text.startswith(llama3_tokenizer.bos_token), "the template no longer writes a BOS"
    assert llama3_tokenizer(text, add_special_tokens=True)["input_ids"][:2] == [bos, bos]
    assert qwen_tokenizer.bos_token_id is None


def test_every_generation_path_gets_trainings_prompt_tokens(tokenizer, monkeypatch):
    trained_on = training_rollout_ids(tokenizer, PROMPTS)
    bos = tokenizer.bos_token_id
    assert bos is None or all(ids.count(bos) <= 1 for ids in trained_on), "training's own prompts have two BOS"

    transformers_model = RecordingTransformersModel(tokenizer)
    gen.generate(transformers_model, tokenizer, PROMPTS, SAMPLING, progress=False)

    kit_engine = RecordingLLM(tokenizer)
    gen.generate(VllmEngine(kit_engine), tokenizer, PROMPTS, SAMPLING, progress=False)

    monkeypatch.setattr(env, "vllm_usable", lambda: True)  # a GPU run: Unsloth's engine
    unsloth_model = UnslothModelWithVLLM(tokenizer)
    gen.generate(unsloth_model, tokenizer, PROMPTS, SAMPLING)
    unsloth_rollouts = UnslothModelWithVLLM(tokenizer)
    gen.generate_ids(unsloth_rollouts, tokenizer, gen.prompt_token_ids(tokenizer, PROMPTS), SAMPLING)

    seen = {"transformers eval": transformers_model.seen, "the kit's vLLM engine": kit_engine.seen,
            "fast_generate (generate)": unsloth_model.seen, "fast_generate (generate_ids)": unsloth_rollouts.seen}
    differ = {path: ids for path, ids in seen.items() if ids != trained_on}
    assert not differ, f"prompt tokens differ from training's {trained_on}: {differ}"


def test_every_generation_path_decodes_replies_alike(tokenizer, monkeypatch):
    """The reply's ids decoded by batch_decode on every path; vLLM's own detokenized text is not used."""
    expected = tokenizer.batch_decode([reply_ids(tokenizer)] * len(PROMPTS), skip_special_tokens=True)
    hf = gen.generate(RecordingTransformersModel(tokenizer), tokenizer, PROMPTS, SAMPLING, progress=False)
    kit_vllm = gen.generate(VllmEngine(RecordingLLM(tokenizer)), tokenizer, PROMPTS, SAMPLING, progress=False)
    monkeypatch.setattr(env, "vllm_usable", lambda: True)
    unsloth_vllm = gen.generate(UnslothModelWithVLLM(tokenizer), tokenizer, PROMPTS, SAMPLING)
    assert hf == kit_vllm == unsloth_vllm == expected, (hf, kit_vllm, unsloth_vllm)
