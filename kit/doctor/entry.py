"""`python -m kit.doctor.entry NAME SPEC_FILE`: run one check's worker in this fresh process (kit.doctor.processes
starts it). The table of workers that `kit doctor` and bench/gpu_check share."""

from __future__ import annotations

import sys
from pathlib import Path

from kit.doctor import route, workers
from kit.doctor.processes import run_worker


def shared_workers() -> dict:
    return {"probe": workers.work_probe, "build": workers.work_build,
            "vllm-engine": route.work_vllm_engine, "default-route": route.work_default_route}


if __name__ == "__main__":
    run_worker(shared_workers(), sys.argv[1], Path(sys.argv[2]))
