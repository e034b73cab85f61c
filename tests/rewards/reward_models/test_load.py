"""kit.rewards.reward_models.load on a GPU that is not there: the dtype a reward model loads in follows the policy's
rule (bf16 where the GPU computes it natively, fp16 on a T4, fp32 on the CPU), from the rule's table down to the
dtype that reaches from_pretrained and the weights; and it is built with transformers' classes where Unsloth put
its own into the family's module for a policy (the real patch: test_beside_policy.py)."""

import pytest
import torch
from transformers import AutoModelForSequenceClassification

from kit import env
from kit.config import ModelConfig
from kit.models.load_settings import weights_dtype
from kit.rewards.reward_models import load
from kit.rewards.reward_models.tiny import build_tiny_reward_model

CUDA = torch.device("cuda", 0)
GPUS = pytest.mark.parametrize("native_bf16", [True, False], ids=["ampere-or-newer", "t4"])


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    return build_tiny_reward_model(tmp_path_factory.mktemp("rm") / "tiny-reward", seed=1)


@GPUS
@pytest.mark.parametrize("target", [CUDA, torch.device("cpu")], ids=["cuda", "cpu"])
def test_the_dtype_is_the_policys_on_every_device(monkeypatch, native_bf16, target):
    monkeypatch.setattr(env, "bf16_supported", lambda: native_bf16)
    policy = weights_dtype(ModelConfig(dtype="auto"), cuda=target.type == "cuda")
    assert load.reward_model_dtype(target) == policy
    expected = torch.float32 if target.type == "cpu" else torch.bfloat16 if native_bf16 else torch.float16
    assert policy == expected, "the policy's rule changed: check that a reward model should still follow it"


@GPUS
def test_load_reward_model_asks_from_pretrained_for_that_dtype(monkeypatch, classifier, native_bf16):
    monkeypatch.setattr(env, "bf16_supported", lambda: native_bf16)
    monkeypatch.setattr(load, "pick_device", lambda device: CUDA)  # a GPU, as far as the loader sees
    asked = record_loads(monkeypatch)
    loaded = load.load_reward_model(str(classifier), device="cuda")
    expected = torch.bfloat16 if native_bf16 else torch.float16
    assert asked == {"dtype": expected, "moved_to": CUDA}, f"from_pretrained and .to were asked {asked}"
    assert loaded.model.dtype == expected and loaded.device == CUDA
    assert not loaded.model.training and not any(p.requires_grad for p in loaded.model.parameters())


def record_loads(monkeypatch) -> dict:
    """from_pretrained as it is (on the CPU), with the dtype it was asked for recorded; the model's move to the
    fake GPU recorded instead of made."""
    original = AutoModelForSequenceClassification.from_pretrained
    asked = {}

    def from_pretrained(path, **kwargs):
        asked["dtype"] = kwargs.get("dtype")
        model = original(path, **kwargs)

        def to(device, *args, **kw):
            asked["moved_to"] = device
            return model

        model.to = to
        return model

    monkeypatch.setattr(AutoModelForSequenceClassification, "from_pretrained", from_pretrained)
    return asked


def test_it_is_built_with_the_classes_unsloth_replaced_for_a_policy_and_leaves_them_replaced(monkeypatch, classifier):
    from transformers.models.llama import modeling_llama as llama

    class UnslothRotary(llama.LlamaRotaryEmbedding):  # stands in for the one Unsloth's pre_patch puts there on a GPU
        pass

    original = llama.LlamaRotaryEmbedding
    monkeypatch.setattr(llama, "LlamaRotaryEmbedding", UnslothRotary)
    monkeypatch.setattr(llama, "_unsloth_pre_patch_originals", ({"LlamaRotaryEmbedding": original}, {}), raising=False)
    loaded = load.load_reward_model(str(classifier), device="cpu")
    assert type(loaded.model.model.rotary_emb) is original
    assert llama.LlamaRotaryEmbedding is UnslothRotary, "the policy's family lost Unsloth's class"
