import pytest
from datasets import Dataset

from kit.config import DataConfig
from kit.data import drop_long_prompts, prepare_dataset, prompt_lengths
from kit.errors import KitError
from kit.recipe import Recipe
from kit.rewards import RewardBundle


def needs_answer(completions, answer, **kwargs):
    return [0.0 for _ in completions]


def recipe_with(rows) -> Recipe:
    return Recipe(name="t", prepare=lambda split, source: Dataset.from_list(rows),
                  rewards=RewardBundle((needs_answer, 1.0)))


def prompt(text):
    return [{"role": "user", "content": text}]


def test_long_prompts_dropped_with_count(tiny_tokenizer, capsys):
    rows = [{"prompt": prompt("hi"), "answer": "1"}, {"prompt": prompt("word " * 200), "answer": "2"}]
    dataset = Dataset.from_list(rows)
    short, long = prompt_lengths(dataset, tiny_tokenizer)
    kept = drop_long_prompts(dataset, tiny_tokenizer, max_prompt_length=short)
    assert kept["answer"] == ["1"]
    assert "dropped 1 of 2 prompts longer than" in capsys.readouterr().out
    with pytest.raises(KitError, match="every prompt is longer than data.max_prompt_length=1"):
        drop_long_prompts(dataset, tiny_tokenizer, max_prompt_length=1)


def test_reward_column_missing_is_named(tiny_tokenizer):
    recipe = recipe_with([{"prompt": prompt("hi"), "gold": "1"}])
    with pytest.raises(KitError,
                       match="reward 'needs_answer' reads it\\) lacks column\\(s\\) 'answer'; it has: prompt, gold"):
        prepare_dataset(recipe, DataConfig(), tiny_tokenizer)


@pytest.mark.parametrize("bad", ["just a string", [{"role": "user"}], [{"content": "x"}]])
def test_malformed_prompt_row_is_named(tiny_tokenizer, bad):
    recipe = recipe_with([{"prompt": prompt("ok"), "answer": "1"}, {"prompt": bad, "answer": "2"}]
                         if not isinstance(bad, str) else [{"prompt": bad, "answer": "2"}])
    with pytest.raises(KitError, match="must be a list of chat messages"):
        prepare_dataset(recipe, DataConfig(), tiny_tokenizer)


def test_limit_keeps_first_rows(tiny_tokenizer):
    recipe = recipe_with([{"prompt": prompt(f"q{i}"), "answer": str(i)} for i in range(10)])
    assert prepare_dataset(recipe, DataConfig(limit=3), tiny_tokenizer)["answer"] == ["0", "1", "2"]


def test_sample_needs_a_writer(tiny_tokenizer):
    with pytest.raises(KitError, match="ships no sample data"):
        prepare_dataset(recipe_with([]), DataConfig(path="sample"), tiny_tokenizer)


def test_hub_failure_says_what_to_do(monkeypatch):
    import datasets

    from kit.data import load_table

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'openai/gsm8k' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(KitError, match=r"cannot load dataset openai/gsm8k from the hub .*DATA=path.*PROFILE=smoke"):
        load_table(None, "openai/gsm8k", "train", "main")


def test_system_prompt_goes_first_where_a_prompt_has_none():
    from kit.data import load_eval_rows, load_rows

    own = [{"role": "system", "content": "mine"}, *prompt("b")]
    recipe = recipe_with([{"prompt": prompt("a"), "answer": "1"}, {"prompt": own, "answer": "2"}])
    rows = load_rows(recipe, DataConfig(system_prompt="Answer as <answer>N</answer>."))
    assert rows["prompt"] == [[{"role": "system", "content": "Answer as <answer>N</answer>."}, *prompt("a")], own]
    assert load_rows(recipe, DataConfig())["prompt"][0] == prompt("a")

    class Held:
        n, path, split, holdout = 2, None, "test", 0.1

    held_out = load_eval_rows(recipe, DataConfig(system_prompt="S"), Held)
    assert held_out["prompt"][0][0] == {"role": "system", "content": "S"}  # scored as it was trained


def test_a_local_file_without_eval_path_holds_out_a_seeded_share_it_never_trains_on(capsys):
    from datasets import Dataset

    from kit.data import split_off_held_out

    rows = Dataset.from_list([{"question": f"q{i}", "answer": str(i)} for i in range(50)])
    train, held, indices = split_off_held_out(rows, 0.1, 200, seed=3407, source="my.jsonl")
    assert len(held) == 5 and len(train) == 45
    assert held["question"] == [f"q{i}" for i in indices]
    assert not set(held["question"]) & set(train["question"])
    _, again_held, _ = split_off_held_out(rows, 0.1, 200, seed=3407, source="my.jsonl")
    assert again_held["question"] == held["question"]  # a resumed run scores the same rows
    assert "5 of the 50 rows of my.jsonl (eval.holdout 0.1, seed 3407) are held out" in capsys.readouterr().out
    assert len(split_off_held_out(rows, 0.5, 8, seed=1, source="f")[1]) == 8  # at most eval.n
    assert split_off_held_out(rows.select(range(3)), 0.1, 200, seed=1, source="f")[1] is None  # too few
