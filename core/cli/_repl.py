"""The terminal debugger: a pdb-like prompt over the :class:`flowdbg.Debugger` API.

It waits for stops, shows each one (reason, location, breakpoints hit, a compact state
summary) and reads commands until the selected branch goes on. Commands come from a terminal
(readline history and tab completion), from piped stdin (each command echoed after the prompt so
transcripts read well) or from a script (``flowdbg demo``).
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import json
import logging
import os
import queue
import re
import select
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from flowdbg._paths import format_path, parse_path, split_view
from flowdbg._values import short_repr
from flowdbg.errors import (
    BreakpointError,
    ExpressionError,
    FlowdbgError,
    NotStoppedError,
    PathError,
)
from flowdbg.events import Position

from ._render import (
    Out,
    is_open,
    neighbourhood,
    node_names,
    pretty,
    short_id,
    state_table,
    subgraph_at,
)

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.stops import Stop

__all__ = ["PROMPT", "Outcome", "Session", "parse_value", "stdin_source"]

PROMPT = "(flowdbg) "


class Outcome(str, Enum):
    """How a terminal session ended."""

    ENDED = "ended"  #: every run finished
    QUIT = "quit"  #: the user quit; the run was terminated


class _Next(Enum):
    PROMPT = "prompt"  # read another command at the same stop
    RESUMED = "resumed"  # the branch goes on: wait for the next stop
    QUIT = "quit"


# ------------------------------------------------------------------------------ input


class LineSource(Protocol):
    """Where commands come from."""

    interactive: bool

    def read(self, prompt: str) -> str | None:
        """The next command line, or ``None`` at end of input."""
        ...

    def close(self) -> None:
        """Release what the source holds (readline history)."""
        ...


class EchoSource:
    """Commands from a stream or a list, each echoed after the prompt; ``#`` lines are
    comments, printed and skipped."""

    interactive = False

    def __init__(self, lines: Iterable[str], out: Out, *, style: str | None = None) -> None:
        # a stream with a file descriptor (stdin) is only read ahead while it has data; a list
        # or an in-memory stream can always be
        self._stream: Any = lines if _has_fileno(lines) else None
        self._lines: Iterator[str] = iter(lines)
        self._out = out
        self._style = style

    def read(self, prompt: str) -> str | None:
        """Echo and return the next command; print comment lines on the way."""
        for raw in self._lines:
            line = raw.rstrip("\r\n")
            if line.lstrip().startswith("#"):
                self._out.line(line, style="dim")
                continue
            self._out.line(prompt + line, style=self._style)
            return line
        return None

    def unread(self, limit: int = 20) -> list[str]:
        """Commands (not comments) still waiting that can be read without blocking: a pipe or
        file is read only while ``select`` says it has data or has ended."""
        lines: list[str] = []
        while len(lines) < limit:
            if self._stream is not None:
                try:
                    ready, _, _ = select.select([self._stream], [], [], 0)
                except (OSError, ValueError, TypeError):  # no select on it (Windows consoles)
                    break
                if not ready:
                    break
            raw = next(self._lines, None)
            if raw is None:
                break
            line = raw.strip()
            if line and not line.startswith("#"):
                lines.append(line)
        return lines

    def close(self) -> None:
        """Nothing to release."""


class StopResumed(Exception):
    """The stop the prompt was shown for was resumed by someone else (a client)."""

    def __init__(self, stop_id: str, action: str) -> None:
        super().__init__(f"{stop_id} was resumed ({action})")
        self.stop_id = stop_id
        self.action = action


class _SharedInput:
    """Reads command lines on a thread of its own, one when asked, so that the session can
    wait for a line *or* the resume of its stop by another client, whichever comes first.

    A line asked for and not read yet stays asked for: the next stop's prompt gets it. The
    debugger's ``flowdbg_on_resume`` hook reports every resume; the session picks out its
    stop's.
    """

    def __init__(self, source: LineSource, dbg: Debugger) -> None:
        self._source = source
        self._dbg = dbg
        # ("line", text or None) from the reader, ("resumed", stop id, action) from the hook
        self._inbox: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._asks: queue.Queue[str | None] = queue.Queue()
        #: whether a line has been asked for and not read yet
        self.reading = False
        self._thread = threading.Thread(target=self._work, name="flowdbg-repl-input", daemon=True)
        self._thread.start()
        self._observer = _resume_observer(self._inbox)
        dbg.register_plugin(self._observer)

    def _work(self) -> None:
        while True:
            prompt = self._asks.get()
            if prompt is None:
                return
            try:
                line = self._source.read(prompt)
            except BaseException as exc:  # handed to the session's thread
                self._inbox.put(("error", exc))
                return
            self._inbox.put(("line", line))
            if line is None:
                return

    def read(self, prompt: str, stop_id: str) -> str | None:
        """The next line, or :class:`StopResumed` when ``stop_id`` resumes first (its resume
        is in the inbox even when it came before this call: the hook was registered before
        any run started)."""
        if not self.reading:
            self.reading = True
            self._asks.put(prompt)
        while True:
            item = self._inbox.get()
            if item[0] == "line":
                self.reading = False
                return cast("str | None", item[1])
            if item[0] == "error":
                self.reading = False
                raise item[1]
            if item[1] == stop_id:
                raise StopResumed(stop_id, item[2])

    def close(self) -> None:
        """Stop observing the debugger; a read in progress is left to end with the process
        (a thread blocked on a terminal cannot be woken)."""
        self._dbg.unregister_plugin(self._observer)
        self._asks.put(None)


def _resume_observer(inbox: queue.Queue[tuple[Any, ...]]) -> Any:
    """A plugin putting ``("resumed", stop id, action)`` in ``inbox`` at every resume (the
    session's own too: they name stops it no longer waits at). Made on demand: the plugin
    machinery is not imported with the command line."""
    from flowdbg.plugins import hookimpl

    class ResumeObserver:
        @hookimpl
        def flowdbg_on_resume(self, stop: Stop, action: str) -> None:
            inbox.put(("resumed", stop.id, str(action)))

    return ResumeObserver()


def _has_fileno(stream: object) -> bool:
    try:
        stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False
    return True


class TerminalSource:
    """Commands typed at a terminal, with readline history and tab completion when available."""

    interactive = True

    def __init__(self, completer: Callable[[str, int], str | None], history: Path | None) -> None:
        self._history = history
        self._readline: Any = None
        try:
            import readline
        except ImportError:  # Windows without pyreadline, or a Python built without it
            return
        self._readline = readline
        readline.set_completer(completer)
        readline.set_completer_delims(" \t\n")
        if "libedit" in (getattr(readline, "__doc__", "") or ""):
            readline.parse_and_bind("bind ^I rl_complete")
        else:
            readline.parse_and_bind("tab: complete")
        if history is not None:
            readline.set_history_length(1000)
            with contextlib.suppress(OSError):
                readline.read_history_file(history)

    def read(self, prompt: str) -> str | None:
        """Read one line; ``None`` on end of input (Ctrl-D)."""
        try:
            return input(prompt)
        except EOFError:
            sys.stdout.write("\n")
            return None

    def line_buffer(self) -> tuple[str, int]:
        """The line being edited and where the completed word begins."""
        if self._readline is None:
            return "", 0
        return self._readline.get_line_buffer(), self._readline.get_begidx()

    def close(self) -> None:
        """Save the history."""
        if self._readline is not None and self._history is not None:
            with contextlib.suppress(OSError):
                self._readline.write_history_file(self._history)


def history_path() -> Path:
    """``$FLOWDBG_HISTORY`` or ``~/.flowdbg_history``."""
    return Path(os.environ.get("FLOWDBG_HISTORY") or Path.home() / ".flowdbg_history")


def stdin_source(out: Out, completer: Callable[[str, int], str | None]) -> LineSource:
    """Commands from the terminal when stdin is one, else line by line from stdin."""
    stdin = sys.stdin
    try:
        tty = stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty:
        return TerminalSource(completer, history_path())
    return EchoSource(stdin, out)


# ------------------------------------------------------------------------------ values


def parse_value(text: str) -> Any:
    """Parse the VALUE of ``set PATH = VALUE``: JSON, or a Python literal.

    :raises ValueError: when it is neither (with a hint to quote strings).
    """
    text = text.strip()
    if not text:
        raise ValueError("usage: set PATH = VALUE (VALUE is JSON or a Python literal)")
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(
            f"cannot read the value {text!r}: give JSON or a Python literal "
            f'(quote strings: "{text}")'
        ) from None


def _bp_id(text: str) -> str:
    return text if text.startswith("bp-") else f"bp-{text}"


def _stop_id(text: str) -> str:
    return text if text.startswith("stop-") else f"stop-{text}"


# ------------------------------------------------------------------------------ help


def _words(text: str) -> list[str]:
    """``text`` split at blanks outside quotes and brackets, quotes kept: the edits of
    ``rewind 1 intent="question" items=[1, 2]`` read as ``set`` reads a value."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    depth = 0
    for char in text:
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char.isspace() and depth <= 0:
            if current:
                words.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        words.append("".join(current))
    return words


_COMMANDS: dict[str, tuple[str, str]] = {
    "continue": ("c(ontinue)", "let the selected branch run on to its next stop"),
    "step": ("s(tep)", "step into: the next unit of this branch, at any depth"),
    "next": ("n(ext)", "step over: the next unit of this branch at this depth or above"),
    "return": ("r(eturn)", "step out: the next unit of an enclosing run (top level: the end)"),
    "break": (
        "b(reak) [[KIND:]NODE[:after] [if EXPR]]",
        "break before (or after) NODE, a glob, when EXPR holds (KIND: node, tool, llm, agent "
        "or handoff, e.g. b llm:gpt-4o:after); alone: list",
    ),
    "tbreak": ("tbreak [KIND:]NODE[:after] [if EXPR]", "a breakpoint removed after it stops once"),
    "tool": (
        "tool NAME [~REGEX] [if EXPR]",
        "break before tool calls named NAME (a glob) whose arguments match REGEX",
    ),
    "clear": ("cl(ear) [N ...]", "remove breakpoints bp-N (all without an argument)"),
    "disable": ("disable N ...", "keep breakpoints bp-N but stop them from stopping"),
    "enable": ("enable N ...", "make breakpoints bp-N stop again"),
    "print": (
        "p(rint) [VIEW:][PATH] | EXPR",
        "the value at PATH (messages[-1].content) of the stop's default view (input before, "
        "output after, state at an error), or of VIEW (state:, input:, output:, error:, "
        "args:, result:), or a sandboxed expression (len(messages), state['x'] + 1)",
    ),
    "display": (
        "display [[VIEW:]PATH | EXPR]",
        "show PATH or EXPR at every stop from now on; alone: list what is displayed",
    ),
    "undisplay": ("undisplay [N ...]", "stop displaying N (everything without an argument)"),
    "watch": (
        "watch PATH [if EXPR]",
        "stop after a unit that changed PATH of the state (EXPR may use value; creating it "
        "changes it, so a PATH missing now is watched too, with a note)",
    ),
    "logpoint": (
        "logpoint [KIND:]NODE[:after] TEMPLATE",
        "print TEMPLATE ({state[x]}, {node}) when NODE is reached, without stopping",
    ),
    "set": (
        "set PATH = VALUE",
        "edit PATH where p PATH reads it: the input at a before stop, the output at an after "
        "stop (VALUE is JSON or a Python literal); applied on resume",
    ),
    "del": ("del PATH", "delete the key or element at PATH of the default view; applied on resume"),
    "diff": ("diff", "what the unit changed in the state (at an after stop)"),
    "where": ("w(here)", "node, position, step, superstep, branch and attempt of the stop"),
    "stops": (
        "stops",
        "the open stops (parallel branches; * marks the selected one) and the units running",
    ),
    "stop": ("stop [N]", "select stop-N (alone: show the selected stop again)"),
    "log": (
        "log [steps|stats]",
        "the run log so far: one row per step, or per node for a long run that repeats nodes",
    ),
    "rewind": (
        "rewind STEP [PATH=VALUE ...]",
        "go back to the state after an earlier STEP of the top-level run (log steps lists them; "
        "with edits) and go on from there: the run restarts in the same call, recorded as a "
        "rewind of it",
    ),
    "list": ("l(ist)", "the graph around the node: predecessors -> [node] -> successors"),
    "help": ("h(elp) [COMMAND]", "list the commands, or explain one"),
    "quit": ("q(uit)", "terminate the run and leave"),
}

#: the names of a stop's views (see Stop.views), which a path may begin with as an expression
#: does (``state['x']``)
_VIEW_NAMES = frozenset({"state", "input", "output", "error", "args", "result"})

#: what a path is written with (keys, indexes, quotes): text of these only is read as a path
_PATH_CHARACTERS = re.compile(r"^[\w.\[\]'\"-]*$")

_ALIASES = {
    "c": "continue",
    "cont": "continue",
    "s": "step",
    "n": "next",
    "r": "return",
    "b": "break",
    "cl": "clear",
    "p": "print",
    "pp": "print",
    "delete": "del",
    "w": "where",
    "bt": "where",
    "l": "list",
    "h": "help",
    "?": "help",
    "q": "quit",
    "exit": "quit",
}


# ------------------------------------------------------------------------------ the session


class _PrintLogpoints(logging.Handler):
    """Prints what logpoints log (the ``flowdbg.logpoint`` logger, on the run's threads) to a
    terminal session."""

    def __init__(self, out: Out) -> None:
        super().__init__(logging.INFO)
        self.out = out

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.out.line(f"log: {record.getMessage()}", style="cyan")
        except Exception:  # printing must never fail the run that logged
            self.handleError(record)


class Session:
    """One terminal debugging session over a debugger whose run has been started.

    :param dbg: the debugger.
    :param out: where to print.
    :param description: the target's graph description (for ``list`` and node checks).
    :param source: where commands come from; ``None`` reads stdin (a terminal or a pipe).
    """

    def __init__(
        self,
        dbg: Debugger,
        out: Out,
        *,
        description: Mapping[str, Any] | None = None,
        source: LineSource | None = None,
        shared: bool = False,
    ) -> None:
        self.dbg = dbg
        self.out = out
        self.description = description or {}
        self.nodes = node_names(self.description)
        self.source: LineSource = source or stdin_source(out, self.complete)
        #: commands are read on a thread of their own, so that the prompt notices a stop
        #: that another client (the debug server's) resumed; ``None`` when not shared
        self._shared = _SharedInput(self.source, dbg) if shared else None
        self._shown: set[str] = set()
        #: the stop the prompt was last shown for (the selected one, as show_stop left it)
        self._at: str | None = None
        #: stops the user has been told are open (at a stop shown, or by the stops command)
        self._told_open: set[str] = set()
        #: stops that were open when a command (c, s, n, r...) last let the selected one go
        #: on: the prompt moving to one of them is no stop of that command's
        self._open_at_resume: set[str] = set()
        #: what ``display`` shows at every stop, in order
        self._displays: list[str] = []
        self._last = ""
        self._completions: list[str] = []

    # -- the loop --

    def run(self) -> Outcome:
        """Drive the run until every run has ended (or the user quits). Logpoints print their
        messages here as they log them (``log: ...``)."""
        logger = logging.getLogger("flowdbg.logpoint")
        handler = _PrintLogpoints(self.out)
        level = logger.level
        logger.addHandler(handler)
        if not logger.isEnabledFor(logging.INFO):
            logger.setLevel(logging.INFO)
        try:
            return self._loop()
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
            if self._shared is not None:
                self._shared.close()
            self.source.close()

    def _read(self, stop: Stop) -> str | None:
        """The next command line at ``stop`` (``None`` at end of input); in a shared session,
        :class:`StopResumed` when a client resumed ``stop`` first."""
        if self._shared is None:
            return self.source.read(PROMPT)
        return self._shared.read(PROMPT, stop.id)

    def _note_unread(self) -> None:
        """Say so when piped commands were never read because nothing stopped to read them."""
        if self._shared is not None and self._shared.reading:
            return  # the reader thread is in the middle of a read: it cannot be read beside
        unread = getattr(self.source, "unread", None)
        left = unread() if unread is not None else []
        if left:
            shown = ", ".join(repr(line) for line in left[:5]) + (", ..." if len(left) > 5 else "")
            self.out.line(
                f"note: the run ended with {len(left)}{'+' if len(left) >= 20 else ''} "
                f"command{'s' if len(left) != 1 else ''} unread ({shown}); commands are read "
                "only while the run is stopped (see -b NODE, --stop-on-entry)",
                style="yellow",
            )

    def _loop(self) -> Outcome:
        interrupted = False
        while True:
            try:
                stop = self.dbg.wait_for_stop(None)
            except KeyboardInterrupt:
                if interrupted:
                    self.out.line("interrupted again: terminating the run")
                    self._terminate()
                    return Outcome.QUIT
                interrupted = True
                self.out.line("interrupted: pausing at the next point (Ctrl-C again terminates)")
                self.dbg.pause()
                continue
            interrupted = False
            if stop is None:
                self._note_unread()
                return Outcome.ENDED
            if stop.id not in self._shown or stop.id != self._at:
                intro = None
                if (
                    self._at is not None
                    and stop.id != self._at
                    and (stop.id in self._told_open or stop.id in self._open_at_resume)
                ):
                    # another branch was held all along (parallel stops): the prompt moves to
                    # it, which must not pass unsaid (shown before, it would not even be shown;
                    # after a step, it would read as where the step stopped)
                    intro = f"{self._at} went on; now at {stop.id}, which was open already:"
                self.show_stop(stop, intro=intro)
                if self._shared is not None and self._shared.reading and self.source.interactive:
                    self.out.console.print(PROMPT, end="")  # the pending read's scrolled up
            try:
                line = self._read(stop)
            except KeyboardInterrupt:
                self.out.line("")
                self.out.line("(type c to continue, q to quit)")
                continue
            except StopResumed as resumed:
                if self.source.interactive:
                    self.out.line("")  # off the prompt line
                self.out.line(f"{resumed.stop_id} was resumed by a client ({resumed.action})")
                continue
            if line is None:
                self._end_of_input()
                return Outcome.ENDED if self._drain() else Outcome.QUIT
            if not line.strip():
                if not self.source.interactive or not self._last:
                    continue
                line = self._last
            else:
                self._last = line
            # taken before the command: a stop opening after it resumed may be its own
            open_now = {s.id for s in self.dbg.stops}
            nxt = self.onecmd(line)
            if nxt is _Next.RESUMED:
                self._open_at_resume = open_now - {stop.id}
            if nxt is _Next.QUIT:
                self._terminate()
                return Outcome.QUIT

    def _end_of_input(self) -> None:
        stops = ", ".join(s.id for s in self.dbg.stops) or "none"
        self.out.line(
            f"end of input with {stops} open: clearing breakpoints and continuing to the end "
            "of the run"
        )
        self.dbg.clear()
        self.dbg.resume_all()

    def _drain(self) -> bool:
        """After the end of input: resume whatever still stops until the runs end."""
        while True:
            try:
                stop = self.dbg.wait_for_stop(None)
            except KeyboardInterrupt:
                self._terminate()
                return False
            if stop is None:
                return True
            self.out.line(f"continuing past {stop}")
            self.dbg.resume_all()

    def _terminate(self) -> None:
        self.dbg.terminate()

    # -- dispatch --

    def onecmd(self, line: str) -> _Next:
        """Run one command line; errors print one line and keep the prompt."""
        word, _, arg = line.strip().partition(" ")
        name = _ALIASES.get(word, word)
        if name not in _COMMANDS:
            self.out.line(f"unknown command {word!r}; type h for help")
            return _Next.PROMPT
        handler: Callable[[str], _Next | None] = getattr(self, f"do_{name}")
        try:
            return handler(arg.strip()) or _Next.PROMPT
        except (FlowdbgError, ValueError, LookupError, TypeError) as exc:
            self.out.line(f"error: {exc}")
        except Exception as exc:  # a bug must not kill the session holding the user's run
            self.out.line(f"error: {type(exc).__name__}: {exc}")
        return _Next.PROMPT

    # -- showing --

    def show_stop(self, stop: Stop, *, intro: str | None = None) -> None:
        """Print a stop: ``intro`` (why the prompt is here), header, error line, the default
        view (what ``p PATH`` reads and ``set PATH`` edits), the routing decision, the state
        summary (read only), then the other stops open."""
        self._shown.add(stop.id)
        self._at = stop.id
        self.out.line("")
        if intro is not None:
            self.out.line(intro)
        self.out.line(str(stop), style="bold")
        loc = stop.location
        error = stop.error
        if error is not None:
            self.out.line(f"  error: {error.type}: {error.message}", style="red")
        if stop.message:
            self.out.line(f"  {stop.message}")
        if stop.reason.value == "watch":
            for line in self._watch_changes(stop):
                self.out.line(f"  {line}")
        if stop.default_view != "state":
            # what p PATH reads and set PATH edits here; the table below is the state, read only
            self.out.line(
                f"  {stop.default_view} (default view): "
                f"{short_repr(stop.view(stop.default_view), 100)}"
            )
        if loc.position == Position.AFTER.value and stop.decision is not None:
            self.out.line(f"  next: {short_repr(stop.decision, 100)}")
        try:
            rows = self.dbg.summary(stop=stop.id)
        except FlowdbgError:
            rows = []
        if rows and stop.state is not None:
            self.out.line("  state (p state:PATH; read only):")
            self.out.show(state_table(rows))
        for number, what in enumerate(self._displays, 1):
            try:
                shown = short_repr(self._value_of(what, stop.id), 100)
            except FlowdbgError as exc:
                shown = f"<{exc}>"
            self.out.line(f"  {number}: {what} = {shown}")
        others = [s for s in self.dbg.stops if s.id != stop.id]
        self._told_open.update(s.id for s in others)
        if others:
            listed = ", ".join(
                f"{s.id} ({s.location.position} {s.location.node!r})" for s in others
            )
            self.out.line(
                f"  also open: {listed}; type stops to list them, stop N to switch to one"
            )

    def _watch_changes(self, stop: Stop) -> list[str]:
        """``watch PATH: OLD -> NEW`` for each watch that stopped here (gdb's old and new
        value, ``Stop.watch_changes``)."""
        lines = []
        for change in stop.watch_changes():
            old = "(missing)" if change.added else short_repr(change.old, 60)
            new = "(missing)" if change.removed else short_repr(change.new, 60)
            lines.append(f"watch {change.path}: {old} -> {new}")
        return lines

    def _selected(self) -> Stop:
        stop = self.dbg.stop
        if stop is None:
            raise NotStoppedError("nothing is stopped")
        return stop

    # -- control --

    def do_continue(self, arg: str) -> _Next:
        self.dbg.resume()
        return _Next.RESUMED

    def do_step(self, arg: str) -> _Next:
        self.dbg.step_into()
        return _Next.RESUMED

    def do_next(self, arg: str) -> _Next:
        self.dbg.step_over()
        return _Next.RESUMED

    def do_return(self, arg: str) -> _Next:
        self.dbg.step_out()
        return _Next.RESUMED

    def do_rewind(self, arg: str) -> _Next:
        words = _words(arg)
        if not words or not words[0].isdigit():
            raise ValueError(
                "usage: rewind STEP [PATH=VALUE ...] (a step of this run that has ended; "
                "0: from its input)"
            )
        edits: dict[str, Any] = {}
        for text in words[1:]:
            path, sep, raw = text.partition("=")
            if not sep or not path.strip():
                raise ValueError(f"an edit is PATH=VALUE, not {text!r} (e.g. intent='question')")
            edits[path.strip()] = parse_value(raw)
        step = int(words[0])
        stop = self.dbg.rewind(step, edits or None)
        run = stop.unit.run.root.run_id[:8] if stop.unit is not None else "?"
        came = f"the state after step {step}" if step else "its input"
        changed = f", with {', '.join(edits)} edited" if edits else ""
        self.out.line(f"rewinding run {run} to {came}{changed}; it goes on as a new run")
        return _Next.RESUMED

    def do_quit(self, arg: str) -> _Next:
        self.out.line("terminating the run")
        return _Next.QUIT

    # -- breakpoints --

    def check_node(self, pattern: str) -> None:
        """Say so when ``pattern`` matches none of the nodes and tasks of an ``open``
        description, which the debugger accepts: the breakpoint waits for a unit of that name.
        (A name unknown to a description that is not open is refused by the debugger itself,
        with the text of its :class:`flowdbg.errors.BreakpointWarning`.)"""
        if (
            self.nodes
            and is_open(self.description)  # e.g. a @task the description could not list
            and not any(fnmatch.fnmatchcase(n, pattern.rsplit("/", 1)[-1]) for n in self.nodes)
        ):
            self.out.line(
                f"note: {pattern!r} is none of the known nodes and tasks "
                f"({', '.join(self.nodes)}); the breakpoint waits for a unit of that name"
            )

    def add_breakpoint(self, spec: str, *, temporary: bool = False) -> None:
        """Set a breakpoint from ``[KIND:]NODE[:after|:before] [if EXPR]`` and print it.

        A NODE that matches no node of the attached targets is refused (``strict=True``): at
        the prompt, retyping the name beats a breakpoint that never stops. ``KIND:`` restricts
        it to units of that kind (``llm:gpt-4o``), which is how a model or tool call that no
        description lists is named here.
        """
        where, sep, condition = spec.partition(" if ")
        where = where.strip()
        if not where:
            raise ValueError("usage: b [KIND:]NODE[:after] [if EXPR]")
        node, position = split_node(where)
        kind, node = split_kind(node)
        if kind is None:
            self.check_node(node)
        cond = (condition.strip() or None) if sep else None
        if sep and cond is None:
            raise ValueError("the condition after 'if' is empty")
        add = self.dbg.break_after if position == "after" else self.dbg.break_before
        try:
            bp = add(node, condition=cond, temporary=temporary, kind=kind, strict=True)
        except BreakpointError as exc:
            raise BreakpointError(at_prompt(exc, node)) from None
        self.out.line(f"set {bp.describe()}")

    def do_break(self, arg: str) -> None:
        if not arg:
            bps = self.dbg.breakpoints
            if not bps:
                self.out.line("no breakpoints")
            for bp in bps:
                self.out.line(bp.describe())
            return
        self.add_breakpoint(arg)

    def do_tbreak(self, arg: str) -> None:
        if not arg:
            raise ValueError("usage: tbreak [KIND:]NODE[:after] [if EXPR]")
        self.add_breakpoint(arg, temporary=True)

    def do_tool(self, arg: str) -> None:
        where, sep, condition = arg.partition(" if ")
        name, _, pattern = where.strip().partition(" ")
        pattern = pattern.strip()
        if not name or (pattern and not pattern.startswith("~")):
            raise ValueError("usage: tool NAME [~REGEX] [if EXPR], e.g. tool shell ~rm\\s+-rf")
        cond = (condition.strip() or None) if sep else None
        if sep and cond is None:
            raise ValueError("the condition after 'if' is empty")
        # refused like b NODE when the attached targets list their tools and not this one
        bp = self.dbg.break_on_tool(
            name, args_pattern=pattern[1:] or None, condition=cond, strict=True
        )
        self.out.line(f"set {bp.describe()}")

    def do_clear(self, arg: str) -> None:
        if not arg:
            count = len(self.dbg.breakpoints)
            self.dbg.clear()
            self.out.line(f"removed {count} breakpoint{'s' if count != 1 else ''}")
            return
        for token in arg.split():
            bp = self.dbg.remove(_bp_id(token))
            self.out.line(f"removed {bp.id}")

    def _toggle(self, arg: str, enabled: bool) -> None:
        if not arg:
            raise ValueError(f"usage: {'enable' if enabled else 'disable'} N ...")
        for token in arg.split():
            bp = self.dbg.get_breakpoint(_bp_id(token))
            bp.enabled = enabled
            self.out.line(f"{'enabled' if enabled else 'disabled'} {bp.id}")

    def do_disable(self, arg: str) -> None:
        self._toggle(arg, False)

    def do_enable(self, arg: str) -> None:
        self._toggle(arg, True)

    # -- state --

    def _value_of(self, what: str, stop: str | None = None) -> Any:
        """A path of the stop's default view (``view:path`` picks another: state, input,
        output, error, args, result) or, when ``what`` is no path, a sandboxed expression."""
        view, rest = split_view(what)
        if view is not None and view != "lambda":  # an unknown view is named in the error
            return self.dbg.inspect(f"{view}:{rest}", stop=stop)
        try:
            parse_path(what.strip())
        except PathError:
            if _PATH_CHARACTERS.match(what.strip()):
                raise  # a malformed path (x[), not an expression
            return self.dbg.evaluate(what, stop=stop)
        try:
            return self.dbg.inspect(what.strip(), stop=stop)
        except PathError as missing:
            try:  # a name of the stop (node, step, input...) rather than of the view
                return self.dbg.evaluate(what, stop=stop)
            except ExpressionError:
                pass
            view, path = self._view_path(what.strip(), stop)
            if view is None:
                raise missing from None
            # state['nope'] failed as an expression: read it as state:nope, whose error names
            # the key missing in that view and its keys (not the default view's lack of a
            # key 'state')
            return self.dbg.inspect(f"{view}:{path}", stop=stop)

    def _view_path(self, what: str, stop: str | None) -> tuple[str | None, str]:
        """``(view, rest)`` when the path ``what`` starts with the name of a view
        (``state['x']``, ``args.city``) that is no key of the stop's default view, else
        ``(None, what)``."""
        parts = parse_path(what)
        first = parts[0] if parts else None
        if len(parts) < 2 or first not in _VIEW_NAMES:
            return None, what
        if stop is None:
            selected = self.dbg.stop
        else:
            selected = next((s for s in self.dbg.stops if s.id == stop), None)
        default = selected.view() if selected is not None else None
        if isinstance(default, Mapping) and first in default:
            return None, what
        return str(first), format_path(parts[1:])

    def do_print(self, arg: str) -> None:
        self.out.block(pretty(self._value_of(arg)))

    def do_display(self, arg: str) -> None:
        what = arg.strip()
        if not what:
            if not self._displays:
                self.out.line("nothing is displayed; display PATH shows PATH at every stop")
            for number, shown in enumerate(self._displays, 1):
                self.out.line(f"{number}: {shown}")
            return
        missing: PathError | None = None
        try:
            shown = short_repr(self._value_of(what), 100)
        except PathError as exc:
            view, rest = split_view(what)
            # a malformed path or a bad expression is refused now, not shown broken at every
            # stop; a path that leads nowhere yet stays, as gdb keeps a display that does not
            # evaluate (and as watch accepts it): the key may appear at a later stop
            parse_path((rest if view is not None else what).strip())
            missing, shown = exc, f"<{exc}>"
        if what not in self._displays:  # (displayed once however often it is asked for)
            self._displays.append(what)
        self.out.line(f"{self._displays.index(what) + 1}: {what} = {shown}")
        if missing is not None:
            self.out.line(
                f"note: {what!r} does not resolve at {self._selected().id} now; it stays "
                "displayed and shows its value at the stops where it does",
                style="yellow",
            )

    def do_undisplay(self, arg: str) -> None:
        if not arg.strip():
            self._displays.clear()
            self.out.line("nothing is displayed now")
            return
        numbers = []
        for word in arg.split():
            if not word.isdigit() or not 1 <= int(word) <= len(self._displays):
                raise ValueError(
                    f"no display {word!r}; display lists them (1..{len(self._displays)})"
                )
            numbers.append(int(word))
        for number in sorted(set(numbers), reverse=True):
            del self._displays[number - 1]
        self.out.line(f"{len(self._displays)} displayed")

    def do_watch(self, arg: str) -> None:
        path, sep, condition = arg.partition(" if ")
        if not path.strip():
            raise ValueError("usage: watch PATH [if EXPR], e.g. watch count if value > 3")
        bp = self.dbg.watch(path.strip(), condition=condition.strip() if sep else None)
        self.out.line(f"set {bp.describe()}")
        stop = self.dbg.stop
        if stop is None or stop.state is None:
            return
        try:
            self.dbg.inspect(f"state:{path.strip()}", stop=stop.id)
        except PathError as exc:
            # a watch also stops after a unit that creates its path, so it stays set; but a
            # mistyped path would wait silently for ever
            self.out.line(
                f"note: {path.strip()!r} does not exist at {stop.id} now ({exc}); the watch "
                "stays set and stops after a unit that creates or changes it",
                style="yellow",
            )

    def do_logpoint(self, arg: str) -> None:
        where, _, template = arg.strip().partition(" ")
        if not where or not template.strip():
            raise ValueError(
                "usage: logpoint [KIND:]NODE[:after] TEMPLATE, e.g. logpoint b x is {state[x]}"
            )
        node, position = split_node(where)
        kind, node = split_kind(node)
        try:  # refused like b refuses a typo
            bp = self.dbg.logpoint(
                node, template.strip(), position=position, kind=kind, strict=True
            )
        except BreakpointError as exc:
            raise BreakpointError(at_prompt(exc, node)) from None
        self.out.line(f"set {bp.describe()}")

    def do_set(self, arg: str) -> None:
        path, sep, raw = arg.partition("=")
        if not sep or not path.strip():
            raise ValueError("usage: set PATH = VALUE (VALUE is JSON or a Python literal)")
        value = parse_value(raw)
        self.dbg.set(path.strip(), value)
        stop = self._selected()
        self.out.line(
            f"{path.strip()} = {short_repr(value, 100)}  (applied to the {stop.default_view} "
            f"of {stop.location.node!r} when it resumes)"
        )

    def do_del(self, arg: str) -> None:
        if not arg:
            raise ValueError("usage: del PATH")
        self.dbg.delete(arg)
        self.out.line(f"deleted {arg} (applied when it resumes)")

    def do_diff(self, arg: str) -> None:
        stop = self._selected()
        if stop.location.position == Position.BEFORE.value:
            self.out.line(
                f"{stop.id} is before {stop.location.node!r}, which has not run yet; diff needs "
                f"an after stop: set one with b {stop.location.node}:after, or n to step"
            )
            return
        self.out.block(str(self.dbg.diff()), indent="  ")

    # -- where am I --

    def do_where(self, arg: str) -> None:
        stop = self._selected()
        loc = stop.location
        run = loc.run_id
        if loc.parent_run_id:
            run += f" (child of {short_id(loc.parent_run_id)})"
        rows = [
            ("stop", f"{stop.id} ({stop.reason.value})"),
            ("run", run),
            ("at", f"{loc.position} {loc.kind} {loc.node!r}"),
            ("path", "/".join((*loc.path, loc.node))),
            ("step", str(loc.step)),
            ("superstep", "-" if loc.superstep is None else str(loc.superstep)),
            ("branch", loc.branch or "-"),
            ("attempt", str(loc.attempt)),
        ]
        for key, value in rows:
            self.out.line(f"  {key:<10} {value}")

    def do_stops(self, arg: str) -> None:
        selected = self.dbg.stop
        for stop in self.dbg.stops:
            self._told_open.add(stop.id)
            mark = "*" if selected is not None and stop.id == selected.id else " "
            branch = f" branch {stop.location.branch}" if stop.location.branch else ""
            self.out.line(f"{mark} {stop}{branch}")
        for unit in self.dbg.status().running:  # branches not held: what they run now
            where = "/".join([*unit["path"], unit["node"]])
            self.out.line(
                f"  running {unit['kind']} {where!r} (step {unit['step']}, {unit['seconds']:.1f} s)"
            )

    def do_stop(self, arg: str) -> None:
        if not arg:
            self.show_stop(self._selected())
            return
        stop = self.dbg.select(_stop_id(arg))
        self.out.line(f"selected {stop.id}")
        self.show_stop(stop)

    def do_log(self, arg: str) -> None:
        view = arg.strip() or "auto"
        if view not in ("auto", "steps", "stats"):
            raise ValueError("usage: log [steps|stats]")
        runs = self.dbg.runs
        if not runs:
            self.out.line("no run has started yet")
            return
        log = runs[-1]
        self.out.block(log.render(view))
        if view == "auto" and log.auto_view() == "stats":
            self.out.line(f"(one row per node: {len(log.steps)} steps; log steps lists each)")

    def do_list(self, arg: str) -> None:
        stop = self._selected()
        loc = stop.location
        if not self.description:
            self.out.line("the adapter gives no graph description")
            return
        node, path = loc.node, loc.path
        graph = subgraph_at(self.description, path)
        note = ""
        if graph is None or node not in node_names(graph, nested=False):
            if not path:
                self.out.line(f"{node!r} is not a node of the graph")
                return
            note = f"{loc.kind} {node!r} runs inside node {path[-1]!r}"
            node, graph = path[-1], subgraph_at(self.description, path[:-1])
            if graph is None:
                self.out.line(note)
                return
        preds, succs = neighbourhood(graph, node)
        name = graph.get("name", "?")
        line = f"{', '.join(preds) or '-'}  ->  [{node}]  ->  {', '.join(succs) or '-'}"
        self.out.line(f"graph {name!r}" + (f" (in {'/'.join(path)})" if path and not note else ""))
        if note:
            self.out.line(f"  {note}")
        self.out.line(f"  {line}")
        if any(p.endswith("?") for p in (*preds, *succs)):
            self.out.line("  (? = conditional edge)")

    def do_help(self, arg: str) -> None:
        if arg:
            name = _ALIASES.get(arg, arg)
            if name not in _COMMANDS:
                self.out.line(f"unknown command {arg!r}; type h for help")
                return
            usage, text = _COMMANDS[name]
            self.out.line(f"{usage}: {text}")
            return
        width = max(len(u) for u, _ in _COMMANDS.values())
        self.out.line("commands (the letters outside the brackets are enough: c for continue):")
        for usage, text in _COMMANDS.values():
            self.out.line(f"  {usage:<{width}}  {text}")

    # -- completion --

    def complete(self, text: str, state: int) -> str | None:
        """readline completer: command names, node names, state keys, breakpoint and stop
        ids."""
        if state == 0:
            buffer, begin = "", 0
            if isinstance(self.source, TerminalSource):
                buffer, begin = self.source.line_buffer()
            self._completions = self.candidates(buffer[:begin], text)
        if state < len(self._completions):
            return self._completions[state]
        return None

    def candidates(self, before: str, text: str) -> list[str]:
        """What may complete ``text`` when ``before`` precedes it on the line."""
        words = before.split()
        if not words:
            return [n + " " for n in sorted(_COMMANDS) if n.startswith(text)]
        command = _ALIASES.get(words[0], words[0])
        options: list[str] = []
        if command in ("break", "tbreak") and len(words) == 1:
            options = self.nodes
        elif command in ("print", "set", "del") and len(words) == 1:
            options = self._state_keys()
        elif command in ("clear", "disable", "enable"):
            options = [bp.id for bp in self.dbg.breakpoints]
        elif command == "stop":
            options = [s.id for s in self.dbg.stops]
        elif command == "help":
            options = list(_COMMANDS)
        # a state key may go on with .field or [index]: no space after it
        end = "" if command in ("print", "set", "del") else " "
        return [o + end for o in options if o.startswith(text)]

    def _state_keys(self) -> list[str]:
        stop = self.dbg.stop
        if stop is None:
            return []
        try:
            rows = self.dbg.summary(stop=stop.id, view=stop.default_view)
            return [row.key for row in rows if row.key != "."]
        except FlowdbgError:
            return []


def at_prompt(exc: BreakpointError, node: str) -> str:
    """The API's refusal of a breakpoint on ``node`` as the terminal says it: the terminal's
    way to name a call's kind, and a hint for a mistyped position."""
    from flowdbg.breakpoints import CALL_KINDS_REMEDY  # (imported by the debugger already)

    text = str(exc).replace(CALL_KINDS_REMEDY, CALL_KINDS_AT_PROMPT)
    hint = position_hint(node)
    return f"{text}{hint}" if hint and text.startswith("unknown ") else text


def position_hint(node: str) -> str:
    """What to add to "unknown node" when the name looks like a mistyped position."""
    _, sep, position = node.rpartition(":")
    if sep and position:
        return f" (a position after ':' is 'before' or 'after', not {position!r})"
    return ""


#: the unit kinds ``b`` and ``-b`` take before a name (``b llm:gpt-4o:after``)
UNIT_KINDS = ("node", "tool", "llm", "agent", "handoff")
#: how the terminal names a call's kind, where the Python API's message says ``kind=``
CALL_KINDS_AT_PROMPT = "write tool:NAME or llm:NAME for a call a node makes (b llm:NAME:after)"


def split_kind(node: str) -> tuple[str | None, str]:
    """``KIND:NAME`` (a kind of :data:`UNIT_KINDS`) into the kind and the name glob; a name
    without one gives ``None``: a breakpoint on any node or tool of that name."""
    kind, sep, name = node.partition(":")
    if sep and kind in UNIT_KINDS and name:
        return kind, name
    return None, node


def split_node(spec: str) -> tuple[str, str]:
    """``NODE``, ``NODE:before`` or ``NODE:after`` into the node glob and the position."""
    node, sep, position = spec.rpartition(":")
    if sep and position in ("before", "after") and node:
        return node, position
    return spec, "before"
