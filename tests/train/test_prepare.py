import pytest

from kit.config import build_config
from kit.errors import KitError
from kit.recipes import load_recipe
from kit.train.output_folder import claim_output
from kit.train.prepare import output_path
from kit.train.stages.grpo import grpo_args


def test_grpo_args_carry_settings_weights_and_extra(tmp_path):
    cfg = build_config([{"grpo": {"learning_rate": 2e-5, "num_generations": 4, "per_device_train_batch_size": 4,
                                  "loss_type": "dr_grpo", "extra": {"top_k": 5}}}])
    bundle = load_recipe("gsm8k").rewards.reweighted({"xml_count": 0.25})
    args = grpo_args(cfg, tmp_path, bundle)
    assert args.learning_rate == 2e-5 and args.num_generations == 4 and args.loss_type == "dr_grpo"
    assert args.top_k == 5  # grpo.extra passes any other GRPOConfig field through
    assert args.reward_weights == [2.0, 0.5, 0.5, 0.5, 0.25]
    assert args.output_dir == str(tmp_path / "checkpoints") and args.seed == cfg.seed
    assert not (tmp_path / "checkpoints").exists()  # building the arguments writes nothing


def test_grpo_extra_rejects_unknown_and_owned_keys(tmp_path):
    bundle = load_recipe("gsm8k").rewards
    with pytest.raises(KitError, match="grpo.extra.max_prompt_length: not a GRPOConfig setting"):
        grpo_args(build_config([{"grpo": {"extra": {"max_prompt_length": 256}}}]), tmp_path, bundle)
    with pytest.raises(KitError, match="grpo.extra.beta: set it as grpo.beta"):
        grpo_args(build_config([{"grpo": {"extra": {"beta": 0.1}}}]), tmp_path, bundle)


def test_a_used_output_folder_is_refused(tmp_path):
    (tmp_path / "old.txt").write_text("x")
    with pytest.raises(KitError, match="is not empty"):
        claim_output(build_config([]), tmp_path, resume=False)
    assert output_path(build_config([]), load_recipe("gsm8k")).parent.name == "outputs"


def test_sft_extra_is_checked_like_grpo_extra(tmp_path):
    from kit.train.stages.sft import sft_args

    def args(extra):
        return sft_args(build_config([{"stages": ["sft", "grpo"], "sft": {"extra": extra}}]), tmp_path)

    with pytest.raises(KitError, match="sft.extra.seed: the kit sets it from the top-level setting seed"):
        args({"seed": 1})  # was TypeError: got multiple values for keyword argument 'seed'
    with pytest.raises(KitError, match="sft.extra.max_steps: set it as sft.max_steps"):
        args({"max_steps": 3})
    with pytest.raises(KitError, match="sft.extra.no_such_field: not an SFTConfig setting"):
        args({"no_such_field": 3})
    assert args({"dataset_text_field": "body"}).dataset_text_field == "body"  # any other field passes through


def test_grpo_extra_refuses_what_the_kit_sets(tmp_path):
    bundle = load_recipe("gsm8k").rewards
    with pytest.raises(KitError, match="grpo.extra.output_dir: the kit sets it from --out"):
        grpo_args(build_config([{"grpo": {"extra": {"output_dir": "x"}}}]), tmp_path, bundle)


@pytest.mark.parametrize(("mode", "on"), [("false", False), ("true", True), ("unsloth", True)])
def test_model_gradient_checkpointing_reaches_both_trainers(tmp_path, mode, on):
    """TRL's configs default gradient_checkpointing to True; "false" used to stay on in a one-process run."""
    from kit.train.stages.sft import sft_args

    cfg = build_config([{"stages": ["sft", "grpo"], "model": {"gradient_checkpointing": mode}}])
    assert grpo_args(cfg, tmp_path, load_recipe("gsm8k").rewards).gradient_checkpointing is on
    assert sft_args(cfg, tmp_path).gradient_checkpointing is on
    with pytest.raises(KitError, match="the kit sets it from model.gradient_checkpointing"):
        grpo_args(build_config([{"grpo": {"extra": {"gradient_checkpointing": False}}}]), tmp_path,
                  load_recipe("gsm8k").rewards)


def picture_rows(counts: list[int]):
    from datasets import Dataset, Features, Image, List, Value
    from PIL import Image as Picture

    red = Picture.new("RGB", (4, 4), "red")
    features = Features({"prompt": [{"role": Value("string"), "content": Value("string")}], "images": List(Image())})
    return Dataset.from_dict({"prompt": [[{"role": "user", "content": "How many?"}]] * len(counts),
                              "images": [[red] * n for n in counts]}, features)


@pytest.mark.parametrize("vllm", [True, False])
def test_several_pictures_a_prompt_are_refused_where_vllm_generates(monkeypatch, vllm):
    from kit import env
    from kit.train.prepare import check_pictures, most_pictures

    monkeypatch.setattr(env, "vllm_usable", lambda: vllm)
    cfg = build_config([{"model": {"name": "kit:tiny-vision", "fast_inference": True}}])
    recipe = load_recipe("count_shapes")
    assert most_pictures(picture_rows([1, 3, 2])) == 3
    check_pictures(cfg, recipe, picture_rows([1, 1]))  # one a prompt: vLLM takes it
    if vllm:
        with pytest.raises(KitError, match="shows up to 3 pictures a prompt, but Unsloth's vLLM engine takes one"):
            check_pictures(cfg, recipe, picture_rows([1, 3, 2]))
    else:  # transformers generates: any number
        check_pictures(cfg, recipe, picture_rows([1, 3, 2]))
