import pytest

from kit.config import (
    SMOKE_PROFILE,
    TINY_MODEL,
    build_config,
    parse_overrides,
    read_yaml,
    resolve_config,
)
from kit.errors import KitError


def test_layers_apply_in_order_recipe_profile_file_cli():
    recipe = {"grpo": {"learning_rate": 1e-6, "max_steps": 250, "beta": 0.01}}
    file_layer = {"grpo": {"max_steps": 40, "beta": 0.02}}
    cli = {"grpo": {"beta": 0.04}}
    cfg = resolve_config(recipe, file_layer, cli, gpu=True)
    assert cfg.profile == "full"
    assert cfg.grpo.learning_rate == 1e-6  # recipe, nothing above it
    assert cfg.grpo.max_steps == 40  # file beats recipe
    assert cfg.grpo.beta == 0.04  # CLI beats file


def test_auto_profile_is_smoke_without_gpu_and_cli_still_wins():
    cfg = resolve_config({"grpo": {"max_steps": 250}}, {}, {}, gpu=False)
    assert cfg.profile == "smoke"
    assert cfg.model.name == TINY_MODEL
    assert cfg.grpo.max_steps == SMOKE_PROFILE["grpo"]["max_steps"]  # profile beats recipe
    cfg = resolve_config({}, {}, {"model": {"name": "my/model"}, "profile": "smoke"}, gpu=True)
    assert cfg.profile == "smoke" and cfg.model.name == "my/model"


def test_full_profile_keeps_real_model_default():
    cfg = resolve_config({}, {}, {}, gpu=True)
    assert cfg.model.name == "unsloth/Qwen2.5-1.5B-Instruct" and cfg.model.load_in_4bit


def test_unknown_key_is_named_with_suggestion():
    with pytest.raises(KitError, match=r"grpo\.learnin_rate: unknown key \(did you mean 'learning_rate'\?\)"):
        build_config([{"grpo": {"learnin_rate": 1e-5}}])


def test_unknown_section_is_named():
    with pytest.raises(KitError, match=r"trainer: unknown key"):
        build_config([{"trainer": {}}])


def test_bad_value_names_key_and_value():
    with pytest.raises(KitError, match=r"grpo\.num_generations: .*greater than or equal to 2.*got 1"):
        build_config([{"grpo": {"num_generations": 1}}])


def test_all_problems_reported_at_once():
    with pytest.raises(KitError) as err:
        build_config([{"grpo": {"learnin_rate": 1, "temperature": -1}, "model": {"lora_rank": 0}}])
    message = str(err.value)
    assert "3 problem(s)" in message
    for key in ("grpo.learnin_rate", "grpo.temperature", "model.lora_rank"):
        assert key in message


def test_batch_not_divisible_by_generations_proposes_nearest_valid():
    # The guide's 1 x 4 with 8 generations: TRL would fail after loading the model.
    with pytest.raises(KitError) as err:
        build_config([{"grpo": {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 4,
                                "num_generations": 8}}])
    message = str(err.value)
    assert "= 4 completions per step, which is not a multiple of num_generations (8)" in message
    assert "per_device_train_batch_size=2" in message
    assert "gradient_accumulation_steps=8" in message


def test_divisibility_counts_processes():
    grpo, model = {"per_device_train_batch_size": 4, "num_generations": 8}, {"load_in_4bit": False}
    assert build_config([{"grpo": grpo, "model": model, "launch": {"num_processes": 2}}]).completions_per_step == 8
    with pytest.raises(KitError) as err:
        build_config([{"grpo": grpo, "model": model, "launch": {"num_processes": 3}}])
    message = str(err.value)
    assert "x launch.num_processes (3) = 12 completions per step" in message
    # 8 x 3 = 24 and 4 x 2 x 3 = 24 are the nearest multiples of 8; no smaller batch works
    assert "per_device_train_batch_size=8 or per_device_train_batch_size=0" not in message
    assert "per_device_train_batch_size=8" in message and "gradient_accumulation_steps=2" in message


def test_fsdp_refuses_8bit_adam():
    sharded = {"launch": {"num_processes": 2, "launcher": "fsdp"}, "model": {"load_in_4bit": False}}
    with pytest.raises(KitError, match="grpo.optim=adamw_torch"):
        build_config([sharded, {"grpo": {"optim": "adamw_8bit"}}])
    build_config([sharded, {"grpo": {"optim": "adamw_torch"}}])


def test_sharded_launchers_refuse_4bit_weights():
    with pytest.raises(KitError, match="launch.launcher=zero3 shards 16-bit weights"):
        build_config([{"launch": {"num_processes": 2, "launcher": "zero3"}}])
    build_config([{"launch": {"num_processes": 2, "launcher": "zero3"}, "model": {"load_in_4bit": False}}])


def test_completion_must_leave_room_for_prompt():
    with pytest.raises(KitError, match="max_completion_length \\(1024\\) leaves no room"):
        build_config([{"model": {"max_seq_length": 1024}, "grpo": {"max_completion_length": 1024}}])


def test_a_negative_reward_weight_is_a_penalty_as_in_a_bundle():
    from kit.recipes import load_recipe

    cfg = build_config([parse_overrides(["rewards.soft_format=-0.5"])])  # the guide's style penalty, -0.5
    assert cfg.rewards == {"soft_format": -0.5}
    bundle = load_recipe("gsm8k").rewards.reweighted(cfg.rewards)
    assert dict(zip(bundle.names, bundle.weights))["soft_format"] == -0.5


@pytest.mark.parametrize("weight", [float("nan"), float("inf")])
def test_a_reward_weight_that_is_not_a_number_is_refused(weight):
    with pytest.raises(KitError, match=rf"rewards.answer_correct: Input should be a finite number \(got {weight}\)"):
        build_config([{"rewards": {"answer_correct": weight}}])


def test_overrides_parse_yaml_values():
    layer = parse_overrides(["grpo.learning_rate=1e-5", "model.target_modules=[q_proj, v_proj]", "grpo.beta=0.04"])
    cfg = build_config([layer])
    assert cfg.grpo.learning_rate == 1e-5
    assert cfg.model.target_modules == ["q_proj", "v_proj"]
    assert cfg.grpo.beta == 0.04


def test_override_without_equals_says_how():
    with pytest.raises(KitError, match="section.key=value"):
        parse_overrides(["grpo.beta"])


def test_yaml_must_be_mapping(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(KitError, match="must hold a mapping"):
        read_yaml(path)
    with pytest.raises(KitError, match="does not exist"):
        read_yaml(tmp_path / "missing.yaml")


def test_full_profile_without_a_gpu_takes_cpu_settings_unless_given():
    cfg = resolve_config({}, {}, {"profile": "full"}, gpu=False)
    assert not cfg.model.load_in_4bit and not cfg.model.fast_inference
    assert cfg.grpo.optim == cfg.sft.optim == "adamw_torch"
    assert resolve_config({}, {}, {"profile": "full"}, gpu=True).model.load_in_4bit  # a GPU keeps QLoRA
    given = resolve_config({}, {"model": {"load_in_4bit": True}}, {"profile": "full"}, gpu=False)
    assert given.model.load_in_4bit  # the config file wins


def test_unknown_profile_rejected():
    with pytest.raises(KitError, match="'tiny' is not a profile"):
        resolve_config({}, {}, {"profile": "tiny"}, gpu=False)


def test_gguf_needs_the_merged_model():
    with pytest.raises(KitError, match="save.formats: gguf is made from the merged 16-bit model; add merged_16bit"):
        build_config([{"save": {"formats": ["lora", "gguf"]}}])


def test_stage_rules():
    assert build_config([{"stages": ["sft", "grpo"]}]).stages == ["sft", "grpo"]
    with pytest.raises(KitError, match="stages: unknown stage 'dpo'; a stage is sft or grpo"):
        build_config([{"stages": ["dpo"]}])
    with pytest.raises(KitError, match="full_finetuning trains every weight"):
        build_config([{"model": {"full_finetuning": True, "load_in_4bit": True}}])


def test_full_finetuning_refuses_vllm_generation():
    with pytest.raises(KitError, match="model.full_finetuning with model.fast_inference"):
        build_config([{"model": {"full_finetuning": True, "load_in_4bit": False, "fast_inference": True}}])
    build_config([{"model": {"full_finetuning": True, "load_in_4bit": False, "fast_inference": False}}])


@pytest.mark.parametrize("model, extra, refused", [
    ({"load_in_4bit": True, "fast_inference": True}, {}, True),
    ({"load_in_4bit": True, "fast_inference": False}, {"use_vllm": True, "vllm_mode": "server"}, True),
    ({"load_in_4bit": True, "fast_inference": False}, {}, False),  # 4-bit, transformers generation
    ({"load_in_4bit": False, "fast_inference": True}, {}, False),  # 16-bit weights go to vLLM as they are
])
def test_several_processes_refuse_4bit_weights_with_vllm(model, extra, refused):
    layers = [{"launch": {"num_processes": 2}, "model": model, "grpo": {"extra": extra}}]
    if refused:
        with pytest.raises(KitError, match="launch.num_processes=2 with model.load_in_4bit and vLLM") as err:
            build_config(layers)
        assert "model.load_in_4bit=false" in str(err.value) and "model.fast_inference=false" in str(err.value)
    else:
        build_config(layers)
    build_config([{"model": model, "grpo": {"extra": extra}}])  # one process: Unsloth's path, allowed


def test_a_misspelt_key_does_not_hide_the_rules_across_fields():
    with pytest.raises(KitError) as err:
        build_config([{"grpo": {"learnin_rate": 1e-5, "per_device_train_batch_size": 1,
                                "gradient_accumulation_steps": 4, "num_generations": 8}}])
    message = str(err.value)
    assert "2 problem(s)" in message, message
    assert "grpo.learnin_rate: unknown key" in message and "not a multiple of num_generations (8)" in message


def test_trl_knobs_are_settings_with_trls_values():
    cfg = build_config([{"grpo": {"loss_type": "dr_grpo", "scale_rewards": "none", "epsilon_high": 0.28,
                                  "mask_truncated_completions": True, "num_iterations": 2,
                                  "chat_template_kwargs": {"enable_thinking": False}}}])
    assert cfg.grpo.loss_type == "dr_grpo" and cfg.grpo.chat_template_kwargs == {"enable_thinking": False}
    with pytest.raises(KitError, match=r"grpo\.loss_type: Input should be 'grpo', 'dr_grpo', 'dapo'"):
        build_config([{"grpo": {"loss_type": "ppo"}}])


def test_extra_keys_are_checked_against_trl_when_the_config_is_read():
    with pytest.raises(KitError) as err:
        build_config([{"grpo": {"extra": {"top_pp": 0.9, "loss_type": "grpo", "vllm_mode": "server"}},
                       "sft": {"extra": {"packing": True, "pakcing_strategy": "bfd"}}}])
    message = str(err.value)
    assert "grpo.extra.top_pp: not a GRPOConfig setting in TRL 1.15.0 (did you mean 'top_p'?)" in message
    assert "grpo.extra.loss_type: set it as grpo.loss_type, not in extra" in message
    assert "sft.extra.pakcing_strategy: not an SFTConfig setting in TRL 1.15.0 (did you mean 'packing_strategy'?)" \
        in message
    assert "vllm_mode" not in message and "sft.extra.packing:" not in message


def test_vllm_standby_needs_vllm():
    with pytest.raises(KitError, match="model.vllm_standby .* model.fast_inference is false"):
        build_config([{"model": {"vllm_standby": True, "fast_inference": False}}])


@pytest.mark.parametrize("written", ["grpo:\n  # max_steps: 3\n", "grpo:\n"])
def test_a_section_with_every_key_commented_out_keeps_the_recipes_settings(tmp_path, written):
    """`grpo:` alone reads as None; passed on, it replaced the recipe's whole grpo section (digit_sum's 12-token
    completions became 256) as soon as an override touched it."""
    from kit.recipes import load_recipe

    path = tmp_path / "c.yaml"
    path.write_text(written)
    recipe = load_recipe("digit_sum")
    cfg = resolve_config(recipe.defaults, read_yaml(path), parse_overrides(["grpo.max_steps=1"]), gpu=True)
    assert cfg.grpo.max_completion_length == recipe.defaults["grpo"]["max_completion_length"]
    assert cfg.grpo.max_steps == 1


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
@pytest.mark.parametrize("key", ["grpo.learning_rate", "grpo.temperature", "grpo.beta", "sft.learning_rate",
                                 "model.gpu_memory_utilization"])
def test_no_setting_takes_inf_or_nan(key, value):
    with pytest.raises(KitError, match=f"{key}: Input should be a finite number"):
        build_config([parse_overrides([f"{key}={value}"])])
