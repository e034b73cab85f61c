"""Which machines a run spans, from the launch settings or, where they are left out, from SLURM.

    machines = run_machines(cfg.launch, os.environ)   # Machines(count=2, rank=1, address="node01", port=29500)

Under `srun` / `sbatch` SLURM names the job's machines (SLURM_NNODES), this one (SLURM_NODEID) and all of them
(SLURM_JOB_NODELIST, in SLURM's compressed form: `gpu[01-04]`); the first listed is the main one, as every
machine agrees without talking. A setting given explicitly wins over SLURM's. accelerate and torch.distributed
do the rest: the kit only passes these on (`accelerate launch --num_machines --machine_rank
--main_process_ip --main_process_port`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kit.config.sections import LaunchConfig
from kit.errors import KitError

DEFAULT_PORT = 29500  # torch.distributed's; every machine must name the same one, so never a random one


@dataclass(frozen=True)
class Machines:
    count: int
    rank: int
    address: str | None  # the main machine's; None on one machine
    port: int | None  # None on one machine: a free port is picked there

    @property
    def main(self) -> bool:
        return self.rank == 0


def run_machines(launch: LaunchConfig, environ: Mapping[str, str]) -> Machines:
    slurm = slurm_machines(environ)
    count = launch.num_machines or (slurm.count if slurm else 1)
    rank = launch.machine_rank if launch.machine_rank is not None else (slurm.rank if slurm else 0)
    if count == 1:
        return Machines(1, 0, None, launch.main_port)
    address = launch.main_address or (slurm.address if slurm else None)
    if not address:
        raise KitError(f"launch.num_machines={count} needs the main machine's address, which every machine "
                       "reaches: MASTER_ADDR=host (launch.main_address)")
    return Machines(count, rank, address, launch.main_port or DEFAULT_PORT)


def slurm_machines(environ: Mapping[str, str]) -> Machines | None:
    """The job's machines as SLURM gives them to each task, or None outside SLURM."""
    if "SLURM_JOB_NODELIST" not in environ or "SLURM_NNODES" not in environ:
        return None
    try:
        count, rank = int(environ["SLURM_NNODES"]), int(environ.get("SLURM_NODEID", "0"))
    except ValueError:
        raise KitError(f"SLURM_NNODES={environ['SLURM_NNODES']!r} or SLURM_NODEID="
                       f"{environ.get('SLURM_NODEID')!r} is not a number; set NNODES and NODE_RANK instead") from None
    return Machines(count, rank, first_host(environ["SLURM_JOB_NODELIST"]), None)


def first_host(nodelist: str) -> str:
    """The first host of SLURM's compressed list: `gpu[07-09,12],cpu3` -> `gpu07`."""
    match = re.match(r"\s*([^,\[\s]+)(?:\[([^\]]+)\])?", nodelist)
    if not match or not match.group(1):
        raise KitError(f"SLURM_JOB_NODELIST={nodelist!r} names no host; set MASTER_ADDR (launch.main_address)")
    prefix, ranges = match.group(1), match.group(2)
    if not ranges:
        return prefix
    return prefix + ranges.split(",")[0].split("-")[0]  # the first number, its zero padding kept


def slurm_settings(environ: Mapping[str, str]) -> dict:
    """SLURM's machines as launch settings, for the layer under the config file and the command line."""
    slurm = slurm_machines(environ)
    if slurm is None:
        return {}
    return {"num_machines": slurm.count, "machine_rank": slurm.rank, "main_address": slurm.address}
