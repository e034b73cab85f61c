"""The tiny vision-language model and the processor the kit builds without torchvision."""

import pytest
from PIL import Image

from kit.errors import KitError
from kit.models.tiny_vision import IMAGE_TOKENS, tiny_vision_path
from kit.models.vision_models import (
    is_processor,
    is_vision_model,
    load_processor,
    placeholder_ban,
    placeholder_ids,
    processor_without_torchvision,
)


@pytest.fixture(scope="module")
def processor():
    return load_processor(str(tiny_vision_path()))


def test_vision_models_are_told_apart_by_their_config(tmp_path):
    assert is_vision_model("kit:tiny-vision")
    assert not is_vision_model("kit:tiny-llama")
    with pytest.raises(KitError, match="does not exist"):
        is_vision_model(str(tmp_path / "nowhere-on-disk-or-hub"))


def test_the_processor_is_built_from_its_parts_without_torchvision(processor):
    from transformers.utils import is_torchvision_available

    assert not is_torchvision_available()  # this CPU stack: AutoProcessor would refuse
    assert is_processor(processor) and type(processor.image_processor).__name__ == "Idefics3ImageProcessorPil"
    assert processor.image_seq_len == IMAGE_TOKENS
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "How many?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    batch = processor(text=[text], images=[[Image.new("RGB", (64, 64), "white")]], return_tensors="pt")
    image_id = processor.tokenizer.convert_tokens_to_ids("<image>")
    assert (batch["input_ids"] == image_id).sum() == IMAGE_TOKENS
    assert tuple(batch["pixel_values"].shape[-2:]) == (64, 64)


def test_a_folder_without_a_processor_is_one_line(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "idefics3"}')
    with pytest.raises(Exception, match="no processor_config.json"):
        processor_without_torchvision(str(tmp_path))


def test_generation_never_writes_an_image_placeholder(processor):
    ids = placeholder_ids(processor)
    assert len(ids) == 3  # <image>, <fake_token_around_image>, <global-img>
    assert placeholder_ban(processor, {"top_k": 5}, vllm=False) == {"top_k": 5, "suppress_tokens": ids}
    assert placeholder_ban(processor, None, vllm=True) == {"logit_bias": {i: -100.0 for i in ids}}


def test_the_tiny_vision_model_loads_with_the_image_text_to_text_class():
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(tiny_vision_path())
    assert type(model).__name__ == "Idefics3ForConditionalGeneration"
    assert model.config.text_config.vocab_size == len(load_processor(str(tiny_vision_path())).tokenizer)
