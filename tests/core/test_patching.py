"""Patches of a framework's classes and modules: shared, counted, undone exactly."""

from __future__ import annotations

import logging
import threading
import types
from typing import Any

import pytest

from flowdbg import patching


class Runner:
    @staticmethod
    def run(x: int) -> int:
        return x + 1

    def go(self) -> str:
        return "base"


class SubRunner(Runner):
    pass


def _traced(calls: list[Any]) -> Any:
    def make(original: Any) -> Any:
        inner = original.__func__  # a staticmethod as stored

        def run(x: int) -> int:
            calls.append(x)
            return int(inner(x))

        return staticmethod(run)

    return make


def test_a_patch_replaces_and_unpatch_restores_the_very_same_object() -> None:
    stored = Runner.__dict__["run"]
    calls: list[Any] = []
    held = patching.patch(Runner, "run", _traced(calls))
    assert Runner.run(1) == 2 and calls == [1]
    assert patching.patched(Runner, "run") is held
    patching.unpatch(held)
    assert Runner.__dict__["run"] is stored
    assert Runner.run(1) == 2 and calls == [1]
    assert patching.patched(Runner, "run") is None


def test_holders_share_one_patch_and_the_last_restores() -> None:
    calls: list[Any] = []
    first = patching.patch(Runner, "run", _traced(calls))
    second = patching.patch(Runner, "run", _traced(["never used"]))
    assert first is second and first.refs == 2
    Runner.run(5)
    assert calls == [5]  # patched once: the second holder did not wrap the first
    patching.unpatch(first)
    Runner.run(6)
    assert calls == [5, 6]  # still patched for the other holder
    patching.unpatch(second)
    Runner.run(7)
    assert calls == [5, 6]
    patching.unpatch(second)  # one more let-go changes nothing
    assert "run" in Runner.__dict__


def test_an_inherited_attribute_shows_through_again() -> None:
    held = patching.patch(
        SubRunner, "go", lambda original: lambda self: "patched " + original(self)
    )
    assert SubRunner().go() == "patched base" and Runner().go() == "base"
    patching.unpatch(held)
    assert "go" not in SubRunner.__dict__
    assert SubRunner().go() == "base"


def test_module_attributes() -> None:
    module = types.ModuleType("framework")
    module.handler = lambda: "original"  # type: ignore[attr-defined]
    original = module.handler  # type: ignore[attr-defined]
    held = patching.patch(module, "handler", lambda f: lambda: "wrapped " + f())
    assert module.handler() == "wrapped original"  # type: ignore[attr-defined]
    patching.unpatch(held)
    assert module.handler is original  # type: ignore[attr-defined]


def test_a_missing_attribute_is_refused_and_nothing_changes() -> None:
    with pytest.raises(AttributeError, match="nothing"):
        patching.patch(Runner, "nothing", lambda original: original)
    assert patching.patched(Runner, "nothing") is None and not hasattr(Runner, "nothing")


def test_a_patch_someone_replaced_since_is_left_alone(caplog: pytest.LogCaptureFixture) -> None:
    held = patching.patch(Runner, "go", lambda original: lambda self: "flowdbg")
    users = lambda self: "the user's"  # noqa: E731
    Runner.go = users  # type: ignore[method-assign]
    try:
        with caplog.at_level(logging.WARNING, logger="flowdbg.patching"):
            patching.unpatch(held)
        assert Runner.__dict__["go"] is users
        assert "replaced after flowdbg patched it" in caplog.text
    finally:
        Runner.go = held.original  # type: ignore[method-assign]


def test_patching_from_many_threads_at_once_ends_as_it_began() -> None:
    stored = Runner.__dict__["run"]
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def churn() -> None:
        try:
            barrier.wait(10)
            for _ in range(200):
                held = patching.patch(Runner, "run", _traced([]))
                assert Runner.run(1) == 2
                patching.unpatch(held)
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    threads = [threading.Thread(target=churn) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert Runner.__dict__["run"] is stored and patching.patched(Runner, "run") is None
