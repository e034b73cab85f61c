"""A rank of a multi-process run loads a vision-language model as it loads a text one (issue 56, item 9):
transformers + PEFT on the rank's own device, never Unsloth's FastVisionModel, which places the model for one GPU
and would start a vLLM engine in every rank."""

from types import SimpleNamespace

import pytest

from kit import env, ranks
from kit.config import ModelConfig
from kit.models import loader, vision_loader
from kit.models.vision_models import is_processor

TINY = ModelConfig(name="kit:tiny-vision", target_modules=["q_proj", "v_proj"], max_seq_length=96)


def single_process_route(*args, **kwargs):
    raise AssertionError("a rank took the single-process vision route (FastVisionModel)")


@pytest.fixture
def in_a_rank(monkeypatch):
    """A rank on a machine with a GPU, as far as the loader's routing can tell; torch itself still sees none, so
    the weights stay on the CPU, where a CPU rank keeps them."""
    import unsloth

    monkeypatch.setattr(ranks, "in_worker", lambda: True)
    monkeypatch.setattr(env, "has_gpu", lambda: True)  # outside a rank this goes to FastVisionModel
    monkeypatch.setattr(vision_loader, "load_vision_model", single_process_route)
    monkeypatch.setattr(vision_loader, "load_with_unsloth", single_process_route)
    monkeypatch.setattr(unsloth, "FastVisionModel", SimpleNamespace(from_pretrained=single_process_route,
                                                                    get_peft_model=single_process_route))


def test_a_rank_loads_a_vision_model_with_transformers_and_peft(in_a_rank):
    model, processor = loader.load_model(TINY, seed=5)
    assert is_processor(processor)  # TRL's trainer takes its vision path from the processor
    assert type(model.get_base_model()).__name__ == "Idefics3ForConditionalGeneration"
    lora = [name for name, _ in model.named_parameters() if "lora_A" in name]
    assert lora and all(".text_model." in name for name in lora), lora  # the language layers, as on one process
    assert {name.split(".")[-4] for name in lora} == {"q_proj", "v_proj"}
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    assert model.max_seq_length == 96  # where Unsloth's SFT trainer reads it, as FastVisionModel sets it


def test_every_rank_starts_from_the_same_vision_adapter(in_a_rank):
    first, _ = loader.load_model(TINY, seed=5)
    second, _ = loader.load_model(TINY, seed=5)
    adapters = [{k: v for k, v in m.state_dict().items() if "lora_" in k} for m in (first, second)]
    assert adapters[0].keys() == adapters[1].keys() and adapters[0]
    assert all(adapters[0][k].equal(adapters[1][k]) for k in adapters[0])
