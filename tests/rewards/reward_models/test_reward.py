"""kit.rewards.reward_model on tiny one-label classifiers built here: the scores, batched or not, the three
normalisations, the frozen model, the refusals (each one line), hostile replies, and that nothing loads early."""

import json
import math
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.checks.empty_completions import try_on_empty
from kit.errors import KitError
from kit.rewards import RewardBundle, reward_model
from kit.rewards.guard import CheckedReward
from kit.rewards.reward_models.load import check_reward_model
from kit.rewards.reward_models.tiny import TINY_REWARD, build_tiny_reward_model, tiny_reward_config
from kit.rewards.traits import trait
from tests.conftest import chat

PROMPT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 4 plus 7?"}]
OTHER = [{"role": "user", "content": "Name a colour."}]
REPLIES = ["11", "It is 11.", "", "4 plus 7 is 11, because 4 + 7 = 11.", "twelve", "x" * 3000, "blue"]


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    return build_tiny_reward_model(tmp_path_factory.mktemp("rm") / "tiny-reward", seed=1)


def batch():
    return [PROMPT] * len(REPLIES), [chat(r) for r in REPLIES]


def test_batched_scores_equal_one_at_a_time(classifier):
    fn = reward_model(str(classifier), batch_size=3, device="cpu")
    prompts, completions = batch()
    together = fn(prompts=prompts, completions=completions)
    alone = [fn(prompts=[p], completions=[c])[0] for p, c in zip(prompts, completions)]
    assert together == pytest.approx(alone, abs=1e-5)
    assert len(set(together)) > 1  # padding does not make every reply score the same


def test_chat_and_plain_string_completions_score_the_same(classifier):
    fn = reward_model(str(classifier), device="cpu")
    assert fn(prompts=[PROMPT], completions=["It is 11."]) == fn(prompts=[PROMPT], completions=[chat("It is 11.")])


def test_a_long_reply_is_cut_from_the_left_so_its_end_is_read(classifier):
    fn = reward_model(str(classifier), device="cpu", max_length=16)
    ending = " so the answer is 11, because 4 plus 7 is 11: the total is 11."  # more than 16 tokens
    long_a, long_b = "a" * 500 + ending, "b" * 900 + ending
    a, b = fn(prompts=[PROMPT, PROMPT], completions=[chat(long_a), chat(long_b)])
    assert a == pytest.approx(b, abs=1e-5)  # the same last 16 tokens


def test_normalisations(classifier):
    prompts = [PROMPT] * 4 + [OTHER] * 2 + [[{"role": "user", "content": "alone"}]]
    completions = [chat(r) for r in REPLIES]
    raw = reward_model(str(classifier), device="cpu")(prompts=prompts, completions=completions)
    group = reward_model(str(classifier), device="cpu", normalise="group")(prompts=prompts, completions=completions)
    squashed = reward_model(str(classifier), device="cpu", normalise="sigmoid")(prompts=prompts,
                                                                               completions=completions)
    first = raw[:4]
    mean, std = sum(first) / 4, math.sqrt(sum((x - sum(first) / 4) ** 2 for x in first) / 4)
    assert group[:4] == pytest.approx([(x - mean) / std for x in first], abs=1e-6)
    assert sum(group[4:6]) == pytest.approx(0.0, abs=1e-9) and group[6] == 0.0  # a group of one: 0.0
    assert squashed == pytest.approx([1 / (1 + math.exp(-x)) for x in raw])
    assert all(0 < v < 1 for v in squashed)
    same = reward_model(str(classifier), device="cpu", normalise="group")(prompts=[PROMPT] * 3,
                                                                          completions=[chat("11")] * 3)
    assert same == [0.0, 0.0, 0.0]  # std 0


def test_ranges_follow_the_normalisation():
    assert trait(reward_model(TINY_REWARD, normalise="sigmoid"), "reward_range") == (0.0, 1.0)
    low, high = trait(reward_model(TINY_REWARD), "reward_range")
    assert low == -math.inf and high == math.inf  # a logit is not held to the kit's 0..1


def test_the_model_is_frozen_in_eval_mode_on_the_cpu_in_fp32(classifier):
    import torch

    fn = reward_model(str(classifier), device="cpu")
    assert fn.scorer.loaded is None  # nothing loads before the first call
    fn(prompts=[PROMPT], completions=[chat("11")])
    model = fn.scorer.loaded.model
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    assert model.dtype == torch.float32 and fn.scorer.loaded.device.type == "cpu"
    assert all(p.grad is None for p in model.parameters())
    assert model.config.pad_token_id == fn.scorer.loaded.tokenizer.pad_token_id


def test_it_drops_into_a_bundle_and_the_guard(classifier):
    fn = reward_model(str(classifier), device="cpu", name="helpfulness")
    bundle = RewardBundle((fn, 1.0))
    assert bundle.names == ["helpfulness"] and bundle.columns_needed() == {"helpfulness": []}
    values = CheckedReward(fn)(completions=[chat("11")], prompts=[PROMPT], completion_ids=[[1]])
    assert len(values) == 1 and isinstance(values[0], float)
    try_on_empty(fn, 2, {"prompts": [PROMPT, OTHER]})  # training's first call: empty replies


def test_traits_say_which_model_and_preflight_reads_only_the_config(classifier):
    fn = reward_model(str(classifier), device="cpu", batch_size=4, normalise="group", max_length=256)
    assert trait(fn, "source") == {"kind": "reward_model", "model": str(classifier), "device": "cpu",
                                   "normalise": "group", "batch_size": 4, "max_length": 256}
    trait(fn, "preflight")()
    assert fn.scorer.loaded is None


def test_a_tokenizer_without_a_chat_template_scores_plain_text_and_says_so_once(tmp_path, capsys):
    folder = build_tiny_reward_model(tmp_path / "plain", chat_template=False)
    fn = reward_model(str(folder), device="cpu")
    fn(prompts=[PROMPT], completions=[chat("11")])
    values = fn(prompts=None, completions=[chat(""), "\ud800"])  # nothing to read but what the template would add
    assert all(math.isfinite(v) for v in values)
    assert capsys.readouterr().out.count("has no chat template") == 1


def test_max_length_past_the_model_s_positions_is_cut_to_them(classifier, capsys):
    fn = reward_model(str(classifier), device="cpu", max_length=10_000)
    fn(prompts=[PROMPT], completions=[chat("11")])
    assert fn.scorer.max_length == 4096 and "reads at most 4096 tokens" in capsys.readouterr().out


def one_line_error(name: str) -> str:
    with pytest.raises(KitError) as raised:
        reward_model(name, device="cpu")(prompts=[PROMPT], completions=[chat("11")])
    with pytest.raises(KitError) as checked:
        check_reward_model(name)  # the preflight says the same, before any weights
    assert str(checked.value) == str(raised.value)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_refuses_a_classifier_with_two_labels(tmp_path):
    folder = build_tiny_reward_model(tmp_path / "two", num_labels=2)
    message = one_line_error(str(folder))
    assert "2 labels" in message and "num_labels=1" in message


def test_refuses_a_causal_lm_rather_than_give_it_a_random_head(tmp_path):
    config = {**tiny_reward_config(), "architectures": ["LlamaForCausalLM"]}
    (tmp_path / "lm").mkdir()
    (tmp_path / "lm" / "config.json").write_text(json.dumps(config))
    message = one_line_error(str(tmp_path / "lm"))
    assert "LlamaForCausalLM" in message and "not a sequence classifier" in message and "llm_judge" in message


@pytest.mark.parametrize("name", ["./no/such/folder", "/no/such/folder"])
def test_refuses_a_missing_path(name):
    assert "does not exist" in one_line_error(name)


def test_refuses_a_folder_that_is_not_a_model(tmp_path):
    assert "no config.json" in one_line_error(str(tmp_path))


def test_refuses_wrong_settings_all_at_once():
    with pytest.raises(KitError) as raised:
        reward_model(TINY_REWARD, device="gpu", batch_size=0, normalise="zscore", name="my reward")
    message = str(raised.value)
    assert all(word in message for word in ("device=", "batch_size=", "normalise=", "name="))


def test_importing_and_building_it_loads_nothing():
    code = ("import sys; from kit.rewards import reward_model; fn = reward_model('kit:tiny-reward'); "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


ODD = st.one_of(st.text(st.characters(codec=None, categories=None), max_size=60),
                st.sampled_from(["\ud800", "a\udfffb\ud800\udc00", "\x00" * 100, "", "x" * 200_000, "[" * 5000]))
FUZZ = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=15, **FUZZ)
@given(replies=st.lists(ODD, min_size=1, max_size=3), prompt=ODD)
def test_hostile_replies_get_a_finite_score(classifier, replies, prompt):
    fn = scorer_for(classifier)
    values = fn(prompts=[[{"role": "user", "content": prompt}]] * len(replies), completions=[chat(r) for r in replies])
    assert len(values) == len(replies) and all(isinstance(v, float) and math.isfinite(v) for v in values)


_SCORERS = {}


def scorer_for(folder):
    """One loaded reward per folder for the fuzz: loading it per example would be most of the test's time."""
    if folder not in _SCORERS:
        _SCORERS[folder] = reward_model(str(folder), device="cpu", max_length=64, normalise="group")
    return _SCORERS[folder]
