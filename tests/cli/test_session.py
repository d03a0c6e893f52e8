"""The terminal debugger's session object, driven directly where a test must control timing
(several stops open at once) or completion."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

import flowdbg
from flowdbg.cli._render import Out
from flowdbg.cli._repl import PROMPT, EchoSource, Outcome, Session, parse_value

T = 10.0


@pytest.fixture
def graphs_module(graphs: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(graphs))
    import graphs as module  # the test graphs written by the fixture

    yield module
    sys.modules.pop("graphs", None)


def make_out() -> tuple[Out, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, color_system=None, highlight=False, markup=False)
    return Out(console), buffer


def test_stops_lists_parallel_stops_and_stop_selects_one(graphs_module: Any) -> None:
    dbg = flowdbg.Debugger(record=False)
    target = graphs_module.fan
    dbg.attach(target)
    dbg.break_before("left")
    dbg.break_before("right")
    handle = dbg.start(target.invoke, {})
    assert len(dbg.wait_for_stops(2, timeout=T)) == 2  # both branches held before the session
    out, buffer = make_out()
    commands = ["stops", "stop 2", "stops", "w", "stop 9", "c", "c"]
    session = Session(dbg, out, description=dbg.describe(target), source=EchoSource(commands, out))
    try:
        assert session.run() is Outcome.ENDED
        assert handle.result(timeout=T)["items"] == ["left", "right"]
    finally:
        dbg.close()
    text = buffer.getvalue()
    assert "  also open: stop-2 (before " in text
    first = text.split(f"{PROMPT}stops\n")[1].split(PROMPT)[0].splitlines()
    assert first[0].startswith("* stop-1: breakpoint")
    assert first[1].startswith("  stop-2: breakpoint")
    assert "branch" in first[0]
    assert "selected stop-2" in text
    second = text.split(f"{PROMPT}stops\n")[2].split(PROMPT)[0].splitlines()
    assert second[0].startswith("  stop-1: ") and second[1].startswith("* stop-2: ")
    assert "error: no open stop 'stop-9'; open stops: stop-1, stop-2" in text


def completions(session: Session, line: str) -> list[str]:
    before, _, text = line.rpartition(" ")
    return session.candidates(before + (" " if before else ""), text)


def test_completion_of_commands_nodes_keys_and_ids(graphs_module: Any) -> None:
    dbg = flowdbg.Debugger(record=False)
    target = graphs_module.build_support()
    dbg.attach(target)
    dbg.break_after("classify")
    handle = dbg.start(target.invoke, {"ticket": "hi"})
    try:
        assert dbg.wait_for_stop(timeout=T) is not None
        out, _ = make_out()
        session = Session(dbg, out, description=dbg.describe(target), source=EchoSource([], out))
        assert completions(session, "con") == ["continue "]
        assert completions(session, "d") == ["del ", "diff ", "disable ", "display "]
        assert completions(session, "b cl") == ["classify "]
        assert completions(session, "tbreak ") == ["classify ", "refund ", "answer "]
        # the keys of what p and set reach after classify: its output, not the state
        assert completions(session, "p ") == ["intent", "confidence"]
        assert completions(session, "set con") == ["confidence"]
        assert completions(session, "disable ") == ["bp-1 "]
        assert completions(session, "stop ") == ["stop-1 "]
        assert completions(session, "h wh") == ["where "]
        assert completions(session, "c x") == []
        dbg.resume()
        handle.result(timeout=T)
    finally:
        dbg.close()


@pytest.mark.parametrize(
    "text, value",
    [
        ('"question"', "question"),
        ("5", 5),
        ("[1, 2]", [1, 2]),
        ('{"a": null}', {"a": None}),
        ("'single'", "single"),
        ("(1, 'a')", (1, "a")),
        ("None", None),
        ("True", True),
    ],
)
def test_parse_value(text: str, value: Any) -> None:
    assert parse_value(text) == value


@pytest.mark.parametrize("text", ["", "hello", "os.system('x')", "[1,"])
def test_parse_value_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_value(text)


def test_end_of_input_resumes_every_later_stop(graphs_module: Any) -> None:
    dbg = flowdbg.Debugger(record=False)
    target = graphs_module.fan
    dbg.attach(target)
    dbg.break_before("*")
    handle = dbg.start(target.invoke, {})
    out, buffer = make_out()
    try:
        session = Session(dbg, out, description=dbg.describe(target), source=EchoSource([], out))
        assert session.run() is Outcome.ENDED
        assert json.loads(json.dumps(handle.result(timeout=T)))["z"] == 11
    finally:
        dbg.close()
    assert "end of input with stop-1 open" in buffer.getvalue()


def test_stops_lists_the_units_running_beside_the_stop() -> None:
    import threading

    dbg = flowdbg.Debugger(record=False)
    dbg.break_before("held")
    started, release = threading.Event(), threading.Event()

    def busy(scope: flowdbg.RunScope) -> None:
        unit = scope.unit("slow", branch="b2")
        unit.before(state={})
        started.set()
        assert release.wait(T)
        unit.after(output=None)

    scope = dbg.begin_run(framework="test", name="t", input=None)
    worker = threading.Thread(target=busy, args=(scope,))
    worker.start()
    assert started.wait(T)
    held = dbg.start(lambda: scope.unit("held", branch="b1").call(lambda x: x, 1))
    assert dbg.wait_for_stop(T) is not None
    out, buffer = make_out()
    session = Session(dbg, out, description=None, source=EchoSource([], out))
    try:
        session.onecmd("stops")  # while 'slow' still runs on its own branch
        dbg.resume()
        assert held.result(T) == 1
    finally:
        release.set()
        worker.join(T)
        scope.end(output=None)
        dbg.close()
    listing = buffer.getvalue()
    assert "* stop-1: breakpoint" in listing
    assert re.search(r"running node 'slow' \(step 1, \d+\.\d s\)", listing)


@pytest.mark.parametrize(
    ("commands", "now"),
    [(["c", "c"], "stop-2"), (["stop 2", "c", "c"], "stop-1")],
    ids=["next_open_stop", "back_to_a_stop_shown_before"],
)
def test_continuing_one_of_several_stops_says_where_the_prompt_is_now(
    graphs_module: Any, commands: list[str], now: str
) -> None:
    dbg = flowdbg.Debugger(record=False)
    target = graphs_module.fan
    dbg.attach(target)
    dbg.break_before("left")
    dbg.break_before("right")
    handle = dbg.start(target.invoke, {})
    assert len(dbg.wait_for_stops(2, timeout=T)) == 2  # both branches held before the session
    out, buffer = make_out()
    session = Session(dbg, out, description=dbg.describe(target), source=EchoSource(commands, out))
    try:
        assert session.run() is Outcome.ENDED
        assert handle.result(timeout=T)["items"] == ["left", "right"]
    finally:
        dbg.close()
    text = buffer.getvalue()
    assert "also open: stop-2 (before 'right'); type stops to list them, stop N to switch" in text
    went = "stop-1" if now == "stop-2" else "stop-2"
    node = "right" if now == "stop-2" else "left"
    # after the first c: which stop went on, which one the prompt is at, and where that is
    after = text.split(f"{PROMPT}c\n")[1].split(PROMPT)[0].strip().splitlines()
    assert after[0] == f"{went} went on; now at {now}, which was open already:"
    assert after[1].startswith(f"{now}: breakpoint [bp-") and f"before node '{node}'" in after[1]


def test_a_view_named_in_a_path_at_a_tool_stop_reads_that_view(graphs_module: Any) -> None:
    dbg = flowdbg.Debugger(record=False)
    target = graphs_module.tools
    dbg.attach(target)
    dbg.break_on_tool("search")
    handle = dbg.start(target.invoke, {"q": "cats"})
    assert dbg.wait_for_stop(T) is not None
    out, buffer = make_out()
    commands = ["p state['nope']", "p state['q']", "p args['nope']", "p result['x']", "c"]
    session = Session(dbg, out, description=dbg.describe(target), source=EchoSource(commands, out))
    try:
        assert session.run() is Outcome.ENDED
        assert handle.result(timeout=T)["results"] == ["cats result"]
    finally:
        dbg.close()
    lines = buffer.getvalue().splitlines()

    def answer(command: str) -> str:
        return lines[lines.index(PROMPT + command) + 1]

    # the key missing in the view the path names, and the keys there (not "input has no key
    # 'state'", the default view's)
    assert answer("p state['nope']") == (
        "error: state has no key 'nope' at 'nope'; available keys: q"
    )
    assert answer("p state['q']") == "'cats'"
    assert answer("p args['nope']") == (
        "error: args has no key 'nope' at 'nope'; available keys: query"
    )
    assert answer("p result['x']").startswith("error: stop-1 has no result view: the unit has not")


def test_watching_a_path_missing_at_the_stop_says_so_and_keeps_the_watch(
    graphs_module: Any,
) -> None:
    dbg = flowdbg.Debugger(record=False)
    target = graphs_module.build_support()
    dbg.attach(target)
    dbg.break_before("classify")
    handle = dbg.start(target.invoke, {"ticket": "money back"})
    assert dbg.wait_for_stop(T) is not None
    out, buffer = make_out()
    commands = ["watch intnet", "watch ticket", "watch intent", "c", "c"]
    session = Session(dbg, out, description=dbg.describe(target), source=EchoSource(commands, out))
    try:
        assert session.run() is Outcome.ENDED
        handle.result(timeout=T)
    finally:
        dbg.close()
    text = buffer.getvalue()
    lines = text.splitlines()
    typo = lines[lines.index(PROMPT + "watch intnet") + 2]
    assert typo == (
        "note: 'intnet' does not exist at stop-1 now (state has no key 'intnet' at 'intnet'; "
        "available keys: ticket); the watch stays set and stops after a unit that creates or "
        "changes it"
    )
    assert lines[lines.index(PROMPT + "watch ticket") + 2] == PROMPT + "watch intent"
    # the watch of a key a later unit creates still stops there
    assert "watch [bp-4] at after node 'classify'" in text


class _OpenAnotherStopFirst:
    """Commands from a list; before handing over the first, another branch stops (so its stop
    opens after the first stop was shown, and the user was never told of it)."""

    interactive = False

    def __init__(self, dbg: flowdbg.Debugger, go: Any, commands: list[str], out: Out) -> None:
        self._dbg, self._go, self._out = dbg, go, out
        self._commands = iter(commands)
        self._first = True

    def read(self, prompt: str) -> str | None:
        if self._first:
            self._first = False
            self._go.set()
            assert len(self._dbg.wait_for_stops(2, timeout=T)) == 2
        line = next(self._commands, None)
        if line is not None:
            self._out.line(prompt + line)
        return line

    def close(self) -> None:
        pass


@pytest.mark.parametrize("command", ["n", "s", "r", "c"])
def test_a_step_that_moves_the_prompt_to_a_stop_open_already_says_so(command: str) -> None:
    import threading

    dbg = flowdbg.Debugger(record=False)
    dbg.break_before("first")
    dbg.break_before("second")
    go = threading.Event()
    scope = dbg.begin_run(framework="test", name="t", input=None)

    def other_branch() -> int:
        assert go.wait(T)
        out = scope.unit("second", branch="b2").call(lambda x: x, 2)
        first.result(T)
        scope.end(output=None)  # both branches are done: the run ends and so does the session
        return cast(int, out)

    first = dbg.start(lambda: scope.unit("first", branch="b1").call(lambda x: x, 1))
    assert dbg.wait_for_stop(T) is not None
    second = dbg.start(other_branch)
    out, buffer = make_out()
    source = _OpenAnotherStopFirst(dbg, go, [command, "c"], out)
    session = Session(dbg, out, description=None, source=source)
    try:
        assert session.run() is Outcome.ENDED
        assert first.result(T) == 1 and second.result(T) == 2
    finally:
        dbg.close()
    text = buffer.getvalue()
    assert "also open" not in text.split(PROMPT)[0]  # stop-2 opened after stop-1 was shown
    after = text.split(f"{PROMPT}{command}\n")[1].split(PROMPT)[0].strip().splitlines()
    assert after[0] == "stop-1 went on; now at stop-2, which was open already:"
    assert after[1].startswith("stop-2: breakpoint [bp-2] at before node 'second'")
