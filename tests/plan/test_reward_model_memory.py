"""A reward model in the plan: its weights (static) and its scoring pass (a phase of its own, between generation
and training), read from its config alone; `kit plan RECIPE` shows both terms, and the peak grows by them."""

import json
import textwrap

import pytest

from kit.cli import main
from kit.plan.gpus import GIB
from kit.plan.planner import make_plan, training_beyond_vllm
from kit.plan.reward_models import reward_model_terms
from kit.plan.shapes import read_shape
from kit.rewards import RewardBundle, answer_correct, reward_model
from tests.plan.conftest import MODEL_CONFIGS, config

QWEN = "Qwen2.5-1.5B-Instruct"


@pytest.fixture
def classifier(tmp_path):
    """Qwen2.5-1.5B's shape as a one-label classifier: config.json alone, which is all a plan reads."""
    folder = tmp_path / "qwen-rm"
    folder.mkdir()
    settings = json.loads((MODEL_CONFIGS / QWEN / "config.json").read_text())
    settings.update(architectures=["Qwen2ForSequenceClassification"], num_labels=1)
    (folder / "config.json").write_text(json.dumps(settings))
    return folder


def plans(bundle, **sections):
    cfg = config(QWEN, **sections)
    shape = read_shape(cfg.model.name)
    terms, notes = reward_model_terms(bundle, cfg.rewards)
    return make_plan(cfg, shape, "A100-80GB", 79.1), make_plan(cfg, shape, "A100-80GB", 79.1, reward_terms=terms), notes


def test_the_weights_and_the_scoring_pass_are_counted_and_the_peak_grows_by_them(classifier):
    rm = reward_model(str(classifier), batch_size=8, max_length=1024)
    without, with_rm, notes = plans(RewardBundle((answer_correct, 1.0), (rm, 1.0)), model={"fast_inference": False})
    assert notes == []
    weights, scoring = with_rm.estimate.term("reward model weights"), with_rm.estimate.term("reward model activations")
    shape = read_shape(str(classifier))
    params = shape.total_params + shape.hidden  # tied embeddings: no output head to leave out; one score head
    assert weights.phase == "static" and weights.gib == pytest.approx(params * 2 / GIB)
    tokens = 8 * 1024
    per_token = 3 * 1536 + 2 * 1536 + 2 * 256 + 3 * 8960 + 1  # 3H + 2q + 2kv + 3I, and the logit
    assert scoring.phase == "scoring" and scoring.gib == pytest.approx(tokens * per_token * 2 / GIB)
    others = max(without.estimate.total("generation"), without.estimate.total("training"))
    assert with_rm.peak_gib == pytest.approx(without.peak_gib + weights.gib + max(0.0, scoring.gib - others))


def test_a_scoring_pass_larger_than_training_sets_the_peak(classifier):
    rm = reward_model(str(classifier), batch_size=64, max_length=4096)
    without, with_rm, _ = plans(RewardBundle((rm, 1.0)), model={"fast_inference": False})
    estimate = with_rm.estimate
    assert estimate.total("scoring") > max(estimate.total("generation"), estimate.total("training"))
    assert with_rm.peak_gib == pytest.approx(estimate.total("static") + estimate.total("scoring"))


def test_beside_vllm_training_needs_room_for_the_reward_model_too(classifier):
    rm = reward_model(str(classifier))
    without, with_rm, _ = plans(RewardBundle((rm, 1.0)), model={"fast_inference": True})
    weights = with_rm.estimate.term("reward model weights").gib
    scoring = with_rm.estimate.term("reward model activations").gib
    grows = weights + max(0.0, scoring - max(without.estimate.total("generation"), without.estimate.total("training")))
    assert training_beyond_vllm(with_rm.estimate) == pytest.approx(training_beyond_vllm(without.estimate) + grows)
    assert with_rm.peak_gib == pytest.approx(without.peak_gib + grows)  # vLLM's share as it was, and more beside


def test_on_the_cpu_it_costs_the_gpu_nothing(classifier):
    without, with_rm, _ = plans(RewardBundle((reward_model(str(classifier), device="cpu"), 1.0)))
    assert with_rm.estimate.term("reward model weights").gib == 0.0 and "on the CPU" in \
        with_rm.estimate.term("reward model weights").why
    assert with_rm.peak_gib == pytest.approx(without.peak_gib)


def test_a_reward_model_weighted_0_is_not_counted(classifier):
    rewards = RewardBundle((answer_correct, 1.0), (reward_model(str(classifier), name="rm"), 1.0))
    _, with_rm, _ = plans(rewards, rewards={"rm": 0})
    assert "reward model weights" not in [t.name for t in with_rm.estimate.terms]


def test_a_config_it_cannot_read_is_a_note_not_a_crash():
    terms, notes = reward_model_terms(RewardBundle((reward_model("kit-tests/no-such-reward-model"), 1.0)))
    assert terms == () and len(notes) == 1 and "no-such-reward-model" in notes[0] and "not counted" in notes[0]


def test_kit_plan_shows_both_terms_for_a_recipe_with_a_reward_model(tmp_path, classifier, capsys):
    recipe = tmp_path / "judged.py"
    recipe.write_text(textwrap.dedent(f"""
        from kit.rewards import RewardBundle, reward_model

        def prepare(split, source):
            raise NotImplementedError

        REWARDS = RewardBundle((reward_model({str(classifier)!r}, normalise="group"), 1.0))
    """))
    main(["plan", str(recipe), "--model", str(MODEL_CONFIGS / QWEN), "--gpu", "A100-80GB"])
    out = capsys.readouterr().out
    assert "reward model weights" in out and "reward model activations" in out and "scoring" in out
    assert "static + the largest of generation, scoring and training" in out


def test_the_tiny_reward_model_is_planned_without_building_it(monkeypatch):
    def build():
        raise AssertionError("kit plan built the tiny reward model")

    monkeypatch.setattr("kit.rewards.reward_models.load.tiny_reward_path", build)
    terms, notes = reward_model_terms(RewardBundle((reward_model("kit:tiny-reward"), 1.0)))
    assert notes == [] and terms[0].gib > 0


def test_kit_trains_own_plan_before_loading_counts_the_reward_model_too(classifier, capsys):
    """`kit train` plans before it loads anything: the same terms as `kit plan`, so a reward model that tips the
    run over is refused there, not found out of memory later."""
    from kit.plan.preflight import plan_before_loading

    cfg = config(QWEN, model={"fast_inference": False})
    rm = reward_model(str(classifier), batch_size=8, max_length=1024)
    without = plan_before_loading(cfg, "A100-80GB", skip=False)
    with_rm = plan_before_loading(cfg, "A100-80GB", skip=False, rewards=RewardBundle((rm, 1.0)))
    assert with_rm.estimate.term("reward model weights").gib > 0
    assert with_rm.peak_gib > without.peak_gib
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("memory plan: ") and f"about {with_rm.peak_gib:.1f} of" in printed[-1]


def test_weighted_0_it_is_counted_all_the_same_when_the_held_out_scoring_loads_it(classifier):
    """Evaluation scores with every reward of the recipe; the reward model it loads stays for the run."""
    from kit.plan.preflight import plan_before_loading

    rewards = RewardBundle((answer_correct, 1.0), (reward_model(str(classifier), name="rm"), 1.0))
    for n, counted in ((0, False), (200, True)):
        cfg = config(QWEN, model={"fast_inference": False}, rewards={"rm": 0}, eval={"n": n})
        plan = plan_before_loading(cfg, "A100-80GB", skip=False, rewards=rewards)
        assert ("reward model weights" in [t.name for t in plan.estimate.terms]) is counted, n


def test_kit_trains_plan_scores_with_the_model_the_setting_names(classifier):
    """reward_models in the config reaches the plan before loading: the recipe's hub model is never asked for."""
    from kit.plan.preflight import plan_before_loading

    cfg = config(QWEN, model={"fast_inference": False}, reward_models={"rm": str(classifier)})
    plan = plan_before_loading(cfg, "A100-80GB", skip=False,
                               rewards=RewardBundle((reward_model("kit-tests/no-such-reward-model", name="rm"), 1.0)))
    assert plan.estimate.term("reward model weights").gib > 0 and not plan.notes


def test_kit_plan_takes_the_reward_models_setting(classifier, capsys):
    """helpful_preference names a hub model, unreachable here: given a folder by name, `kit plan` counts that."""
    main(["plan", "helpful_preference", "--model", str(MODEL_CONFIGS / QWEN), "--gpu", "A100-80GB",
          f"reward_models.preference={classifier}"])
    out = capsys.readouterr().out
    assert "reward model weights" in out and "is not counted" not in out
