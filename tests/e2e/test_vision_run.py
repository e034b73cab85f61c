"""Issue 45 as a user meets it: a recipe with pictures trains on the tiny vision-language model, its samples say
which picture each answer saw, the merged model loads in plain transformers and answers about a picture in
`kit chat --image`, `kit export` refuses to write a GGUF without its vision tower, and the two runs that cannot
work (a text model shown pictures, a vision model saved as GGUF) stop in one line before anything is written."""

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit.recipes.count_shapes import draw
from tests.e2e.cli import HANG_GUARD_S, kit_train

pytestmark = pytest.mark.slow

# Plain transformers, no kit code: the merged folder is a vision-language model that answers about a picture.
ANSWER_ABOUT_A_PICTURE = textwrap.dedent(
    """
    import json, sys
    from PIL import Image
    from transformers import AutoModelForImageTextToText
    from kit.models.vision_models import load_processor  # AutoProcessor, or its parts where torchvision is missing
    path = sys.argv[1]
    model, processor = AutoModelForImageTextToText.from_pretrained(path), load_processor(path)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "How many circles?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True)
    inputs = processor(text=text, images=[Image.new("RGB", (64, 64), "white")], return_tensors="pt")
    out = model.generate(**inputs, max_new_tokens=4, do_sample=False)
    print(json.dumps({"new_tokens": out.shape[1] - inputs["input_ids"].shape[1],
                      "has_pixels": "pixel_values" in inputs, "type": model.config.model_type}))
    """
)


def test_a_picture_recipe_trains_evaluates_and_chats(tmp_path):
    out = tmp_path / "run"
    trained = kit_train("count_shapes", "--profile", "smoke", "--out", out)
    assert trained.returncode == 0, trained.stdout[-3000:] + trained.stderr[-3000:]
    assert "kit:tiny-vision" in trained.stdout  # the smoke profile picks the vision model for pictures

    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    # the smoke profile trains on the recipe's sample file: a JSONL whose rows name PNG files
    assert samples and all(s["image"].endswith(".png") and Path(s["image"]).is_file() for s in samples), samples[:2]

    loaded = subprocess.run([sys.executable, "-c", ANSWER_ABOUT_A_PICTURE, str(out / "merged")],
                            capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    reply = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert reply == {"new_tokens": reply["new_tokens"], "has_pixels": True, "type": "idefics3"}
    assert reply["new_tokens"] > 0

    exported = subprocess.run([sys.executable, "-m", "kit", "export", str(out / "merged")],
                              capture_output=True, text=True, timeout=HANG_GUARD_S)
    errors = [line for line in exported.stderr.splitlines() if line.startswith("error:")]
    assert exported.returncode != 0 and len(errors) == 1, exported.stdout[-2000:] + exported.stderr[-2000:]
    assert "is a vision-language model" in errors[0] and "mmproj" in errors[0]
    assert not list(out.rglob("*.gguf")) and not (out / "gguf").exists()  # nothing half-written

    picture = tmp_path / "shapes.png"
    draw(random.Random(0), "circle", 3).save(picture)
    chat = subprocess.run(
        [sys.executable, "-m", "kit", "chat", str(out / "merged"), "--image", str(picture), "--max-new-tokens", "6"],
        input="How many circles are there?\n/exit\n", capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert chat.returncode == 0, chat.stderr[-2000:]
    assert "shapes.png" in chat.stdout and chat.stdout.count("model> ") == 1, chat.stdout[-2000:]


@pytest.mark.parametrize(("setting", "expected"), [
    ("model.name=kit:tiny-llama", "is a text model; choose a vision-language model"),
    ("save.formats=[merged_16bit,gguf]", "the kit's GGUF export writes the language model alone"),
])
def test_runs_that_cannot_work_stop_in_one_line_before_writing(tmp_path, setting, expected):
    out = tmp_path / "run"
    refused = kit_train("count_shapes", "--profile", "smoke", "--out", out, setting)
    assert refused.returncode != 0
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and expected in errors[0], refused.stderr[-2000:]
    assert "Traceback" not in refused.stderr
    assert not out.exists() or not any(out.iterdir()), sorted(p.name for p in out.iterdir())
