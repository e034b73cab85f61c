"""A vision-language model in the memory plan: its tower is counted, and each picture's image tokens are what the
model's own processor makes of a picture that size."""

import json
import subprocess
import sys

import pytest
from PIL import Image

from kit.config import RunConfig
from kit.models.tiny_vision import tiny_vision_path
from kit.models.vision_models import load_processor
from kit.plan.page import describe
from kit.plan.planner import make_plan
from kit.plan.shapes import read_shape
from kit.plan.vision_tower import vision_shape
from tests.plan.conftest import MODEL_CONFIGS

QWEN_VL = MODEL_CONFIGS / "Qwen2.5-VL-3B-Instruct"
SIZES = [(64, 64), (640, 480), (480, 640), (1920, 1080), (20, 30), (6000, 4000)]


def meta_model_params(folder) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(AutoConfig.from_pretrained(str(folder)))
    return sum(p.numel() for p in model.parameters())


def test_the_tower_is_counted_and_the_whole_model_matches_transformers():
    shape = read_shape(str(QWEN_VL))
    assert shape.vision and shape.vision.model_type == "qwen2_5_vl"
    assert shape.all_params == meta_model_params(QWEN_VL)  # the kit's text count + the tower = the model's own
    assert round(shape.all_params / 1e9, 2) == 3.75  # Qwen2.5-VL-3B's published size
    assert shape.left_out == ()


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_qwen_image_tokens_are_what_its_processor_makes(width, height):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    settings = json.loads((QWEN_VL / "preprocessor_config.json").read_text())
    processor = Qwen2VLImageProcessorPil(min_pixels=settings["min_pixels"], max_pixels=settings["max_pixels"])
    grid = processor(images=[Image.new("RGB", (width, height))], return_tensors="np")["image_grid_thw"][0]
    expected = int(grid.prod()) // settings["merge_size"] ** 2
    assert read_shape(str(QWEN_VL), (width, height)).image_tokens == expected


@pytest.mark.parametrize(("width", "height", "splitting"), [(64, 64, False), (300, 100, False), (300, 100, True),
                                                            (100, 260, True), (50, 40, True)])
def test_idefics3_image_tokens_are_what_its_processor_makes(width, height, splitting):
    folder = tiny_vision_path()
    settings = json.loads((folder / "processor_config.json").read_text())
    settings["image_processor"].update(do_image_splitting=splitting, size={"longest_edge": 256})
    processor = load_processor(str(folder))
    processor.image_processor.do_image_splitting, processor.image_processor.size = splitting, {"longest_edge": 256}
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "How many?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True)
    ids = processor(text=text, images=[Image.new("RGB", (width, height))], return_tensors="pt")["input_ids"][0]
    expected = int((ids == processor.tokenizer.convert_tokens_to_ids("<image>")).sum())
    config = json.loads((folder / "config.json").read_text())
    assert vision_shape(config, settings).tokens(width, height) == expected


def test_gemma3_gives_every_picture_the_same_tokens():
    gemma = read_shape(str(MODEL_CONFIGS / "gemma-3-4b-it"), (4000, 100))
    assert gemma.image_tokens == 256 and round(gemma.vision.params / 1e9, 2) == 0.42


def test_the_plan_counts_the_tower_and_the_image_tokens_in_every_sequence():
    cfg = RunConfig.model_validate({"model": {"name": str(QWEN_VL)}, "data": {"max_prompt_length": 200},
                                    "grpo": {"max_completion_length": 100}})
    with_pictures = make_plan(cfg, read_shape(str(QWEN_VL), (640, 480)), "T4", 15.0)
    without = make_plan(cfg, read_shape(str(QWEN_VL)), "T4", 15.0)
    text = describe(with_pictures)
    assert "x 691 tokens (200 prompt + 391 image + 100 completion)" in text
    assert "pictures: resized to a multiple of 28 px within 3,136 to 12,845,056 pixels (the model's processor " \
           "settings); 391 image tokens in each prompt, counted" in text
    assert with_pictures.estimate.term("vision tower").gib == pytest.approx(668_684_288 * 2 / 2**30)
    assert with_pictures.estimate.term("activations").gib > without.estimate.term("activations").gib
    assert "their image tokens are not counted: give the pictures' size" in describe(without)


def test_kit_plan_reads_the_recipes_picture_size_or_the_flag():
    def plan(*flags):
        return subprocess.run([sys.executable, "-m", "kit", "plan", "count_shapes", "--model", str(QWEN_VL), *flags],
                              capture_output=True, text=True, timeout=300)

    recipe, flag, bad = plan(), plan("--image-size", "1920x1080"), plan("--image-size", "big")
    assert recipe.returncode == 0, recipe.stderr[-2000:]
    assert "+ 4 image +" in recipe.stdout  # count_shapes' 64x64 pictures: 56x56 after resizing, 2x2 tokens
    assert flag.returncode == 0 and "+ 2691 image +" in flag.stdout
    assert bad.returncode == 2 and "'big': give the width and height in pixels, e.g. 640x480" in bad.stderr
