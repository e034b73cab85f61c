"""SampleLogger: OUT/samples.jsonl keeps each completion in the form the rewards got it in training, so
`kit rewards check RECIPE --completions OUT/samples.jsonl` calls them the same way; the console shows text."""

import json
from types import SimpleNamespace

from kit.monitor.samples import SampleLogger
from tests.conftest import chat

PROMPT = [{"role": "system", "content": "Answer in tags."}, {"role": "user", "content": "What is 9 plus 2?"}]
TOOL_TURNS = [{"role": "assistant", "content": "", "tool_calls": [
                  {"type": "function", "function": {"name": "python", "arguments": {"code": "9 + 2"}}}]},
              {"role": "tool", "name": "python", "content": "11"},
              {"role": "assistant", "content": "<answer>11</answer>"}]


def log(path, completions: list, rewards: list[float]) -> list[dict]:
    logger = SampleLogger(path, every=1, count=len(completions), dataset=[{"prompt": PROMPT, "answer": "11"}],
                          columns=["answer"])
    logger.trainer = SimpleNamespace(_logs={"prompt": [PROMPT] * len(completions), "completion": completions,
                                            "rewards": {"correct": rewards}})
    logger.on_log(None, SimpleNamespace(is_world_process_zero=True, global_step=1), None, logs={"reward": 0.5})
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_chat_completion_is_kept_as_the_messages_the_rewards_got(tmp_path, capsys):
    (sample,) = log(tmp_path / "samples.jsonl", [chat("<answer>\n11\n</answer>")], [1.0])
    assert sample == {"step": 1, "prompt": "What is 9 plus 2?", "completion": chat("<answer>\n11\n</answer>"),
                      "answer": "11", "rewards": {"correct": 1.0}}
    assert "sample (step 1): '<answer> 11 </answer>'  correct=1" in capsys.readouterr().out  # text, not a list


def test_a_tool_using_completion_is_kept_whole_and_shown_as_its_transcript(tmp_path, capsys):
    (sample,) = log(tmp_path / "samples.jsonl", [TOOL_TURNS], [1.0])
    assert sample["completion"] == TOOL_TURNS and "transcript" not in sample  # one copy of the messages
    assert "[call python({'code': '9 + 2'})] [python -> 11] <answer>11</answer>" in capsys.readouterr().out


def test_a_plain_text_completion_stays_text(tmp_path):
    (sample,) = log(tmp_path / "samples.jsonl", ["11"], [1.0])
    assert sample["completion"] == "11"


def picture_rows(pictures: list):
    """A vision dataset as `datasets` holds one: an `image` column of pictures."""
    from datasets import Dataset, Features, Image, Value

    features = Features({"prompt": [{"role": Value("string"), "content": Value("string")}], "image": Image(),
                         "answer": Value("string")})
    return Dataset.from_dict({"prompt": [PROMPT] * len(pictures), "image": pictures,
                              "answer": [str(i + 1) for i in range(len(pictures))]}, features)


def test_a_vision_sample_keeps_a_small_copy_of_the_picture_it_saw(tmp_path):
    from PIL import Image as Picture

    pictures = [Picture.new("RGB", (600, 300), colour) for colour in ("red", "blue")]
    dataset = picture_rows(pictures)
    logger = SampleLogger(tmp_path / "samples.jsonl", every=1, count=1, dataset=dataset, columns=["answer"])
    logger.trainer = SimpleNamespace(_logs={"prompt": [PROMPT], "completion": [chat("<answer>2</answer>")],
                                            "rewards": {"correct": [1.0]}, "images": [[pictures[1]]]})
    for step in (1, 10):  # the same picture sampled twice is kept once
        logger.on_log(None, SimpleNamespace(is_world_process_zero=True, global_step=step), None, logs={"reward": 1})

    samples = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    seen = [(s["answer"], s["image"], s["picture"]) for s in samples]
    assert seen == [("2", "training row 1", "samples/row-1.png")] * 2
    assert "picture_row" not in samples[0]
    assert [p.name for p in (tmp_path / "samples").iterdir()] == ["row-1.png"]  # no partial file left
    with Picture.open(tmp_path / "samples" / "row-1.png") as kept:
        assert kept.size == (256, 128) and kept.getpixel((5, 5)) == (0, 0, 255)


def test_a_picture_that_cannot_be_kept_leaves_its_sample_without_one(tmp_path):
    from PIL import Image as Picture

    picture = Picture.new("RGB", (8, 8), "red")
    dataset = picture_rows([picture])
    (tmp_path / "samples").write_text("a file where the folder would go")
    logger = SampleLogger(tmp_path / "samples.jsonl", every=1, count=1, dataset=dataset, columns=["answer"])
    logger.trainer = SimpleNamespace(_logs={"prompt": [PROMPT], "completion": [chat("<answer>1</answer>")],
                                            "rewards": {"correct": [1.0]}, "images": [[picture]]})
    logger.on_log(None, SimpleNamespace(is_world_process_zero=True, global_step=1), None, logs={"reward": 1})
    sample = json.loads((tmp_path / "samples.jsonl").read_text())
    assert sample["image"] == "training row 0" and "picture" not in sample and "picture_row" not in sample
