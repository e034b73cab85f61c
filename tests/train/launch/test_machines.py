"""Several machines: the settings, or SLURM's variables where they are left out, become accelerate's arguments."""

import pytest
import yaml

from kit.config import build_config
from kit.errors import KitError
from kit.train.launch.launcher import accelerate_command
from kit.train.launch.machines import Machines, first_host, run_machines

ARGV = ["gsm8k", "--out", "runs/x"]


def config(**launch):
    return build_config([{"launch": {"num_processes": 2, **launch}, "model": {"load_in_4bit": False}}])


def command_for(cfg, environ: dict) -> list[str]:
    return accelerate_command(cfg, run_machines(cfg.launch, environ), ARGV)


def flags(command: list[str]) -> dict[str, str]:
    names = ("--num_processes", "--num_machines", "--machine_rank", "--main_process_ip", "--main_process_port")
    return {name: command[command.index(name) + 1] for name in names if name in command}


def test_several_machines_are_passed_to_accelerate():
    cfg = config(num_machines=2, machine_rank=1, main_address="10.0.0.5", main_port=29501)
    assert flags(command_for(cfg, {})) == {
        "--num_processes": "4",  # accelerate counts every machine's processes: 2 machines x 2
        "--num_machines": "2", "--machine_rank": "1", "--main_process_ip": "10.0.0.5", "--main_process_port": "29501"}


def test_slurms_variables_give_the_same_command_as_the_settings():
    slurm = {"SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_NNODES": "2", "SLURM_NODEID": "1"}
    explicit = config(num_machines=2, machine_rank=1, main_address="gpu07")
    assert command_for(config(), slurm) == command_for(explicit, {})
    assert flags(command_for(config(), slurm))["--main_process_port"] == "29500"


def test_a_setting_given_wins_over_slurms():
    slurm = {"SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_NNODES": "2", "SLURM_NODEID": "1"}
    machines = run_machines(config(main_address="10.1.1.1", machine_rank=0).launch, slurm)
    assert machines == Machines(2, 0, "10.1.1.1", 29500) and machines.main


def test_one_machine_keeps_a_free_port_and_no_machine_flags():
    command = command_for(config(), {})
    assert set(flags(command)) == {"--num_processes", "--main_process_port"}
    assert flags(command)["--num_processes"] == "2"


@pytest.mark.parametrize(("nodelist", "first"), [
    ("gpu[07-09,12],cpu3", "gpu07"), ("node-a,node-b", "node-a"), ("single", "single"), ("n[1,3-5]", "n1"),
    ("rack1-[002-004]", "rack1-002"),
])
def test_the_first_host_of_slurms_compressed_list(nodelist, first):
    assert first_host(nodelist) == first


def test_what_cannot_work_is_one_line():
    with pytest.raises(KitError, match="needs the main machine's address, which every machine reaches: MASTER_ADDR"):
        run_machines(config(num_machines=2).launch, {})
    with pytest.raises(KitError, match="machines are numbered 0 to 1"):
        config(num_machines=2, machine_rank=2)
    with pytest.raises(KitError, match="SLURM_NNODES='two'"):
        run_machines(config().launch, {"SLURM_JOB_NODELIST": "a", "SLURM_NNODES": "two"})


def test_a_resumed_run_takes_each_machines_rank_from_slurm_not_from_the_main_machines_run_yaml(tmp_path, monkeypatch):
    from kit.recipes import load_recipe
    from kit.train.start import TrainRequest, config_layer, run_config

    out = tmp_path / "run"
    out.mkdir()
    recorded = {"recipe": "gsm8k", "launch": {"num_processes": 2, "num_machines": 2, "machine_rank": 0,
                                             "main_address": "gpu07"}, "model": {"load_in_4bit": False}}
    (out / "run.yaml").write_text(yaml.safe_dump(recorded))  # as the main machine wrote it
    for name, value in {"SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_NNODES": "2", "SLURM_NODEID": "1"}.items():
        monkeypatch.setenv(name, value)
    request = TrainRequest(recipe=None, overrides={}, out=str(out), resume=True)
    layer = config_layer(request)
    cfg = run_config(request, load_recipe("gsm8k"), layer)
    assert (cfg.launch.num_machines, cfg.launch.machine_rank, cfg.launch.main_address) == (2, 1, "gpu07")


def test_a_step_holds_every_machines_completions():
    two_machines = {"launch": {"num_processes": 1, "num_machines": 2}, "model": {"load_in_4bit": False},
                    "grpo": {"per_device_train_batch_size": 2, "num_generations": 4}}
    assert build_config([two_machines]).completions_per_step == 4  # 2 per process x 2 processes: one group
    with pytest.raises(KitError, match=r"x launch.num_processes \(1\) = 2 completions per step"):
        build_config([{**two_machines, "launch": {"num_processes": 1}}])
