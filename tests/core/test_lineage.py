"""The target reference a run records: given to attach, found among module attributes, or
unknown; nested runs leave it to their top-level run."""

from __future__ import annotations

import importlib
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import flowdbg
from flowdbg._lineage import module_reference, normalize_reference
from flowdbg.adapters.stategraph import END, StateGraph

T = 10.0

MODULE = textwrap.dedent(
    """
    from flowdbg.adapters.stategraph import END, StateGraph

    g = StateGraph(name="counter")
    g.add_node("inc", lambda s: {"n": s["n"] + 1})
    g.set_entry_point("inc")
    g.add_edge("inc", END)
    app = g.compile()
    _hidden = app
    """
)


def build() -> object:
    g = StateGraph(name="local")
    g.add_node("a", lambda s: {"n": s["n"] + 1})
    g.set_entry_point("a")
    g.add_edge("a", END)
    return g.compile()


@pytest.fixture
def module(tmp_path: Path) -> Iterator[object]:
    (tmp_path / "lineage_target_mod.py").write_text(MODULE, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("lineage_target_mod")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("lineage_target_mod", None)


def recorded_target(dbg: flowdbg.Debugger, target: object, ref: str | None = None) -> object:
    dbg.attach(target, ref=ref)
    handle = dbg.start(target.invoke, {"n": 0})  # type: ignore[attr-defined]
    handle.result(timeout=T)
    assert dbg.flush(timeout=T) and dbg.store is not None and handle.run_id is not None
    return dbg.store.get_run(handle.run_id).target


def test_a_module_attribute_is_found_by_its_public_name(module: object, tmp_path: Path) -> None:
    with flowdbg.Debugger(db=tmp_path / "f.db") as dbg:
        assert recorded_target(dbg, module.app) == "lineage_target_mod:app"  # type: ignore[attr-defined]


def test_a_module_wins_over_the_script_that_imported_the_object_from_it(
    module: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a session script (python session.py) doing `from lineage_target_mod import app`: a fork
    # imports the module again, not the script, whose own session would run again
    script = types.ModuleType("__main__")
    script.__file__ = str(tmp_path / "session.py")
    script.app = module.app  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", script)
    with flowdbg.Debugger(db=tmp_path / "f.db") as dbg:
        assert recorded_target(dbg, module.app) == "lineage_target_mod:app"  # type: ignore[attr-defined]
    # an object only the script holds is found by the script's file
    only = build()
    script.only_here = only  # type: ignore[attr-defined]
    assert module_reference(only) == f"{tmp_path / 'session.py'}:only_here"


def test_a_given_reference_wins_and_a_file_path_is_made_absolute(
    module: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with flowdbg.Debugger(db=tmp_path / "f.db") as dbg:
        got = recorded_target(dbg, module.app, ref="src/app.py:build()")  # type: ignore[attr-defined]
    assert got == f"{tmp_path / 'src' / 'app.py'}:build()"


def test_a_target_built_in_a_function_has_no_reference(tmp_path: Path) -> None:
    with flowdbg.Debugger(db=tmp_path / "f.db") as dbg:
        assert recorded_target(dbg, build()) is None


def test_references_keep_module_names_and_absolute_paths(tmp_path: Path) -> None:
    assert normalize_reference("pkg.mod:app") == "pkg.mod:app"
    assert normalize_reference("/abs/app.py:app") == "/abs/app.py:app"
    assert module_reference(object()) is None
