import json

import pytest

from kit.errors import KitError
from kit.plan.shapes import read_shape, shape_from_config
from tests.plan.conftest import MODEL_CONFIGS


@pytest.mark.parametrize("model, billions", [
    ("Qwen2.5-1.5B-Instruct", 1.54), ("Qwen2.5-3B-Instruct", 3.09), ("Llama-3.1-8B-Instruct", 8.03), ("phi-4", 14.66),
    ("Qwen3-4B", 4.02), ("Phi-4-mini-instruct", 3.84),
    ("gemma-3-4b-it", 3.88),  # the text model: 4.30B published, less the vision tower (0.42B)
])
def test_parameter_counts_match_the_published_sizes(model, billions):
    assert read_shape(str(MODEL_CONFIGS / model)).total_params / 1e9 == pytest.approx(billions, abs=0.01)


def test_parameter_count_matches_the_real_tiny_model(tiny_model):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    assert read_shape(str(tiny_model)).total_params == model.num_parameters()


def test_config_is_read_from_the_hugging_face_cache_without_the_hub(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--someone--Some-Model" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text((MODEL_CONFIGS / "Qwen2.5-1.5B-Instruct" / "config.json").read_text())
    (tmp_path / "hub" / "models--someone--Some-Model" / "refs").mkdir()
    (tmp_path / "hub" / "models--someone--Some-Model" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert read_shape("someone/Some-Model").hidden == 1536


def test_a_model_that_cannot_be_found_gets_one_clear_message(monkeypatch, tmp_path):
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(KitError, match="cannot read config.json for 'nobody/nothing'"):
        read_shape("nobody/nothing")


def test_a_folder_without_config_and_a_config_without_keys_are_refused(tmp_path):
    with pytest.raises(KitError, match="no config.json"):
        read_shape(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "custom_thing", "hidden_size": 64}))
    with pytest.raises(KitError, match="no 'num_attention_heads' key"):
        read_shape(str(tmp_path))


def test_a_sparse_config_gets_the_defaults_transformers_gives_it():
    gemma = read_shape(str(MODEL_CONFIGS / "gemma-3-4b-it"))
    assert (gemma.heads, gemma.kv_heads, gemma.head_dim, gemma.vocab) == (8, 4, 256, 262208)
    assert gemma.tied_embeddings  # Gemma ties its head to its embedding; the file does not say so
    assert len(gemma.left_out) == 1 and gemma.left_out[0].startswith("vision tower (siglip_vision_model, about 0.4")
    assert read_shape(str(MODEL_CONFIGS / "Qwen3-4B")).left_out == ()


def test_a_model_type_transformers_does_not_know_is_read_as_written_and_said():
    text = json.loads((MODEL_CONFIGS / "Llama-3.1-8B-Instruct" / "config.json").read_text())
    shape = shape_from_config({**text, "model_type": "someones_llama"})
    assert shape.hidden == 4096 and "unknown to transformers" in shape.left_out[0]


def test_multimodal_configs_contribute_their_text_model():
    text = json.loads((MODEL_CONFIGS / "Llama-3.1-8B-Instruct" / "config.json").read_text())
    shape = shape_from_config({"model_type": "some_vlm", "text_config": text})
    assert shape.hidden == 4096 and shape.layers == 32
