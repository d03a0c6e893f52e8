"""Tests for flowdbg._expr: sandboxed breakpoint conditions and logpoint templates."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest
from simpleeval import IterableTooLong, NumberTooHigh

from flowdbg._expr import (
    SAFE_FUNCTIONS,
    Expression,
    ExpressionEvaluationError,
    check_template,
    compile_expression,
    render_template,
)
from flowdbg.errors import BreakpointError, ExpressionError

ALLOWED = (
    "state",
    "input",
    "output",
    "args",
    "error",
    "node",
    "kind",
    "position",
    "step",
    "superstep",
    "branch",
    "attempt",
    "hits",
    "value",
    "path",
)


def compile_(source: str) -> Expression:
    return compile_expression(source, allowed_names=ALLOWED)


def evaluate(source: str, **names: Any) -> Any:
    return compile_(source).evaluate(names)


def refusal(source: str) -> str:
    with pytest.raises(ExpressionError) as info:
        compile_(source)
    return str(info.value)


def evaluation_failure(source: str, **names: Any) -> ExpressionEvaluationError:
    expression = compile_(source)
    with pytest.raises(ExpressionEvaluationError) as info:
        expression.evaluate(names)
    return info.value


@dataclasses.dataclass
class Counter:
    count: int
    label: str = "x"


class Recorder:
    """An object with methods whose names are on the method whitelist."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def replace(self, *args: Any) -> str:
        self.calls.append("replace")
        return "replaced"

    def get(self, *args: Any) -> str:
        self.calls.append("get")
        return "got"


# --------------------------------------------------------------------------------------------
# Valid conditions


@pytest.mark.parametrize(
    ("source", "names", "expected"),
    [
        ("state['count'] > 2", {"state": {"count": 3}}, True),
        ("state['count'] > 2", {"state": {"count": 2}}, False),
        ("state['count'] > 2 and node == 'b'", {"state": {"count": 3}, "node": "b"}, True),
        ("state['count'] > 2 and node == 'b'", {"state": {"count": 3}, "node": "a"}, False),
        ("not (hits < 3 or attempt >= 2)", {"hits": 5, "attempt": 1}, True),
        ("1 < hits <= 3", {"hits": 3}, True),
        ("len(state['items']) >= 2", {"state": {"items": [1, 2]}}, True),
        ("len(state['items']) >= 2", {"state": {"items": [1]}}, False),
        ("state.get('x', 0) == 0", {"state": {}}, True),
        ("state.get('x', 0) == 0", {"state": {"x": 4}}, False),
        ("'rm' in args['cmd']", {"args": {"cmd": "rm -rf /tmp/x"}}, True),
        ("'rm' not in args['cmd']", {"args": {"cmd": "ls"}}, True),
        ("node in ('a', 'b')", {"node": "b"}, True),
        ("node in ('a', 'b')", {"node": "c"}, False),
        (
            "[m for m in state['msgs'] if m == 'hi']",
            {"state": {"msgs": ["hi", "yo", "hi"]}},
            ["hi", "hi"],
        ),
        ("value % 5 == 0", {"value": 25}, True),
        ("value % 5 == 0", {"value": 26}, False),
        ("error is None", {"error": None}, True),
        ("output['items'][-1]['id']", {"output": {"items": [{"id": 1}, {"id": 7}]}}, 7),
        ("state['msgs'][1:]", {"state": {"msgs": [1, 2, 3]}}, [2, 3]),
        ("'big' if value > 10 else 'small'", {"value": 11}, "big"),
        ("{k: v for k, v in state.items() if v}", {"state": {"a": 1, "b": 0}}, {"a": 1}),
        ("{x % 2 for x in state['n']}", {"state": {"n": [1, 2, 3]}}, {0, 1}),
        ("any(x > 2 for x in state['n'])", {"state": {"n": [1, 2, 3]}}, True),
        ("all(x > 2 for x in state['n'])", {"state": {"n": [1, 2, 3]}}, False),
        ("sum(state['n']) == 6 and max(state['n']) == 3", {"state": {"n": [1, 2, 3]}}, True),
        ("sorted(state['w'], key=len)", {"state": {"w": ["ccc", "a", "bb"]}}, ["a", "bb", "ccc"]),
        ("[*state['a'], *state['b']]", {"state": {"a": [1], "b": [2]}}, [1, 2]),
        ("{**state, 'z': 1}", {"state": {"a": 0}}, {"a": 0, "z": 1}),
        ("node.lower().startswith('tool')", {"node": "ToolCall"}, True),
        ("path.split('.')[0]", {"path": "messages.0"}, "messages"),
        ("state['msgs'].count('hi')", {"state": {"msgs": ["hi", "hi"]}}, 2),
        ("str(value) + '!'", {"value": 12}, "12!"),
        ("int('7') + round(2.6) + abs(-1)", {}, 11),
        ("f'{node!r}:{value:>4}'", {"node": "a", "value": 7}, "'a':   7"),
        ("2 ** 10", {}, 1024),
        ("value ** 2", {"value": 12}, 144),
        ("state.count > 2", {"state": Counter(count=3)}, True),
        ("state.label.upper()", {"state": Counter(count=3, label="go")}, "GO"),
        ("state.count", {"state": {"count": 5}}, 5),  # simpleeval falls back to the key
        ("True and None is None", {}, True),
        ("[x for x, _ in state.items()]", {"state": {"a": 1}}, ["a"]),
    ],
)
def test_valid_conditions_evaluate(source: str, names: dict[str, Any], expected: Any) -> None:
    assert compile_(source).evaluate(names) == expected


def test_names_lists_only_the_allowed_names_used() -> None:
    expression = compile_("len(state['msgs']) > hits and [m for m in output if m]")
    assert expression.names == frozenset({"state", "hits", "output"})
    assert expression.source == "len(state['msgs']) > hits and [m for m in output if m]"
    assert compile_("1 + 1").names == frozenset()


def test_expression_equality_and_repr() -> None:
    assert compile_("hits > 1") == compile_("hits > 1")
    assert hash(compile_("hits > 1")) == hash(compile_("hits > 1"))
    assert compile_("hits > 1") != compile_("hits > 2")
    assert repr(compile_("hits > 1")) == "Expression('hits > 1')"


def test_comprehension_variable_may_shadow_an_allowed_name() -> None:
    assert evaluate("[node for node in state]", state=["a"], node="outer") == ["a"]


def test_comprehension_variable_is_unknown_outside_its_comprehension() -> None:
    message = refusal("[m for m in state] and m")
    assert "unknown name 'm'" in message


def test_evaluate_does_not_walk_the_whole_state() -> None:
    cyclic: dict[str, Any] = {"count": 3}
    cyclic["self"] = cyclic
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    assert evaluate("state['count'] > 2 and len(value) == 1", state=cyclic, value=deep) is True


def test_safe_functions_are_exported() -> None:
    assert {"len", "min", "max", "abs", "any", "all", "sum", "sorted", "round"} <= set(
        SAFE_FUNCTIONS
    )
    assert {"str", "int", "float", "bool", "list", "tuple", "set", "dict"} <= set(SAFE_FUNCTIONS)
    for forbidden in ("open", "eval", "exec", "getattr", "type", "vars", "globals", "repr"):
        assert forbidden not in SAFE_FUNCTIONS


# --------------------------------------------------------------------------------------------
# Static refusals


@pytest.mark.parametrize(
    ("source", "fragments"),
    [
        ("().__class__.__bases__[0].__subclasses__()", ["'__subclasses__'", "'_'"]),
        ("().__class__", ["'__class__'", "'_'"]),
        ("state._private", ["'_private'"]),
        ("state.func_globals", ["'func_globals'"]),
        ("__import__('os')", ["'__import__'", "allowed functions are", "len"]),
        ("open('/etc/passwd')", ["'open'", "allowed functions are", "sorted"]),
        ("getattr(state, '__class__')", ["'getattr'", "allowed functions are"]),
        ("eval('1')", ["'eval'", "allowed functions are"]),
        ("exec('1')", ["'exec'"]),
        ("type(state)", ["'type'"]),
        ("vars()", ["'vars'"]),
        ("globals()", ["'globals'"]),
        ("format(state, '')", ["'format'"]),
        ("'{0.__class__}'.format(state)", ["'format'"]),
        ("state.mro()", ["'mro'"]),
        ("state.pop('x')", [".pop()", "allowed methods are"]),
        ("state['f']()", ["called by name"]),
        ("lambda: 1", ["lambda"]),
        ("(lambda: 1)()", ["called by name"]),
        ("(x := 1)", [":="]),
        ("9**9**9**9", ["power", "too large", "4000000"]),
        ("2**100000", ["power 2 ** 100000", "bits"]),
        ("(-10)**(1000*1000)", ["power", "too large"]),
        ("cuont > 1", ["unknown name 'cuont'", "'cuont > 1'", "available names:", "state"]),
        ("_ > 1", ["'_'", "private"]),
        ("__builtins__", ["'__builtins__'", "private"]),
        ("state[ > 1", ["not a valid expression", "column 8", "'> 1'"]),
        ("hits >", ["not a valid expression"]),
        ("hits = 1", ["not a valid expression"]),
        ("hits\nhits", ["not a valid expression", "line 2"]),
        ("", ["empty"]),
        ("   ", ["empty"]),
        ("hits > " + "1" * 2000, ["2007 characters", "2000"]),
        ("'%s' % state", ["%-formatting"]),
        ("f'{hits:>99999}'", ["format spec '>99999'", "1000"]),
        ("len(*state)", ["*-unpacking"]),
        ("dict(**state)", ["**-unpacking"]),
        ("(*state,)", ["*-unpacking"]),
        ("sorted(state, key=state.get)", ["key="]),
        ("max(state, key=lambda x: x)", ["key="]),
        ("[len for len in state]", ["'len'", "hides"]),
        ("[1 for __x in state]", ["'__x'", "private"]),
        ("[1 for state['k'] in state]", ["plain names"]),
        ("state @ state", ["@"]),
        ("await state", ["await"]),
        ("(yield)", ["yield"]),
        ("[x async for x in state]", ["async"]),
        ("(" * 60 + "-hits" + ")" * 60, []),  # fine: parentheses add no nodes
        ("-" * 150 + "hits", ["nested more than 100"]),
    ],
)
def test_refused_at_compile_time(source: str, fragments: list[str]) -> None:
    if not fragments:
        compile_(source)
        return
    message = refusal(source)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_unknown_name_message_lists_every_available_name_and_a_hint() -> None:
    message = refusal("cuont > 1")
    assert message.startswith("unknown name 'cuont' in condition 'cuont > 1'; available names: ")
    for name in ALLOWED:
        assert name in message
    assert "state['cuont']" in message
    assert "did you mean 'node'" in refusal("nod == 'a'")


def test_refusals_are_breakpoint_and_value_errors() -> None:
    with pytest.raises(BreakpointError):
        compile_("open('x')")
    with pytest.raises(ValueError):
        compile_("open('x')")


def test_non_string_source_is_refused() -> None:
    with pytest.raises(ExpressionError, match="must be a string"):
        compile_expression(123, allowed_names=ALLOWED)  # type: ignore[arg-type]


def test_only_the_given_names_are_allowed() -> None:
    assert compile_expression("x > 1", allowed_names=["x"]).evaluate({"x": 2}) is True
    with pytest.raises(ExpressionError, match="unknown name 'state'"):
        compile_expression("state", allowed_names=["x"])


def test_long_source_is_quoted_shortened() -> None:
    message = refusal("hits > " + "1" * 2000)
    assert len(message) < 400


# --------------------------------------------------------------------------------------------
# Run-time failures and limits


def test_missing_key_raises_evaluation_error_chained_to_key_error() -> None:
    error = evaluation_failure("state['missing'] > 1", state={"count": 1})
    assert isinstance(error.__cause__, KeyError)
    assert isinstance(error, ExpressionError)
    message = str(error)
    assert "state['missing'] > 1" in message
    assert "KeyError" in message
    assert "'missing'" in message


@pytest.mark.parametrize(
    ("source", "names", "cause"),
    [
        ("value / 0", {"value": 1}, ZeroDivisionError),
        ("value + 1", {"value": "a"}, TypeError),
        ("state['a'][5]", {"state": {"a": []}}, IndexError),
        ("int(value)", {"value": "x"}, ValueError),
        ("error.args", {}, Exception),  # the name was not supplied
    ],
)
def test_runtime_failures_are_wrapped(
    source: str, names: dict[str, Any], cause: type[BaseException]
) -> None:
    error = evaluation_failure(source, **names)
    assert isinstance(error.__cause__, cause)
    assert source in str(error)


def test_huge_runtime_power_is_refused_quickly() -> None:
    started = time.perf_counter()
    error = evaluation_failure("value ** value", value=10**6)
    assert time.perf_counter() - started < 1
    assert isinstance(error.__cause__, NumberTooHigh)
    assert "too large" in str(error)


def test_simpleeval_power_limit_still_applies_to_floats() -> None:
    error = evaluation_failure("value ** 2", value=1e7)
    assert isinstance(error.__cause__, NumberTooHigh)


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("'a' * 100001", {}),
        ("value * 'a'", {"value": 10**6}),
        ("[[0] * 100000] * 100000", {}),
        ("[['a' * 99999] for c in 'x' * 10000]", {}),
        ("len([[0] * 99999 for c in 'x' * 100])", {}),
        ("str([value for c in 'x' * 10000])", {"value": "a" * 99_999}),
        ("f'{[value for c in state]}'", {"value": "a" * 99_999, "state": "x" * 10000}),
        ("('a' * 99999).replace('', 'b' * 1000)", {}),
        ("sum([[1]] * 10, [])", {}),
        ("value % 1", {"value": "%999999999d"}),
        ("f'{hits:>{value}}'", {"hits": 1, "value": 10**6}),
        ("[x for x in state]", {"state": range(20_000)}),
        (
            "[b for b in [[0.5] * 99999] for c in 'x' * 4998]"
            " == [b for b in [[value] * 99999] for c in 'x' * 4998]",
            {"value": 0.5},
        ),
    ],
)
def test_resource_exhaustion_is_refused_at_run_time(source: str, names: dict[str, Any]) -> None:
    started = time.perf_counter()
    error = evaluation_failure(source, **names)
    assert time.perf_counter() - started < 2
    assert isinstance(error.__cause__, Exception)


def test_comprehensions_over_ordinary_state_are_not_limited() -> None:
    messages = [{"role": "tool", "content": "x" * 1000, "id": i} for i in range(10_000)]
    assert evaluate("len([m for m in state if m['role'] == 'tool'])", state=messages) == 10_000
    assert evaluate("sorted({m['id'] % 3 for m in state})", state=messages) == [0, 1, 2]


def test_sequence_limits_raise_simpleeval_errors() -> None:
    assert isinstance(evaluation_failure("'a' * 100001").__cause__, IterableTooLong)
    error = evaluation_failure("str([value for c in 'x' * 10000])", value="a" * 1000)
    assert isinstance(error.__cause__, IterableTooLong)


def test_methods_are_bound_only_on_their_receiver_types() -> None:
    recorder = Recorder()
    error = evaluation_failure("state.replace('a', 'b')", state=recorder)
    assert "only be called on a string" in str(error)
    error = evaluation_failure("state.get('a')", state=recorder)
    assert "only be called on a mapping" in str(error)
    assert recorder.calls == []
    error = evaluation_failure("dict.get(state, 'a')", state={"a": 1})
    assert "not on type" in str(error)
    assert evaluate("state.get('a')", state={"a": 1}) == 1
    assert evaluate("value.replace('a', 'b')", value="aa") == "bb"


def test_modules_in_state_are_not_reachable() -> None:
    import os

    error = evaluation_failure("state['os'].replace('a', 'b')", state={"os": os})
    assert "module" in str(error)


def test_key_function_must_be_safe_at_run_time_too() -> None:
    # The static check only lets safe function names through; nothing else can reach key=.
    assert evaluate("max(state, key=abs)", state=[-5, 3]) == -5
    assert evaluate("min(state, key=str)", state=[10, 9]) == 10


# --------------------------------------------------------------------------------------------
# Thread safety and re-entrancy


def test_concurrent_evaluation_of_one_expression() -> None:
    expression = compile_("[m * hits for m in state['msgs'] if m % 2 == 0] + [node]")
    threads_count = 8
    rounds = 300
    barrier = threading.Barrier(threads_count)
    failures: list[str] = []

    def worker(number: int) -> None:
        barrier.wait()
        for round_ in range(rounds):
            msgs = list(range(number, number + 6))
            names = {"state": {"msgs": msgs}, "hits": round_, "node": f"n{number}"}
            expected = [m * round_ for m in msgs if m % 2 == 0] + [f"n{number}"]
            result = expression.evaluate(names)
            if result != expected:
                failures.append(f"thread {number} round {round_}: {result!r} != {expected!r}")

    threads = [threading.Thread(target=worker, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_reentrant_evaluation_in_one_thread() -> None:
    inner = compile_("[x for x in value]")

    class Sneaky:
        def __eq__(self, other: object) -> bool:
            return inner.evaluate({"value": [1, 2]}) == [1, 2]

        __hash__ = object.__hash__

    outer = compile_("[s == 1 for s in state]")
    assert outer.evaluate({"state": [Sneaky(), Sneaky()]}) == [True, True]


def test_evaluate_is_fast() -> None:
    expression = compile_("state['count'] > 2")
    names = {"state": {"count": 3, "msgs": list(range(10_000))}}
    expression.evaluate(names)
    rounds = 2000
    started = time.perf_counter()
    for _ in range(rounds):
        expression.evaluate(names)
    per_call = (time.perf_counter() - started) / rounds
    assert per_call < 200e-6  # measured ~2.5 µs; generous for slow CI machines


# --------------------------------------------------------------------------------------------
# Templates


TEMPLATE_NAMES: dict[str, Any] = {
    "state": {"count": 3, "items": ["a", "b"], 0: "int key", "0": "str key"},
    "output": {"items": [{"id": 7}]},
    "node": "agent",
    "value": "hi",
    "hits": 12,
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("count is {state[count]} at {node}", "count is 3 at agent"),
        ("{output[items][0]}", "{'id': 7}"),
        ("{output[items][0][id]:03d}", "007"),
        ("{value!r:>10}", "      'hi'"),
        ("{value!s:*^6}", "**hi**"),
        ("{value!a}", "'hi'"),
        ("{state[0]}", "int key"),
        ("{state[items][1]}", "b"),
        ("{hits:>{hits}}", "          12"),
        ("{{literal}} {hits}", "{literal} 12"),
        ("{state.count}", "3"),
        ("no fields", "no fields"),
        ("", ""),
    ],
)
def test_render_template(template: str, expected: str) -> None:
    check_template(template, allowed_names=ALLOWED)
    assert render_template(template, TEMPLATE_NAMES) == expected


def test_render_attribute_access_on_objects() -> None:
    state = Counter(count=4, label="go")
    assert render_template("{state.count}/{state.label!r}", {"state": state}) == "4/'go'"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("count is {state[missing]}", "count is <error: KeyError 'missing'>"),
        ("{state[items][5]}", "<error: IndexError list index out of range>"),
        ("{unknown}", "<error: KeyError 'unknown'>"),
        ("{node.nope}!", "<error: AttributeError 'str' object has no attribute 'nope'>!"),
        ("{node:d}", "<error: ValueError Unknown format code 'd' for object of type 'str'>"),
    ],
)
def test_render_failing_fields_become_markers(template: str, expected: str) -> None:
    assert render_template(template, TEMPLATE_NAMES) == expected


def test_render_survives_broken_objects() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        def __format__(self, spec: str) -> str:
            raise RuntimeError("no format")

    rendered = render_template("{value!r} {value}", {"value": Broken()})
    assert rendered == "<error: RuntimeError no repr> <error: RuntimeError no format>"


def test_render_caps_widths_from_nested_fields() -> None:
    rendered = render_template("{hits:>{value}}", {"hits": 1, "value": 99_999_999})
    assert rendered.startswith("<error: ValueError format spec '>99999999' is too large")


def test_render_refuses_private_parts_even_without_check() -> None:
    with pytest.raises(ExpressionError, match="'__class__'"):
        render_template("{state.__class__}", {"state": {}})
    with pytest.raises(ExpressionError, match="'__globals__'"):
        render_template("{state.f.__globals__}", {"state": {}})


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("{state.__class__}", "'__class__'"),
        ("{state.__class__.__init__.__globals__}", "'__class__'"),
        ("{state[__class__]}", "'__class__'"),
        ("{state[items]._x}", "'_x'"),
        ("{_private}", "'_private'"),
        ("{}", "positional field '{}'"),
        ("{0}", "positional field '{0}'"),
        ("{[0]}", "positional"),
        ("{unknown}", "unknown name 'unknown'"),
        ("{nod}", "did you mean 'node'"),
        ("{value:>99999999}", "too large"),
        ("{value:.5000f}", "too large"),
        ("{value:{hits:{hits}}}", "too deeply"),
        ("{value:>{unknown}}", "unknown name 'unknown'"),
        ("{value:>{_x}}", "'_x'"),
        ("{state", "malformed"),
        ("state}", "malformed"),
        ("{value!x}", "'!x'"),
        ("{state[}", "malformed"),
        ("{state.}", "empty attribute"),
        ("{state[]}", "empty index"),
        ("{state[a]b}", "only '.' or '['"),
        ("{state[a}", "malformed"),
        ("x" * 2001, "2001 characters"),
    ],
)
def test_check_template_refusals(template: str, fragment: str) -> None:
    with pytest.raises(ExpressionError) as info:
        check_template(template, allowed_names=ALLOWED)
    assert fragment in str(info.value), str(info.value)


def test_check_template_accepts_valid_templates() -> None:
    check_template(
        "count is {state[count]} at {node} ({value!r:>10}, {hits:>{attempt}})",
        allowed_names=ALLOWED,
    )
    check_template("{state.count:,.2f} {output[items][0][id]}", allowed_names=ALLOWED)


def test_check_template_rejects_non_strings() -> None:
    with pytest.raises(ExpressionError, match="must be a string"):
        check_template(["{x}"], allowed_names=ALLOWED)  # type: ignore[arg-type]


def test_templates_read_indexes_as_paths_do() -> None:
    names = {"state": {"messages": ["first", "middle", "last"], "user id": "bob", "0": "zero"}}
    template = "{state[messages][-1]} / {state['user id']} / {state[messages][-3]} / {state[0]}"
    check_template(template, allowed_names=["state"])
    # [-1] is the last item and a quoted key is its text, as in p and set; [0] on a dict is the
    # key 0 (absent here: the field says so, the message is still logged)
    rendered = render_template(template, names)
    assert rendered.startswith("last / bob / first / <error: ")
