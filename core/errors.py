"""Exceptions raised by flowdbg.

Every error flowdbg raises on purpose derives from :class:`FlowdbgError` and says, in one
sentence, what was wrong and how to fix it. :class:`Terminated` is the exception: it derives from
:class:`BaseException` so that framework code catching ``Exception`` cannot swallow it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

__all__ = [
    "AdapterError",
    "AdapterNotFound",
    "AdapterUnavailable",
    "BreakpointError",
    "BreakpointWarning",
    "EditRefused",
    "ExpressionError",
    "FlowdbgError",
    "NotStoppedError",
    "PathError",
    "RunOptionError",
    "StopNotFound",
    "Terminated",
    "refuse_unknown_arguments",
    "validation_details",
]


class FlowdbgError(Exception):
    """Base class of every error flowdbg raises on purpose."""


class AdapterError(FlowdbgError):
    """An adapter could not be found, loaded or used."""


class AdapterNotFound(AdapterError, LookupError):
    """No registered adapter accepts the target given to :meth:`Debugger.attach`."""


class AdapterUnavailable(AdapterError):
    """The adapter for a target exists, but its framework is not installed."""


class RunOptionError(AdapterError, ValueError):
    """An adapter cannot run its target with an option it was given (a config the target's run
    method takes no config for, a resume value where nothing can be resumed, another adapter's
    command-line option).

    Its message starts with the option as ``flowdbg run`` spells it (``--resume: ...``).

    :param option: the option's name: a :class:`flowdbg.adapter.RunOptions` field (``config``,
        ``resume``) or a key of ``RunOptions.extra`` (``thread``).
    :param message: what is wrong and what to do instead, in one sentence.
    """

    def __init__(self, option: str, message: str) -> None:
        super().__init__(option, message)  # both, so that a pickled copy can be rebuilt
        self.option = option
        self.message = message

    #: whether the option is a field of a request (``config: ...``, the debug server's) rather
    #: than the command line's option (``--config: ...``); see :meth:`as_request_field`
    request_field = False

    def __str__(self) -> str:
        if self.request_field:
            return f"{self.option}: {self.message}"
        return f"--{self.option.replace('_', '-')}: {self.message}"

    def as_request_field(self) -> RunOptionError:
        """This error as a request names it (the debug server's, whose ``config`` and
        ``input`` are fields of the request, not ``--config`` and ``--input``): the message
        starts with the field, and the command-line spellings in it name the fields."""
        message = re.sub(r"--(config|input|resume)\b(?!-)", r"\1", self.message)
        error = RunOptionError(self.option, message)
        error.request_field = True
        return error


class BreakpointError(FlowdbgError, ValueError):
    """A breakpoint was given bad arguments (glob, hit condition, unknown id, ...)."""


class BreakpointWarning(UserWarning):
    """A breakpoint was set, but as far as the attached targets tell it cannot stop: its name
    pattern matches none of their nodes or tools, or an exception name looks like no
    exception class. ``strict=True`` on the breakpoint methods raises :class:`BreakpointError`
    instead; ``warnings.filterwarnings("ignore", category=BreakpointWarning)`` silences it."""


class ExpressionError(BreakpointError):
    """A condition expression or log template is malformed or uses something not allowed."""


class PathError(FlowdbgError, LookupError):
    """A state path is malformed or does not lead to a value."""


class EditRefused(FlowdbgError, ValueError):
    """An edit at a stop that the framework could not apply (a key its state schema lacks, a
    value its channel rejects); the stop's payload is left as it was."""


def validation_details(exc: BaseException) -> str:
    """What a validation error says, on one line: ``path: message`` for each error a pydantic
    ``ValidationError`` lists (``(whole value)`` for the value itself), else its text. For the
    reason of an :class:`EditRefused` (pydantic is not imported here)."""
    errors = getattr(exc, "errors", None)
    try:
        listed = errors() if callable(errors) else []
    except Exception:  # an errors() that needs arguments: the text says enough
        listed = []
    details = "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', ())) or '(whole value)'}: {e.get('msg')}"
        for e in listed
        if isinstance(e, dict)
    )
    return details or str(exc)


def refuse_unknown_arguments(what: str, given: Iterable[Any], known: Collection[str]) -> None:
    """Refuse an edit of a call's arguments that names one the callee does not take, in the
    words every adapter uses: the first unknown name, then the names it takes. For the
    ``check_edit`` of a tool or function call (the type checks are the adapter's: each
    framework validates arguments its own way).

    :param what: the callee as the message names it, e.g. ``"tool 'search'"``.
    :param given: the argument names of the edited arguments, in their order.
    :param known: the argument names the callee takes, in the order to list them.
    :raises EditRefused: when a name of ``given`` is not in ``known``.
    """
    for name in given:
        if name not in known:
            if not known:
                raise EditRefused(f"{what} takes no arguments, so it has no {name!r} to set")
            listed = ", ".join(str(k) for k in known)
            raise EditRefused(f"{what} takes no argument {name!r}; its arguments are {listed}")


class NotStoppedError(FlowdbgError, RuntimeError):
    """An operation needs a stop (inspect, set, diff, resume) and there is none."""


class StopNotFound(FlowdbgError, LookupError):
    """A stop id names no open stop."""


class Terminated(BaseException):
    """Raised inside the debugged run when the debugger terminates it.

    It derives from :class:`BaseException`, like :class:`KeyboardInterrupt`, so that a framework
    or user ``except Exception`` clause lets it through to the caller of the run.
    """

    def __init__(self, message: str = "the run was terminated by the debugger") -> None:
        super().__init__(message)
