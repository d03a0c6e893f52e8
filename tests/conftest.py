"""Test-wide settings: recordings go to a temporary database, never into the checkout."""

from __future__ import annotations

import os
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if "FLOWDBG_DB" not in os.environ:
        tmp = tempfile.mkdtemp(prefix="flowdbg-tests-")
        os.environ["FLOWDBG_DB"] = os.path.join(tmp, "flowdbg.db")
