"""Meta-tests: the plugin contract is documented and tested, every adapter has conformance tests."""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from flowdbg import hookspecs

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted(
    (name, fn)
    for name, fn in vars(hookspecs).items()
    if name.startswith("flowdbg_") and callable(fn)
)


def _docs_text() -> str:
    parts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    parts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(parts)


def _tests_text() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8")
        for p in sorted((ROOT / "tests").rglob("*.py"))
        if p.name != "test_meta.py"
    )


def test_there_are_hookspecs() -> None:
    assert len(SPECS) >= 8


@pytest.mark.parametrize("name,fn", SPECS, ids=[n for n, _ in SPECS])
def test_hookspec_has_docstring(name: str, fn: object) -> None:
    assert inspect.getdoc(fn), f"hookspec {name} has no docstring"


@pytest.mark.parametrize("name,fn", SPECS, ids=[n for n, _ in SPECS])
def test_hookspec_documented_with_signature(name: str, fn: object) -> None:
    params = ", ".join(inspect.signature(fn).parameters)  # type: ignore[arg-type]
    signature = f"{name}({params})"
    assert signature in _docs_text(), f"{signature} is not documented in README.md or docs/"


@pytest.mark.parametrize("name,fn", SPECS, ids=[n for n, _ in SPECS])
def test_hookspec_referenced_by_a_test(name: str, fn: object) -> None:
    assert re.search(rf"\b{name}\b", _tests_text()), f"no test references {name}"


def _flowdbg_entry_points() -> list[str]:
    dist = importlib.metadata.distribution("flowdbg")
    return sorted(ep.name for ep in dist.entry_points if ep.group == "flowdbg")


def test_entry_points_declared() -> None:
    assert "stategraph" in _flowdbg_entry_points()


@pytest.mark.parametrize("name", _flowdbg_entry_points())
def test_every_entry_point_has_a_conformance_module(name: str) -> None:
    module = ROOT / "tests" / "conformance" / f"test_{name}.py"
    assert module.is_file(), f"adapter {name!r} has no conformance module {module}"
    text = module.read_text(encoding="utf-8")
    assert "flowdbg.testing" in text, f"{module} does not compose the flowdbg.testing suites"


def test_import_flowdbg_imports_no_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys, flowdbg; d = flowdbg.Debugger();"
        "bad = [m for m in ('langgraph', 'langchain_core', 'llama_index', 'agents', 'openai')"
        " if m in sys.modules]; print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_public_api_all_is_explicit() -> None:
    import flowdbg

    assert set(flowdbg.__all__) <= set(dir(flowdbg))
    for name in (
        "Debugger",
        "StopReason",
        "Stop",
        "Terminated",
        "hookimpl",
        "Adapter",
        "Capability",
    ):
        assert name in flowdbg.__all__


def _core_private_names() -> set[str]:
    """Private attribute names of the core's objects: ``self._name`` assigned, slots, fields
    and methods named ``_name`` anywhere in the core package."""
    names: set[str] = set()
    for path in (ROOT / "core").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and isinstance(node.ctx, ast.Store)
            ):
                names.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)  # dataclass fields
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)  # __slots__ entries
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _adapter_sources() -> list[Path]:
    return sorted(p for p in (ROOT / "adapters").rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", _adapter_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_use_only_public_api(path: Path) -> None:
    """An adapter reaches the debugger through its public API only: no private module of
    flowdbg, no private name imported from it, no private attribute of a core object."""
    own = "flowdbg.adapters." + path.parent.name
    private = _core_private_names()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("flowdbg"):
            module = node.module or ""
            if module.startswith(own):
                continue
            if any(part.startswith("_") for part in module.split(".")):
                found.append(f"line {node.lineno}: from {module} import ...")
            found += [
                f"line {node.lineno}: imports {alias.name} from {module}"
                for alias in node.names
                if alias.name.startswith("_")
            ]
        elif isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: import {alias.name}"
                for alias in node.names
                if alias.name.startswith("flowdbg")
                and not alias.name.startswith(own)
                and any(part.startswith("_") for part in alias.name.split("."))
            ]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in private
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f"line {node.lineno}: .{node.attr}")
        elif (  # getattr(obj, "_ctl") and the like
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in private
        ):
            found.append(f"line {node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    assert found == [], f"{path.relative_to(ROOT)} uses private flowdbg API: {found}"


def test_the_worked_adapter_of_the_plugin_guide_works(tmp_path: Path) -> None:
    """The minimal adapter docs/plugins.md shows, run as written against a stand-in framework."""
    import sys
    import types

    import flowdbg

    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text[text.index("### A worked minimal adapter") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("\n```", start)]

    framework = types.ModuleType("pipeline")

    class Pipeline:
        def __init__(self, name: str, steps: list[Any]) -> None:
            self.name, self.steps = name, steps

        def run(self, data: dict[str, Any]) -> dict[str, Any]:
            for step in self.steps:
                data = step(data)
            return data

    Pipeline.__module__ = "pipeline"
    framework.Pipeline = Pipeline  # type: ignore[attr-defined]
    guide: dict[str, Any] = {}
    sys.modules["pipeline"] = framework
    try:
        exec(compile(code, "docs/plugins.md", "exec"), guide)
    finally:
        del sys.modules["pipeline"]
    guide["PipelineAdapter"].requires = ()  # the stand-in framework is not a distribution

    def double(d: dict[str, Any]) -> dict[str, Any]:
        return {"x": d["x"] * 2}

    def check(d: dict[str, Any]) -> dict[str, Any]:
        if d["x"] > 100:
            raise ValueError("too big")
        return {**d, "ok": True}

    plugin = types.SimpleNamespace(flowdbg_register_adapters=guide["flowdbg_register_adapters"])
    app = Pipeline("numbers", [double, check])
    with flowdbg.Debugger(plugins=[plugin], db=tmp_path / "guide.db") as dbg:
        dbg.attach(app)
        dbg.attach(app)  # idempotent
        dbg.break_before("double")
        run = dbg.start(app.run, {"x": 3})
        stop = dbg.wait_for_stop(10)
        assert stop is not None and stop.location.framework == "pipeline"
        dbg.set("x", 60)  # what the step receives
        dbg.step_over()
        stop = dbg.wait_for_stop(10)
        assert stop is not None and stop.location.node == "check"
        dbg.resume()
        assert isinstance(run.exception(10), ValueError)  # the edited 60, doubled, is too big
        dbg.clear()
        dbg.break_on_exception()
        run = dbg.start(app.run, {"x": 51})
        stop = dbg.wait_for_stop(10)
        assert stop is not None and stop.location.node == "check" and stop.reason == "exception"
        dbg.resume()
        assert isinstance(run.exception(10), ValueError)
        assert app.run({"x": 1}) == {"x": 2, "ok": True}
        assert dbg.flush(10) and dbg.store is not None
        runs = dbg.store.list_runs()
        assert len(runs) == 3 and {r.framework for r in runs} == {"pipeline"}
        dbg.detach(app)
        assert "run" not in vars(app)


def test_importing_flowdbg_and_its_command_line_stays_light() -> None:
    """``import flowdbg`` imports its parts on first use, and the command line imports rich
    and pydantic only when it prints or validates: ``flowdbg --help`` stays fast."""
    import subprocess
    import sys

    heavy = ("rich", "pydantic", "asyncio", "importlib.metadata", "flowdbg.debugger")
    code = "import sys, {module}; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    for module, allowed in (("flowdbg", ()), ("flowdbg.cli", ())):
        out = subprocess.run(
            [sys.executable, "-c", code.format(module=module, heavy=heavy)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        loaded = [name for name in out.split(",") if name and name not in allowed]
        assert loaded == [], f"import {module} loads {loaded}"
