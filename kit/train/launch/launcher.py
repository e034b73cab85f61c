"""Start a multi-process run: check it here, once, then run `accelerate launch` with the kit's config.

    returncode = launch(cfg, recipe, train_argv)   # train_argv: the `kit train ...` arguments as typed

Everything that can be refused (config, data, output folder, launcher) is refused before a single
process starts, so a mistake is one message, not N tracebacks. This process holds the output folder's
lock (kit.train.run_lock) until the ranks end. The ranks then run `python -m kit train`
with the same arguments and the output folder fixed here (a default one has a timestamp in its name,
which N processes would not agree on).
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from kit.config import RunConfig
from kit.errors import KitError
from kit.recipe import Recipe
from kit.train.launch import CONFIG_DIR
from kit.train.launch.failures import FAILURES_ENV, first_failure, was_interrupted
from kit.train.launch.machines import Machines, run_machines
from kit.train.prepare import claimed_run, prepare_run
from kit.train.run_lock import RUN_LOCK_ENV


def launch(cfg: RunConfig, recipe: Recipe, train_argv: list[str], resume: bool = False) -> int:
    try:
        machines = run_machines(cfg.launch, os.environ)
        check_launch(cfg)
        if machines.count > 1 and not cfg.output_dir:
            raise KitError("a run on several machines needs --out, the same folder on every machine (a default "
                           "one has the time in its name, which the machines would not agree on)")
        if not machines.main:  # checked here too; the main machine alone claims OUT and its rank 0 writes there
            return start_ranks(cfg, machines, prepare_run(cfg, recipe).out.root, train_argv)
        # For the whole launch: the data checked, the tiny model built once, OUT locked (the ranks are told not to
        # take the lock again) and claimed, so a used, locked or finished OUT is refused before any process starts.
        with claimed_run(cfg, recipe, resume) as (run, _):
            return start_ranks(cfg, machines, run.out.root, train_argv)
    except KitError as err:  # which machine refused: under SLURM too, as kit.train.start put its machines in cfg
        count = cfg.launch.num_machines or 1
        if count > 1:
            raise KitError(f"machine {cfg.launch.machine_rank or 0} of {count}: {err}") from None
        raise


def start_ranks(cfg: RunConfig, machines: Machines, out: Path, train_argv: list[str]) -> int:
    command = accelerate_command(cfg, machines, [*drop_out_flag(train_argv), "--out", str(out)])
    n, launcher = cfg.launch.num_processes, cfg.launch.launcher
    where = f" on machine {machines.rank} of {machines.count} (main: {machines.address})" if machines.count > 1 else ""
    print(f"launch: {n} process{'es' if n > 1 else ''}{where} with {launcher} (kit/train/launch/{launcher}.yaml), "
          f"{'GPUs' if gpu_count() else 'CPU only: gloo backend, for testing'}; output {out}")
    print(f"launch: {' '.join(command)}")
    with tempfile.TemporaryDirectory(prefix="kit-ranks-") as failures:
        returncode = run_launcher(command, worker_env(failures, out))
        first = first_failure(Path(failures))
        if returncode and first is None and was_interrupted(Path(failures)):
            if not machines.main:  # rank 0, on the main machine, said where the checkpoint is and how to resume
                print(f"launch: the run stopped on a request to stop (Ctrl-C / SIGTERM); the main machine saved its "
                      f"checkpoint in {out}/checkpoints: to go on, start every machine again with --resume")
            return 130
        if returncode:
            print(failure_message(returncode, first, machines.rank), file=sys.stderr)
    return returncode


def run_launcher(command: list[str], env: dict[str, str]) -> int:
    """Run accelerate's launcher and wait for it, passing Ctrl-C and SIGTERM on as a request to stop.

    Ctrl-C reaches the launcher from the terminal already; SIGTERM (a scheduler, `kill`) is sent on to it.
    Either way it asks every process to save a checkpoint and stop, and this process waits for them.
    """
    process = subprocess.Popen(command, env=env)
    previous = {
        signal.SIGINT: signal.signal(signal.SIGINT, lambda signum, frame: None),  # not SIG_IGN: that is inherited
        signal.SIGTERM: signal.signal(signal.SIGTERM, lambda signum, frame: process.send_signal(signal.SIGTERM)),
    }
    try:
        return process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def failure_message(returncode: int, first: str | None, this_machine: int = 0) -> str:
    """`first`: 'rank 3: reason', or 'rank 3 (machine 1): reason' on several machines."""
    if first is None:  # ended before it could say why (out of memory, a signal)
        return (f"error: the run stopped: a process exited with code {returncode} without saying why (out of memory? "
                "killed?); the lines above starting [rankN]: say more")
    match = re.match(r"rank (\d+)(?: \(machine (\d+)\))?:", first)
    if not match:
        return f"error: the run stopped: {first}"
    failed_rank, machine = match.group(1), match.group(2)
    where = ("above" if machine is None or int(machine) == this_machine
             else f"on machine {machine}'s console (this is machine {this_machine})")
    return (f"error: the run stopped: {first}\n"
            f"  rank {failed_rank}'s messages are {where}, in lines starting [rank{failed_rank}]:; "
            "when a process fails, the others stop")


def check_launch(cfg: RunConfig) -> None:
    """What would stop the processes from starting, said before any of them does."""
    n, launcher = cfg.launch.num_processes, cfg.launch.launcher
    gpus = gpu_count()
    if not gpus and launcher != "ddp":
        raise KitError(f"launch.launcher={launcher} needs NVIDIA GPUs; without one only ddp runs "
                       "(CPU processes, for testing): LAUNCHER=ddp")
    if gpus and n > gpus:
        raise KitError(f"launch.num_processes={n}, but this machine has {gpus} GPU(s): start one process per GPU "
                       f"(NPROC={gpus})")
    if launcher in ("zero2", "zero3") and importlib.util.find_spec("deepspeed") is None:
        raise KitError(f"launch.launcher={launcher} uses DeepSpeed, which is not installed: pip install deepspeed "
                       "(or use LAUNCHER=ddp / fsdp)")
    if not (CONFIG_DIR / f"{launcher}.yaml").is_file():
        raise KitError(f"the kit's launch config {CONFIG_DIR / f'{launcher}.yaml'} is missing; reinstall the kit")


def accelerate_command(cfg: RunConfig, machines: Machines, train_argv: list[str]) -> list[str]:
    n, launcher = cfg.launch.num_processes, cfg.launch.launcher
    command = [sys.executable, "-m", "accelerate.commands.launch",
               "--config_file", str(CONFIG_DIR / f"{launcher}.yaml"),
               "--num_processes", str(n * machines.count)]  # accelerate counts every machine's processes
    if machines.count > 1:
        command += ["--num_machines", str(machines.count), "--machine_rank", str(machines.rank),
                    "--main_process_ip", machines.address, "--main_process_port", str(machines.port)]
    else:  # two runs on one machine must not share a port
        command += ["--main_process_port", str(machines.port or free_port())]
    if not gpu_count():  # the cores are shared among the processes instead of each taking them all
        command += ["--num_cpu_threads_per_process", str(max(1, (os.cpu_count() or 1) // n))]
    return [*command, "-m", "kit", "train", *train_argv]


def worker_env(failures: str, out: Path) -> dict[str, str]:
    env = dict(os.environ, **{FAILURES_ENV: failures, RUN_LOCK_ENV: str(out.resolve())})
    # After Ctrl-C the launcher waits this long for the processes to finish their step and save a checkpoint
    # before it kills them (torch's default, 30 s, is shorter than one GRPO step of a real model).
    env.setdefault("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "180")
    if not gpu_count():
        env["ACCELERATE_USE_CPU"] = "true"  # MULTI_CPU with gloo; without it each process thinks it is alone
        # plain "cpu", not accelerate's "cpu:<rank>": torch.load cannot map a resumed checkpoint onto "cpu:0"
        env["ACCELERATE_TORCH_DEVICE"] = "cpu"
    return env


def drop_out_flag(argv: list[str]) -> list[str]:
    """The arguments without --out / --out=X (the launcher passes the resolved folder)."""
    kept, skip = [], False
    for item in argv:
        if skip:
            skip = False
        elif item == "--out":
            skip = True
        elif not item.startswith("--out="):
            kept.append(item)
    return kept


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_configs() -> dict[str, Path]:
    return {path.stem: path for path in sorted(CONFIG_DIR.glob("*.yaml"))}
