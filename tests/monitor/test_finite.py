"""FiniteGuard: a non-finite loss stops a run at once; an infinite gradient norm does too, except where fp16 loss
scaling skips the step (found by running Unsloth's generated trainers, which pick fp16 where bf16 is missing)."""

from types import SimpleNamespace

import pytest

from kit.errors import KitError
from kit.monitor.finite import SCALER_SKIPS_ALLOWED, FiniteGuard


def log(guard: FiniteGuard, fp16: bool, step: int = 1, **logs) -> None:
    guard.on_log(SimpleNamespace(fp16=fp16), SimpleNamespace(global_step=step), None, logs=logs)


@pytest.mark.parametrize("fp16", [False, True])
def test_a_nan_loss_stops_the_run(fp16):
    with pytest.raises(KitError, match="the loss is nan"):
        log(FiniteGuard("grpo", 1e-4), fp16, loss=float("nan"), grad_norm=1.0)


def test_an_infinite_gradient_norm_stops_a_run_without_loss_scaling():
    with pytest.raises(KitError, match="the grad_norm is inf"):
        log(FiniteGuard("sft", 2e-4), False, loss=3.0, grad_norm=float("inf"))


def test_fp16_loss_scaling_may_skip_steps_but_not_forever(capsys):
    guard = FiniteGuard("sft", 2e-4)
    for step in range(1, SCALER_SKIPS_ALLOWED + 1):
        log(guard, True, step, loss=3.0, grad_norm=float("inf"))
    assert "loss scaler skipped" in capsys.readouterr().out
    log(guard, True, 11, loss=3.0, grad_norm=2.0)  # a finite step starts the count again
    for step in range(12, 12 + SCALER_SKIPS_ALLOWED):
        log(guard, True, step, loss=3.0, grad_norm=float("inf"))
    with pytest.raises(KitError, match=f"no finite one was logged in {SCALER_SKIPS_ALLOWED + 1} steps"):
        log(guard, True, 12 + SCALER_SKIPS_ALLOWED, loss=3.0, grad_norm=float("inf"))


def test_the_count_is_in_steps_whatever_the_logging_interval():
    """With logging_steps=10 a second logged overflow is 20 steps without a finite gradient: too many."""
    guard = FiniteGuard("sft", 2e-4)
    log(guard, True, 10, loss=3.0, grad_norm=float("inf"))
    with pytest.raises(KitError, match="in 20 steps"):
        log(guard, True, 20, loss=3.0, grad_norm=float("inf"))
