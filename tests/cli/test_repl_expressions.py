"""The terminal debugger's p with expressions, display, watch and logpoint commands."""

from __future__ import annotations

import re

from cli_helpers import Cli


def _run(cli: Cli, commands: str, *args: str) -> str:
    return cli(
        "run",
        "graphs.py:app",
        "-b",
        "beta",
        "--input",
        '{"x": 1}',
        "--no-record",
        *args,
        input=commands,
    ).stdout


def _after(out: str, command: str) -> str:
    """What the session printed right after ``command``."""
    return out.split(f"(flowdbg) {command}\n", 1)[1]


def test_print_evaluates_expressions_in_the_sandbox(run_cli: Cli) -> None:
    commands = "p x * 10\np state['x'] + 1\np len(state)\np node\np __import__('os')\nc\n"
    out = _run(run_cli, commands)
    assert _after(out, "p x * 10").startswith("20\n")  # state keys are names too
    assert _after(out, "p state['x'] + 1").startswith("3\n")
    assert _after(out, "p len(state)").startswith("1\n")
    assert _after(out, "p node").startswith("'beta'\n")
    refused = _after(out, "p __import__('os')").splitlines()[0]
    assert "'__import__' is not allowed" in refused
    assert "run completed" in out  # an error keeps the prompt


def test_print_of_a_missing_path_says_which_key(run_cli: Cli) -> None:
    out = _run(run_cli, "p nothing\nc\n")
    assert "nothing" in _after(out, "p nothing").splitlines()[0]
    assert "has no" in _after(out, "p nothing").splitlines()[0]


def test_display_shows_at_every_stop(run_cli: Cli) -> None:
    commands = "display x\ndisplay x + 100\ndisplay x\nb gamma\nc\ndisplay\nundisplay 1\nc\n"
    out = _run(run_cli, commands)
    assert _after(out, "display x").startswith("1: x = 2\n")
    assert _after(out, "display x + 100").startswith("2: x + 100 = 102\n")
    # asked again: shown as the one it is, not added twice
    assert out.split("(flowdbg) display x\n")[2].startswith("1: x = 2\n")
    at_gamma = _after(out, "c").split("(flowdbg)")[0]
    assert "stop-2" in at_gamma
    assert re.search(r"^  1: x = 20$", at_gamma, flags=re.M)
    assert re.search(r"^  2: x \+ 100 = 120$", at_gamma, flags=re.M)
    assert _after(out, "display").startswith("1: x\n2: x + 100\n")
    assert _after(out, "undisplay 1").startswith("1 displayed\n")


def test_display_of_a_path_missing_now_shows_it_missing_until_it_resolves(run_cli: Cli) -> None:
    out = _run(run_cli, "display state:y\nb gamma\nc\nb gamma:after\nc\nc\n")
    # accepted as watch accepts it: y does not exist before beta, but gamma creates it
    shown = _after(out, "display state:y").splitlines()
    assert shown[0] == "1: state:y = <state has no key 'y' at 'y'; available keys: x>"
    assert shown[1] == (
        "note: 'state:y' does not resolve at stop-1 now; it stays displayed and shows its "
        "value at the stops where it does"
    )
    stops = out.split("(flowdbg) c\n")
    assert "  1: state:y = <state has no key 'y' at 'y'; available keys: x>" in stops[1]
    assert re.search(r"^  1: state:y = 21$", stops[2], flags=re.M)  # after gamma: there now


def test_a_malformed_path_is_refused_with_what_a_path_looks_like(run_cli: Cli) -> None:
    out = _run(run_cli, "watch 1bad\ndisplay 1bad\ndisplay\nc\n")
    hint = (
        "state path '1bad' is malformed at position 0: '1bad' is not a name; a name is letters, "
        "digits and _ not starting with a digit (e.g. messages[0].content); write ['1bad'] for a "
        "key spelled so"
    )
    assert _after(out, "watch 1bad").splitlines()[0] == f"error: cannot watch '1bad': {hint}"
    assert _after(out, "display 1bad").splitlines()[0] == f"error: {hint}"
    assert _after(out, "display").startswith("nothing is displayed")  # refused: not kept


def test_watch_and_logpoint_commands(run_cli: Cli) -> None:
    commands = "watch y\nlogpoint gamma x is {state[x]}\nc\nc\n"
    out = _run(run_cli, commands)
    assert "set bp-2 watch" in out and "set bp-3 logpoint" in out
    assert re.search(r"stop-2: watch \[bp-2\] at after node 'gamma'", out)
    # what changed, as gdb shows a watchpoint's old and new value
    shown = out.split("stop-2: watch", 1)[1].splitlines()
    assert shown[1] == "  watch y: (missing) -> 21"


def test_rewind_edits_keep_their_quotes_and_brackets() -> None:
    from flowdbg.cli._repl import _words

    assert _words("1 intent=\"question\"  items=[1, 2] msg='a b'") == [
        "1",
        'intent="question"',
        "items=[1, 2]",
        "msg='a b'",
    ]
    assert _words('3 messages[-1].content="use the EU endpoint"') == [
        "3",
        'messages[-1].content="use the EU endpoint"',
    ]
