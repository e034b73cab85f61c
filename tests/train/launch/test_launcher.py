"""The launching side: the command it builds, what it refuses before any process starts, its shipped configs."""

import pytest
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.utils import DistributedType

from kit.cli import main
from kit.config import build_config
from kit.errors import KitError
from kit.train.launch import launcher
from kit.train.launch.launcher import accelerate_command, check_launch, drop_out_flag, failure_message, launch_configs
from kit.train.launch.machines import run_machines


def two(launcher_name="ddp", **model):
    model = {"load_in_4bit": False, **model}  # 4-bit with vLLM in several processes is refused (test_config)
    return build_config([{"launch": {"num_processes": 2, "launcher": launcher_name}, "model": model}])


def test_command_runs_the_same_train_through_accelerate_with_the_kit_config():
    cfg = two("ddp")
    argv = ["gsm8k", "--num-processes", "2", "--out", "runs/x"]
    command = accelerate_command(cfg, run_machines(cfg.launch, {}), argv)
    config = command[command.index("--config_file") + 1]
    assert config.endswith("kit/train/launch/ddp.yaml")
    assert command[command.index("--num_processes") + 1] == "2"
    last_module = len(command) - 1 - command[::-1].index("-m")
    assert command[:3] == [command[0], "-m", "accelerate.commands.launch"]
    assert command[last_module + 1:] == ["kit", "train", "gsm8k", "--num-processes", "2", "--out", "runs/x"]
    assert int(command[command.index("--main_process_port") + 1]) > 0


def test_out_flag_is_replaced_not_repeated():
    assert drop_out_flag(["gsm8k", "--out", "a", "--steps", "3", "--out=b", "grpo.beta=0.1"]) == \
        ["gsm8k", "--steps", "3", "grpo.beta=0.1"]


@pytest.mark.parametrize("name,kind", [("ddp", DistributedType.MULTI_GPU), ("zero2", DistributedType.DEEPSPEED),
                                       ("zero3", DistributedType.DEEPSPEED), ("fsdp", DistributedType.FSDP)])
def test_shipped_configs_are_accelerate_configs_with_a_comment_on_when_to_use_them(name, kind):
    path = launch_configs()[name]
    assert load_config_from_file(str(path)).distributed_type == kind
    assert path.read_text().startswith("# ") and "Use it" in path.read_text()


def test_launchers_other_than_ddp_need_gpus(monkeypatch):
    monkeypatch.setattr(launcher, "gpu_count", lambda: 0)
    check_launch(two("ddp"))
    with pytest.raises(KitError, match="launch.launcher=zero2 needs NVIDIA GPUs"):
        check_launch(two("zero2"))


def test_one_process_per_gpu(monkeypatch):
    monkeypatch.setattr(launcher, "gpu_count", lambda: 1)
    with pytest.raises(KitError, match="this machine has 1 GPU"):
        check_launch(two("ddp"))


def test_deepspeed_launchers_say_how_to_install_it(monkeypatch):
    monkeypatch.setattr(launcher, "gpu_count", lambda: 2)
    monkeypatch.setattr(launcher.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(KitError, match="pip install deepspeed"):
        check_launch(two("zero2"))


def test_failure_message_names_the_rank_that_failed_first():
    message = failure_message(1, "rank 1: RuntimeError: boom")
    assert message.startswith("error: the run stopped: rank 1: RuntimeError: boom\n")
    assert "rank 1's messages are above, in lines starting [rank1]:" in message
    assert "without saying why" in failure_message(-9, None)


def test_a_failure_on_another_machine_says_where_its_messages_are():
    message = failure_message(1, "rank 3 (machine 1): RuntimeError: boom", this_machine=0)
    assert message.startswith("error: the run stopped: rank 3 (machine 1): RuntimeError: boom\n")
    assert "rank 3's messages are on machine 1's console (this is machine 0), in lines starting [rank3]:" in message
    assert "are above" in failure_message(1, "rank 3 (machine 1): RuntimeError: boom", this_machine=1)


def test_cli_refuses_before_starting_any_process(tmp_path, capsys):
    out = tmp_path / "run"
    # 4 per process x 3 processes = 12 completions cannot hold groups of 8
    assert main(["train", "gsm8k", "--num-processes", "3", "--out", str(out), "grpo.num_generations=8"]) == 2
    error = capsys.readouterr().err
    assert "x launch.num_processes (3) = 12 completions per step" in error and "nearest valid" in error
    assert main(["train", "gsm8k", "--num-processes", "2", "--launcher", "fsdp", "--out", str(out)]) == 2
    assert "launch.launcher=fsdp" in capsys.readouterr().err
    assert not out.exists()
    used = tmp_path / "used"
    (used / "old").mkdir(parents=True)
    assert main(["train", "gsm8k", "--num-processes", "2", "--out", str(used)]) == 2  # reaches the run's own checks
    error = capsys.readouterr().err
    assert "is not empty" in error and "launch:" not in error
    assert [p.name for p in used.iterdir()] == ["old"]


def test_the_launcher_holds_out_for_its_ranks(monkeypatch, tmp_path):
    from kit.config import resolve_config
    from kit.recipes import load_recipe
    from kit.train.run_lock import RUN_LOCK_ENV, hold_run_lock

    out = tmp_path / "run"
    seen = {}

    def ranks_running(command, env):
        with pytest.raises(KitError, match=r"in use by another run \(process \d+\)"), hold_run_lock(out):
            pass  # another run, started beside the launch, is refused
        monkeypatch.setenv(RUN_LOCK_ENV, env[RUN_LOCK_ENV])
        with hold_run_lock(out):  # rank 0 sees the launcher's note and does not take the lock again
            seen["rank 0 started"] = True
        return 0

    monkeypatch.setattr(launcher, "run_launcher", ranks_running)
    recipe = load_recipe("gsm8k")
    cfg = resolve_config(recipe.defaults, {}, {"launch": {"num_processes": 2}, "output_dir": str(out)}, gpu=False,
                         recipe_has_sample=True)  # the smoke profile: sample data, the tiny model
    assert launcher.launch(cfg, recipe, ["gsm8k"]) == 0
    assert seen == {"rank 0 started": True}
