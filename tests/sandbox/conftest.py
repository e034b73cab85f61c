"""The isolation levels this machine offers; in CI a missing level fails instead of skipping."""

import os
import shutil

import pytest

from kit.sandbox.execute import level_works

ISOLATED = os.environ.get("KIT_TEST_LEVELS", "bubblewrap,namespaces").split(",")


def require(level: str) -> str:
    why = level_works(level)
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the {level} sandbox, but: {why}")
        pytest.skip(f"{level} sandbox unavailable here: {why}")
    return level


@pytest.fixture(params=ISOLATED)
def level(request) -> str:
    return require(request.param)


@pytest.fixture
def bwrap_installed() -> bool:
    return shutil.which("bwrap") is not None
