"""The flowdbg plugin contract.

Plugins implement these hooks with :data:`flowdbg.hookimpl`. An adapter's entry-point module
implements :func:`flowdbg_register_adapters`; observers (the recorder, the run log, exporters,
servers) implement the ``flowdbg_on_*`` hooks. Hooks are always called with keyword arguments,
so an implementation may accept only the arguments it needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from flowdbg.adapter import Adapter
    from flowdbg.breakpoints import Breakpoint
    from flowdbg.debugger import Debugger
    from flowdbg.events import Event, RunInfo
    from flowdbg.runtime import Unit
    from flowdbg.stops import Stop

hookspec = pluggy.HookspecMarker("flowdbg")

# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------


@hookspec
def flowdbg_register_adapters(register: Callable[[Adapter], None]) -> None:
    """Register the adapters this plugin provides.

    Call ``register(adapter)`` once per :class:`flowdbg.Adapter` instance. The module holding
    this hook must not import the adapter's framework: import it lazily inside ``attach``.

    :param register: callable taking an :class:`flowdbg.Adapter` instance.
    """


@hookspec
def flowdbg_register_commands(cli: Any) -> None:
    """Add commands to the ``flowdbg`` command line.

    :param cli: the root ``click.Group``; add commands with ``cli.add_command(...)`` or the
        ``@cli.command()`` decorator.
    """


# ---------------------------------------------------------------------------------------------
# Observation: called by the debugger as runs execute. Implementations must be quick and must
# not raise; they run on the debugged program's threads and tasks.
# ---------------------------------------------------------------------------------------------


@hookspec
def flowdbg_on_run_start(debugger: Debugger, run: RunInfo) -> None:
    """A run started (a top-level invocation, or a nested one with ``run.parent_run_id``).

    :param debugger: the debugger the run is attached to.
    :param run: the run; its ``status`` is ``running``.
    """


@hookspec
def flowdbg_on_event(debugger: Debugger, event: Event) -> None:
    """A unit reached a point (``before``, ``after`` or ``error``).

    Called before the debugger decides whether to stop there. Implementing this hook turns off
    the debugger's no-observer fast path, so keep it cheap.

    :param debugger: the debugger.
    :param event: the event with its location and payloads.
    """


@hookspec
def flowdbg_on_step(debugger: Debugger, unit: Unit) -> None:
    """A unit finished: its ``after``, ``error`` or discard, or, for a unit whose state the
    framework commits later, once that state is known. Also, with ``unit.status ==
    "running"``, a unit still running when its run was terminated (so that a record names a
    call that never returns); it is reported again when it finishes.

    This is the one channel for finished units: the built-in recorder is a plugin implementing
    it. Unlike :func:`flowdbg_on_event` it keeps the debugger's fast path, so it must cost next
    to nothing: ``unit.record()`` builds the :class:`flowdbg.StepRecord`, which an observer
    wanting it off the run's thread does later (keep the unit, build the record elsewhere).
    Except where ``unit.run.values_change_in_place``: the framework may then change the
    unit's objects in place once this hook returns, so an observer keeping its values takes
    them now (the built-in recorder has its store encode them:
    :meth:`flowdbg.store.Store.freeze`).

    :param debugger: the debugger.
    :param unit: the finished :class:`flowdbg.Unit` (``status``, ``input``, ``output``,
        ``state``, ``decision``, ``exception``, timings).
    """


@hookspec
def flowdbg_on_unit_start(debugger: Debugger, unit: Unit) -> None:
    """A unit of a run whose framework changes values in place
    (``unit.run.values_change_in_place``) passed its ``before`` point: ``unit.input`` is
    what it receives (edits at a stop applied). The unit may change that object as it runs,
    so an observer that records inputs takes it now (the built-in recorder has its store
    encode it). Not called for other runs; like :func:`flowdbg_on_step`, it runs on the
    run's thread, so keep it cheap.

    :param debugger: the debugger.
    :param unit: the :class:`flowdbg.Unit` about to run.
    """


@hookspec
def flowdbg_on_stop(debugger: Debugger, stop: Stop) -> None:
    """A branch stopped and is now held.

    :param debugger: the debugger.
    :param stop: the open stop.
    """


@hookspec
def flowdbg_on_resume(debugger: Debugger, stop: Stop, action: str) -> None:
    """A stopped branch was let go.

    :param debugger: the debugger.
    :param stop: the stop that closed.
    :param action: ``continue``, ``step_over``, ``step_into``, ``step_out`` or ``terminate``.
    """


@hookspec
def flowdbg_on_log(debugger: Debugger, breakpoint: Breakpoint, event: Event, message: str) -> None:
    """A logpoint fired (it also logs ``message`` to the ``flowdbg.logpoint`` logger).

    :param debugger: the debugger.
    :param breakpoint: the logpoint.
    :param event: the event it fired at.
    :param message: the rendered message.
    """


@hookspec
def flowdbg_on_run_end(debugger: Debugger, run: RunInfo) -> None:
    """A run ended: ``run.status`` is ``completed``, ``failed`` or ``terminated``.

    :param debugger: the debugger.
    :param run: the run, with its output or error.
    """
