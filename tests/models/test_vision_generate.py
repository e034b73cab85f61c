"""Generation with pictures: the image parts go where TRL puts them, and a model that would rather write an image
placeholder never gets to."""

import pytest
import torch
from PIL import Image

from kit.models.generate import Sampling
from kit.models.tiny_vision import tiny_vision_path
from kit.models.vision_generate import generate_with_images, with_image_parts
from kit.models.vision_models import load_processor, placeholder_ids

RED, BLUE = Image.new("RGB", (64, 64), "red"), Image.new("RGB", (64, 64), "blue")
PROMPT = [{"role": "system", "content": "Count."}, {"role": "user", "content": "How many?"}]


def test_image_parts_go_before_the_first_user_text_and_every_turn_renders():
    shown = with_image_parts(PROMPT, [RED, BLUE])
    assert shown[0] == {"role": "system", "content": [{"type": "text", "text": "Count."}]}
    assert [part["type"] for part in shown[1]["content"]] == ["image", "image", "text"]
    assert shown[1]["content"][0]["image"] is RED and PROMPT[1]["content"] == "How many?"  # the row is left as it was
    rendered = load_processor(str(tiny_vision_path())).apply_chat_template(shown, tokenize=False)
    assert "Count." in rendered and rendered.count("<image>") == 2  # the processor widens each to its tokens


@pytest.fixture(scope="module")
def model_and_processor():
    from transformers import AutoModelForImageTextToText

    path = tiny_vision_path()
    return AutoModelForImageTextToText.from_pretrained(path).eval(), load_processor(str(path))


def test_a_model_that_prefers_an_image_placeholder_never_writes_one(model_and_processor):
    model, processor = model_and_processor
    image_id = processor.tokenizer.convert_tokens_to_ids("<image>")
    favoured = model.lm_head.register_forward_hook(
        lambda m, i, out: out.index_add(-1, torch.tensor([image_id]), torch.full((*out.shape[:-1], 1), 1e4))
    )
    try:
        texts = generate_with_images(
            model, processor, [PROMPT, PROMPT], [[RED], [BLUE]], Sampling(max_new_tokens=6), progress=False
        )
        raw = model.generate(
            **processor(
                text=[processor.apply_chat_template(with_image_parts(PROMPT, [RED]), add_generation_prompt=True)],
                images=[[RED]],
                return_tensors="pt",
            ),
            max_new_tokens=3,
            do_sample=False,
        )
    finally:
        favoured.remove()
    assert image_id in raw[0, -3:].tolist()  # unbanned, the hook makes it the model's choice
    assert len(texts) == 2
    ids = [processor.tokenizer(t, add_special_tokens=False).input_ids for t in texts]
    assert not {i for row in ids for i in row} & set(placeholder_ids(processor))
