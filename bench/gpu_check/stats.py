"""The numbers behind the check lines: GRPO sides alternated and summarized as ratios to the kit's, and the
kit's merge compared weight by weight with PEFT's."""

from __future__ import annotations

import statistics

from bench.gpu_check.settings import MERGED_DTYPE, SIDES
from kit.doctor.processes import FAIL, PASS, SKIP


def alternation(rounds: int, sides=tuple(SIDES)) -> list[tuple[int, str]]:
    """(round, side) in run order: every side once per round, so drift on the machine hits them alike."""
    return [(r, side) for r in range(1, rounds + 1) for side in sides]


def summarize_side(runs: list[dict]) -> dict:
    """One side's rounds: a failure fails it, a skip skips it, else the median s/step and the largest peak."""
    for status in (FAIL, SKIP):
        hit = next((r for r in runs if r["status"] == status), None)
        if hit:
            return {"status": status, "reason": hit.get("reason"), "runs": runs}
    per_run = [r["figures"]["seconds_per_step"] for r in runs]
    summary = {"status": PASS, "reason": None, "seconds_per_step": statistics.median(per_run),
               "seconds_per_step_by_round": per_run, "runs": runs}
    for key in ("peak_allocated_gib", "peak_reserved_gib", "peak_rss_gib"):
        if key in runs[0]["figures"]:
            summary[key] = max(r["figures"][key] for r in runs)
    return summary


def with_ratios(sides: dict[str, dict]) -> dict[str, dict]:
    """Each side's time and peak as a ratio to the kit's, where both were measured."""
    kit = sides.get("kit", {})
    for name, side in sides.items():
        if name == "kit" or side["status"] != PASS or kit.get("status") != PASS:
            continue
        side["time_vs_kit"] = side["seconds_per_step"] / kit["seconds_per_step"]
        if "peak_allocated_gib" in side and "peak_allocated_gib" in kit:
            side["peak_vs_kit"] = side["peak_allocated_gib"] / kit["peak_allocated_gib"]
    return sides


def compare_merges(ours: dict, reference: dict, original: dict, dtype) -> dict:
    """Our merged weights against PEFT's (rounded to the same dtype), and how far the adapter moved them.

    Passes when every weight is within one rounding step of `dtype` at its tensor's scale, and the adapter
    changed something (two merges of a zero adapter would agree trivially).
    """
    import torch

    tolerance = torch.finfo(dtype).eps
    missing = sorted(set(ours) - set(reference))
    worst, largest, moved, changed = 0.0, 0.0, 0.0, 0
    for key in sorted(set(ours) & set(reference)):
        a, b = ours[key].float(), reference[key].to(dtype).float()
        diff = (a - b).abs().max().item()
        largest = max(largest, diff)
        worst = max(worst, diff / max(b.abs().max().item(), 1e-12))
        if key in original:
            delta = (reference[key].float() - original[key].float()).abs().max().item()  # before rounding
            moved, changed = max(moved, delta), changed + (delta > 0)
    problem = None
    if missing:
        problem = f"PEFT's merged model lacks {len(missing)} of the kit's tensors ({missing[0]}, ...)"
    elif worst > tolerance:
        problem = f"the merges differ by {worst:.2e} of a tensor's scale, above {MERGED_DTYPE}'s {tolerance:.1e}"
    elif moved == 0:
        problem = "the adapter is zero: training did not move it, so the comparison proves nothing"
    return {"tensors": len(set(ours) & set(reference)), "max_abs_diff": largest, "worst_relative_diff": worst,
            "tolerance": tolerance, "adapter_max_delta": moved, "changed_tensors": changed, "missing": missing,
            "passed": problem is None, "problem": problem}
