"""``flowdbg run``: the terminal debugger driven by piped commands, and every bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import Cli

NO_REC = "--no-record"


def run(cli: Cli, *args: str, commands: str = "", code: int = 0) -> str:
    return cli("run", *args, input=commands, code=code).stdout


def prompts(out: str) -> list[str]:
    """The commands echoed after the prompt, in order."""
    return re.findall(r"^\(flowdbg\) (.*)$", out, flags=re.M)


def test_breakpoint_stop_shows_reason_location_and_state(run_cli: Cli) -> None:
    out = run(run_cli, "graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC, commands="c\n")
    assert "set bp-1 node 'beta' before" in out
    assert "stop-1: breakpoint [bp-1] at before node 'beta' (step 2, superstep 2)" in out
    # the compact state summary: key, type, size, preview
    assert re.search(r"^  key\s+type\s+size\s+preview$", out, flags=re.M)
    assert re.search(r"^  x\s+int\s+2$", out, flags=re.M)
    assert prompts(out) == ["c"]
    assert "run completed; result:" in out
    assert json.loads(out.split("result:")[1].split("\n\n")[0]) == {"x": 20, "y": 21}


def test_print_set_and_edit_changes_the_result(run_cli: Cli) -> None:
    commands = "p x\nset x = 5\np x\nc\n"
    out = run(
        run_cli, "graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC, commands=commands
    )
    assert prompts(out) == ["p x", "set x = 5", "p x", "c"]
    after_first_p = out.split("(flowdbg) p x\n")[1]
    assert after_first_p.startswith("2\n")
    assert "x = 5  (applied to the input of 'beta' when it resumes)" in out
    assert out.split("(flowdbg) p x\n")[2].startswith("5\n")
    assert '"x": 50' in out and '"y": 51' in out


def test_set_accepts_python_literals_and_refuses_bare_words(run_cli: Cli) -> None:
    commands = "set tags = ('a', 1)\np tags\nset x = hello\nset x\nc\n"
    out = run(
        run_cli, "graphs.py:app", "-b", "gamma", "--input", '{"x": 1}', NO_REC, commands=commands
    )
    assert out.split("(flowdbg) p tags\n")[1].startswith("('a', 1)\n")
    assert "error: cannot read the value 'hello': give JSON or a Python literal" in out
    assert "error: usage: set PATH = VALUE" in out


def test_del_removes_a_key_from_the_update(run_cli: Cli) -> None:
    # alpha's update {"x": 2} loses its key, so x stays 1: beta makes 10, gamma 11
    args = ["graphs.py:app", "-b", "alpha:after", "--input", '{"x": 1}', NO_REC]
    out = run(run_cli, *args, commands="del x\nc\n")
    assert "deleted x (applied when it resumes)" in out
    assert json.loads(out.split("result:")[1].split("\n\n")[0]) == {"x": 10, "y": 11}


def test_diff_at_after_stop_and_message_at_before_stop(run_cli: Cli) -> None:
    commands = "diff\nn\nc\n"
    out = run(
        run_cli,
        "graphs.py:app",
        "-b",
        "beta:after",
        "--input",
        '{"x": 1}',
        NO_REC,
        commands=commands,
    )
    assert "stop-1: breakpoint [bp-1] at after node 'beta'" in out
    assert "  ~ x: 2 -> 20" in out
    assert "  output (default view): {'x': 20}" in out
    assert "  next: ['gamma']" in out
    assert "stop-2: step at before node 'gamma'" in out
    out2 = run(
        run_cli, "graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC, commands="diff\nc\n"
    )
    assert (
        "stop-1 is before 'beta', which has not run yet; diff needs an after stop: "
        "set one with b beta:after, or n to step" in out2
    )


def test_stepping_into_over_and_out(run_cli: Cli) -> None:
    out = run(run_cli, "graphs.py:fan", "-b", "sub", NO_REC, commands="s\nn\nr\nc\n")
    assert prompts(out) == ["s", "n", "r", "c"]
    stops = re.findall(r"^stop-\d: (\w+)(?: \[[^\]]*\])? at (before \w+ '[\w/]+')", out, flags=re.M)
    assert stops == [
        ("breakpoint", "before node 'sub'"),
        ("step", "before node 'sub/inner1'"),  # s: into the subgraph
        ("step", "before node 'sub/inner2'"),  # n: over, at the same depth
        ("step", "before node 'done'"),  # r: out of the subgraph
    ]
    assert "run completed" in out


def test_stepping_into_a_tool_call(run_cli: Cli) -> None:
    args = ["graphs.py:tools", "--stop-on-entry", "--input", '{"q": "hi"}', NO_REC]
    out = run(run_cli, *args, commands="s\nc\n")
    assert "stop-1: entry at before node 'agent'" in out
    assert "stop-2: step at before tool 'agent/search' (step 2)" in out
    assert "  input (default view): {'query': 'hi'}" in out
    assert '"results": [\n      "hi result"\n    ]' in out


def test_where_shows_the_coordinates(run_cli: Cli) -> None:
    out = run(run_cli, "graphs.py:fan", "-b", "inner1", NO_REC, commands="w\nc\n")
    where = out.split("(flowdbg) w\n")[1].split("(flowdbg)")[0]
    assert re.search(r"^  stop\s+stop-1 \(breakpoint\)$", where, flags=re.M)
    assert re.search(r"^  run\s+[0-9a-f]+ \(child of [0-9a-f]{8}\)$", where, flags=re.M)
    assert re.search(r"^  at\s+before node 'inner1'$", where, flags=re.M)
    assert re.search(r"^  path\s+sub/inner1$", where, flags=re.M)
    assert re.search(r"^  step\s+1$", where, flags=re.M)
    assert re.search(r"^  superstep\s+1$", where, flags=re.M)
    assert re.search(r"^  branch\s+\S+$", where, flags=re.M)
    assert re.search(r"^  attempt\s+1$", where, flags=re.M)


def test_breakpoints_list_tbreak_clear_disable_enable(run_cli: Cli) -> None:
    commands = "\n".join(
        [
            "b",
            "tbreak gamma",
            "b gamma:after if state['x'] > 100",
            "disable 1",
            "b",
            "enable bp-1",
            "cl 3",
            "cl 9",
            "b nope",
            "b gamma if state[",
            "b",
            "c",
            "c",
        ]
    )
    out = run(
        run_cli,
        "graphs.py:app",
        "-b",
        "beta",
        "--input",
        '{"x": 1}',
        NO_REC,
        commands=commands + "\n",
    )
    assert "bp-1 node 'beta' before (1 hits)" in out
    assert "set bp-2 node 'gamma' before temporary (0 hits)" in out
    assert "set bp-3 node 'gamma' after if state['x'] > 100 (0 hits)" in out
    assert "disabled bp-1" in out and "bp-1 node 'beta' before disabled (1 hits)" in out
    assert "enabled bp-1" in out
    assert "removed bp-3" in out
    assert "error: no breakpoint 'bp-9'; breakpoints: bp-1, bp-2" in out
    assert "error: unknown node 'nope'; nodes: alpha, beta, gamma" in out
    assert "error:" in out.split("(flowdbg) b gamma if state[\n")[1].splitlines()[0]
    # the temporary breakpoint stops once, then is gone
    assert "stop-2: breakpoint [bp-2] at before node 'gamma'" in out
    assert "run completed" in out


def test_list_shows_the_graph_around_the_node(run_cli: Cli) -> None:
    out = run(run_cli, "graphs.py:build_support", "-b", "refund", NO_REC, commands="l\nc\n")
    assert "graph 'support'" in out
    assert "  classify?  ->  [refund]  ->  END" in out
    assert "(? = conditional edge)" in out
    out = run(run_cli, "graphs.py:build_support", "--stop-on-entry", NO_REC, commands="l\nc\n")
    assert "  START  ->  [classify]  ->  refund?, answer?" in out


def test_list_inside_a_subgraph_and_a_tool(run_cli: Cli) -> None:
    out = run(run_cli, "graphs.py:fan", "-b", "inner2", NO_REC, commands="l\nc\n")
    assert "stop-1: breakpoint [bp-1] at before node 'sub/inner2'" in out
    assert "graph 'inner' (in sub)" in out
    assert "  inner1  ->  [inner2]  ->  END" in out
    out = run(
        run_cli,
        "graphs.py:tools",
        "--stop-on-entry",
        "--input",
        '{"q": "a"}',
        NO_REC,
        commands="s\nl\nc\n",
    )
    assert "tool 'search' runs inside node 'agent'" in out
    assert "START  ->  [agent]  ->  END" in out


def test_print_input_of_a_tool_call(run_cli: Cli) -> None:
    commands = "s\np input:query\np input:\np nope\np x[\nc\n"
    out = run(
        run_cli,
        "graphs.py:tools",
        "--stop-on-entry",
        "--input",
        '{"q": "a"}',
        NO_REC,
        commands=commands,
    )
    assert out.split("(flowdbg) p input:query\n")[1].startswith("'a'\n")
    assert out.split("(flowdbg) p input:\n")[1].startswith("{'query': 'a'}\n")
    nope = out.split("(flowdbg) p nope\n")[1].splitlines()[0]
    assert nope.startswith("error: ") and "'nope'" in nope
    bad = out.split("(flowdbg) p x[\n")[1].splitlines()[0]
    assert bad.startswith("error: state path 'x[' is malformed")


def test_logpoints_print_their_messages_in_the_session(run_cli: Cli) -> None:
    commands = "logpoint gamma:after x is now {state[x]}\nc\n"
    out = run(
        run_cli, "graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC, commands=commands
    )
    assert "set bp-2 logpoint 'gamma' after log 'x is now {state[x]}' (0 hits)" in out
    # printed as the run logs it, after the stop was resumed and before the result
    after_c = out.split("(flowdbg) c\n")[1]
    assert after_c.index("log: x is now 20") < after_c.index("run completed; result:")


def test_log_help_and_unknown_command(run_cli: Cli) -> None:
    commands = "log\nh\nh set\nh zz\nfrobnicate now\nc\n"
    out = run(
        run_cli, "graphs.py:app", "-b", "gamma", "--input", '{"x": 1}', NO_REC, commands=commands
    )
    log = out.split("(flowdbg) log\n")[1].split("(flowdbg)")[0]
    assert "linear (stategraph) running" in log
    assert re.search(r"^1\s+alpha\s+node\s+completed", log, flags=re.M)
    assert re.search(r"^2\s+beta\s+node\s+completed", log, flags=re.M)
    assert "c(ontinue)" in out and "q(uit)" in out and "tbreak [KIND:]NODE[:after] [if EXPR]" in out
    assert (
        "set PATH = VALUE: edit PATH where p PATH reads it: the input at a before stop, the "
        "output at an after stop (VALUE is JSON or a Python literal); applied on resume" in out
    )
    assert "unknown command 'zz'; type h for help" in out
    assert "unknown command 'frobnicate'; type h for help" in out


def test_end_of_input_continues_to_the_end(run_cli: Cli) -> None:
    out = run(run_cli, "graphs.py:app", "-b", "beta", "-b", "gamma", "--input", '{"x": 1}', NO_REC)
    assert "stop-1: breakpoint [bp-1] at before node 'beta'" in out
    assert (
        "end of input with stop-1 open: clearing breakpoints and continuing to the end of the run"
        in out
    )
    assert "stop-2" not in out
    assert "run completed" in out


def test_quit_terminates_and_exits_1(run_cli: Cli) -> None:
    out = run(
        run_cli,
        "graphs.py:app",
        "-b",
        "beta",
        "--input",
        '{"x": 1}',
        NO_REC,
        commands="q\n",
        code=1,
    )
    assert "terminating the run" in out
    assert "run terminated (quit)" in out
    assert "run completed" not in out


def test_failed_run_exits_1_with_the_error(run_cli: Cli) -> None:
    result = run_cli("run", "graphs.py:failing", "--input", '{"x": 1}', NO_REC, code=1)
    assert "run failed: ValueError: boom at x=2" in result.stdout
    assert result.stderr.strip() == "error: the run failed: ValueError: boom at x=2"
    assert "failing (stategraph) failed" in result.stdout


def test_break_on_exception_stops_at_the_error(run_cli: Cli) -> None:
    out = run(
        run_cli,
        "graphs.py:failing",
        "--break-on-exception",
        "--input",
        '{"x": 1}',
        NO_REC,
        commands="p x\nc\n",
        code=1,
    )
    assert "set bp-1 exception any" in out
    assert "stop-1: exception [bp-1] at error node 'boom'" in out
    assert "  error: ValueError: boom at x=2" in out
    assert out.split("(flowdbg) p x\n")[1].startswith("2\n")


def test_no_breakpoints_runs_to_the_end(run_cli: Cli) -> None:
    out = run(run_cli, "graphs.py:app", "--input", '{"x": 1}', NO_REC)
    assert "no breakpoints, so it runs to the end" in out
    assert prompts(out) == []
    assert "linear (stategraph) completed: 3 steps" in out


def test_input_file_and_module_target(run_cli: Cli, graphs: Path) -> None:
    (graphs / "input.json").write_text('{"x": 3}', encoding="utf-8")
    out = run(run_cli, "graphs:app", "--input-file", "input.json", NO_REC)
    assert '"x": 40' in out


def test_factory_function_is_called(run_cli: Cli) -> None:
    out = run(run_cli, "graphs.py:build_support", NO_REC)
    assert "running 'support' (3 nodes)" in out
    assert '"reply": "refund opened"' in out


def test_target_without_object_picks_the_only_graph(run_cli: Cli, graphs: Path) -> None:
    (graphs / "single.py").write_text("from graphs import app as graph\n", encoding="utf-8")
    out = run(run_cli, "single.py", "--input", '{"x": 0}', NO_REC)
    assert "running 'linear'" in out
    message = run_cli.error("run", "graphs.py", NO_REC)
    assert (
        "error: 'graphs.py' holds 5 debuggable objects (app, failing, fan, shell_agent, tools); "
        "name one" in message
    )


def test_commands_the_run_never_read_are_reported(run_cli: Cli) -> None:
    out = run(run_cli, "graphs.py:app", "--input", '{"x": 1}', NO_REC, commands="b beta\nc\n")
    assert "no breakpoints, so it runs to the end" in out
    assert (
        "note: the run ended with 2 commands unread ('b beta', 'c'); commands are read only "
        "while the run is stopped (see -b NODE, --stop-on-entry)" in out
    )
    args = ("graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC)
    out = run(run_cli, *args, commands="c\n# done\np x\n")
    assert prompts(out) == ["c"]
    assert "note: the run ended with 1 command unread ('p x')" in out
    out = run(run_cli, *args, commands="c\n# only a comment\n")
    assert "unread" not in out


BAD_RUNS = [
    (["graphs.py:app", "-b", "nope"], "unknown node 'nope' in -b nope; nodes: alpha, beta, gamma"),
    (["graphs.py:app", "-b", "zz*:after"], "unknown node 'zz*' in -b zz*:after; nodes: alpha,"),
    (
        ["graphs.py:app", "-b", "beta:during"],
        "unknown node 'beta:during' in -b beta:during (a position after ':' is 'before' or "
        "'after', not 'during'); nodes: alpha,",
    ),
    (
        ["graphs.py:app", "-b", "beta if x =="],
        "-b takes NODE[:before|:after], not a condition ('beta if x =='); set a conditional ",
    ),
    (["graphs.py:app", "--input", "{x: 1}"], "--input is not valid JSON: Expecting property name"),
    (["graphs.py:app", "--config", "{x"], "--config is not valid JSON: Expecting property name"),
    (["graphs.py:app", "--config", '"a"'], "--config must be a JSON object, not str"),
    (
        ["graphs.py:app", "--resume", "1"],
        "--resume: adapter 'stategraph' cannot resume a run of a CompiledGraph with a value; "
        "start a new run with an input instead",
    ),
    (
        ["graphs.py:app", "--config", "{}"],
        "--config: CompiledGraph.invoke() takes no config after the input, so adapter "
        "'stategraph' cannot pass one; run it without --config",
    ),
    (
        ["graphs.py:app", "--thread", "t1"],
        "--thread is an option of adapter 'langgraph', and graphs.py:app is run by adapter "
        "'stategraph'; run it without --thread",
    ),
    (["broken.py:app"], "cannot import 'broken.py': ModuleNotFoundError: No module named 'no_"),
    (["syntax.py:app"], "cannot import 'syntax.py': SyntaxError:"),
    (["missing.py:app"], "no file 'missing.py'; give TARGET as path/to/file.py:obj"),
    (["no_such_pkg.mod:app"], "no module named 'no_such_pkg.mod'"),
    (["graphs.py:nothing"], "'graphs.py' has no attribute 'nothing'; it defines: END, StateGraph,"),
    (["graphs.py:not_a_graph"], "graphs.py:not_a_graph is not supported: no flowdbg adapter acc"),
    (["graphs.py:needs_arguments"], "graphs.py:needs_arguments is a callable no adapter accepts,"),
]


@pytest.mark.parametrize("args, message", BAD_RUNS)
def test_bad_input_is_one_line_and_exit_1(run_cli: Cli, args: list[str], message: str) -> None:
    line = run_cli.error("run", *args, NO_REC)
    assert line.startswith("error: " + message), line


def test_input_and_input_file_together_is_a_usage_error(run_cli: Cli, graphs: Path) -> None:
    (graphs / "input.json").write_text("{}", encoding="utf-8")
    result = run_cli("run", "graphs.py:app", "--input", "{}", "--input-file", "input.json", code=2)
    assert "give --input or --input-file, not both" in result.stderr


def test_malformed_input_file(run_cli: Cli, graphs: Path) -> None:
    (graphs / "input.json").write_text("{", encoding="utf-8")
    line = run_cli.error("run", "graphs.py:app", "--input-file", "input.json", NO_REC)
    assert line.startswith("error: --input-file input.json is not valid JSON")


def test_db_that_is_not_a_flowdbg_database(run_cli: Cli, graphs: Path) -> None:
    (graphs / "notes.db").write_text("these are my notes, not a database\n" * 50, encoding="utf-8")
    line = run_cli.error("run", "graphs.py:app", "--db", "notes.db")
    assert "notes.db" in line


def test_conditional_breakpoint_and_edit_at_an_error_stop(run_cli: Cli) -> None:
    commands = "b boom if state['x'] == 2\nc\np x\nset x = 3\nc\n"
    out = run(
        run_cli, "graphs.py:failing", "--stop-on-entry", "--break-on-exception", "--input",
        '{"x": 1}', NO_REC, commands=commands, code=1,
    )  # fmt: skip
    assert "set bp-2 node 'boom' before if state['x'] == 2 (0 hits)" in out
    assert "stop-2: breakpoint [bp-2] at before node 'boom'" in out
    assert "x = 3  (applied to the input of 'boom' when it resumes)" in out
    # the edit reached the node: it fails with x=3, and the exception breakpoint stops there
    assert "stop-3: exception [bp-1] at error node 'boom'" in out
    assert "  error: ValueError: boom at x=3" in out


def test_the_documented_example_runs_the_quickstart_graph(run_cli: Cli) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"
    docs = (example.parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "flowdbg run examples/quickstart.py:build_graph --input" in docs
    args = [f"{example}:build_graph", "--input", '{"ticket": "I want my money back"}']
    out = run(run_cli, *args, "-b", "classify:after", NO_REC, commands="p intent\nc\n")
    assert out.split("(flowdbg) p intent\n")[1].startswith("'refund'\n")
    assert '"escalated": true' in out


def test_tool_breakpoints_stop_only_the_matching_call(run_cli: Cli, db: Path) -> None:
    commands = "tool shell ~rm\\s+-rf\nc\np input:cmd\nset cmd = 'echo kept'\nc\n"
    out = run_cli(
        "run",
        "graphs.py:shell_agent",
        "--stop-on-entry",
        "--input",
        '{"cmds": ["ls", "rm -rf /"]}',
        input=commands,
    ).stdout
    assert "set bp-1 tool 'shell' args~'rm\\\\s+-rf' (0 hits)" in out
    assert out.count("breakpoint [bp-1] at before tool 'act/shell'") == 1
    assert "(flowdbg) p input:cmd\n'rm -rf /'" in out
    assert '"ran ls"' in out and '"ran echo kept"' in out and "ran rm" not in out


def test_tool_command_usage(run_cli: Cli, db: Path) -> None:
    out = run_cli(
        "run",
        "graphs.py:shell_agent",
        "--stop-on-entry",
        "--input",
        '{"cmds": []}',
        input="tool shell rm\ntool\nc\n",
    ).stdout
    assert out.count("error: usage: tool NAME [~REGEX] [if EXPR]") == 2


HANGING = """
import time
from flowdbg.adapters.stategraph import END, StateGraph

def hang(s):
    time.sleep(8)  # a sync call nothing can interrupt
    return {}

g = StateGraph(name="hanging")
g.add_node("fan", lambda s: {})
g.add_node("hang", hang)
g.add_node("other", lambda s: {})
g.set_entry_point("fan")
g.add_edge("fan", "hang")
g.add_edge("fan", "other")
g.add_edge("hang", END)
g.add_edge("other", END)
app = g.compile()
"""


def test_quit_names_a_unit_that_cannot_be_interrupted(run_cli: Cli, graphs: Path) -> None:
    (graphs / "hanging.py").write_text(HANGING, encoding="utf-8")
    out = run(run_cli, "hanging.py:app", "-b", "other", "--input", "{}", commands="q\n", code=1)
    assert "stop-1: breakpoint [bp-1] at before node 'other'" in out
    assert re.search(
        r"the run was terminated, but 'hang' \(step 2, \d+\.\d s\) is still running and cannot "
        r"be interrupted there; the run ends when it returns; leaving it \(it was recorded as "
        r"running\)",
        out,
    )


def test_p_and_set_reach_the_same_view_and_state_is_read_only(run_cli: Cli) -> None:
    # gamma returns {"y": x + 1}: after it, p and set reach that update; x is only in the state
    commands = "p y\np x\np state:x\nset state:x = 1\np memory:x\nset y = 5\np y\np state:y\nc\n"
    args = ["graphs.py:app", "-b", "gamma:after", "--input", '{"x": 1}', NO_REC]
    out = run(run_cli, *args, commands=commands)
    assert "  output (default view): {'y': 21}" in out
    assert "  state (p state:PATH; read only):" in out
    answers = [a.strip() for a in out.split("(flowdbg) ")[1:9]]
    assert answers[0] == "p y\n21"
    assert answers[1].startswith("p x\nerror: output has no key 'x'")
    assert answers[2] == "p state:x\n20"
    assert answers[3] == (
        "set state:x = 1\nerror: the state after 'gamma' is what the framework computes from "
        "its update: edit output:x (what 'gamma' commits) instead, where its output is an "
        "update of the state (a graph node's); an emitted event or a tool's result is not"
    )
    assert answers[4] == (
        "p memory:x\nerror: stop-1 has no memory view: there is no view 'memory'; "
        "its views are state, input, output"
    )
    assert answers[6] == "p y\n5"
    assert answers[7] == "p state:y\n21"  # the state shown is the framework's, not the edit
    assert json.loads(out.split("result:")[1].split("\n\n")[0]) == {"x": 20, "y": 5}
