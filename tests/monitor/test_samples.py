"""SampleLogger: OUT/samples.jsonl keeps each completion in the form the rewards got it in training, so
`kit rewards check RECIPE --completions OUT/samples.jsonl` calls them the same way; the console shows text."""

import json
from types import SimpleNamespace

from kit.monitor.health import SampleLogger
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
