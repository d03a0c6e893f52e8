"""Plugin discovery and the typed facade over the hooks.

Entry points of the group ``flowdbg`` are loaded one by one: an entry point whose module fails
to import makes that adapter *unavailable with a reason* and never breaks the others (pluggy's
own ``load_setuptools_entrypoints`` stops at the first failure). ``FLOWDBG_DISABLE_ADAPTERS``
(comma-separated names) blocks entry points before they are imported.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from flowdbg import hookspecs

if TYPE_CHECKING:
    from flowdbg.breakpoints import Breakpoint
    from flowdbg.debugger import Debugger
    from flowdbg.events import Event, RunInfo
    from flowdbg.runtime import Unit
    from flowdbg.stops import Stop

__all__ = ["ENTRY_POINT_GROUP", "EntryPointResult", "Hooks", "discover", "hookimpl"]

log = logging.getLogger("flowdbg")

ENTRY_POINT_GROUP = "flowdbg"
DISABLE_ENV = "FLOWDBG_DISABLE_ADAPTERS"

#: Marker for hook implementations: ``@flowdbg.hookimpl``.
hookimpl = pluggy.HookimplMarker("flowdbg")


@dataclass(frozen=True)
class EntryPointResult:
    """One entry point of the ``flowdbg`` group: its module, or why it could not be loaded."""

    name: str
    value: str
    module: ModuleType | None
    error: str | None


_lock = threading.Lock()
_cache: dict[tuple[str, ...], list[EntryPointResult]] = {}


def disabled_names() -> frozenset[str]:
    """Names listed in ``FLOWDBG_DISABLE_ADAPTERS``."""
    raw = os.environ.get(DISABLE_ENV, "")
    return frozenset(n.strip() for n in raw.split(",") if n.strip())


def discover(*, refresh: bool = False) -> list[EntryPointResult]:
    """Load every ``flowdbg`` entry point once per process (cached).

    :param refresh: forget the cache and scan again.
    :returns: one result per entry point, in name order.
    """
    disabled = disabled_names()
    key = tuple(sorted(disabled))
    with _lock:
        if refresh:
            _cache.clear()
        if key in _cache:
            return _cache[key]
        results = []
        seen: set[str] = set()
        eps = sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
        for ep in eps:
            if ep.name in seen:  # the same distribution seen twice on sys.path
                continue
            seen.add(ep.name)
            if ep.name in disabled:
                results.append(
                    EntryPointResult(ep.name, ep.value, None, f"disabled by {DISABLE_ENV}")
                )
                continue
            try:
                module = ep.load()
            except ImportError as exc:
                results.append(
                    EntryPointResult(
                        ep.name,
                        ep.value,
                        None,
                        f"plugin module {ep.value!r} failed to import: {exc}",
                    )
                )
                continue
            results.append(EntryPointResult(ep.name, ep.value, module, None))
        _cache[key] = results
        return results


def make_plugin_manager(
    plugins: Iterable[Any] = (),
) -> tuple[pluggy.PluginManager, list[EntryPointResult]]:
    """A plugin manager with the hookspecs, the entry-point plugins and ``plugins``.

    :raises pluggy.PluginValidationError: when a plugin implements a hook that does not exist
        (a misspelled ``flowdbg_`` name).
    """
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    results = discover()
    for res in results:
        if (
            res.module is not None
            and pm.get_plugin(res.name) is None
            and not pm.is_registered(res.module)
        ):
            pm.register(res.module, name=res.name)
    for plugin in plugins:
        pm.register(plugin)
    pm.check_pending()
    return pm, results


#: the name the built-in recorder is registered under (see Debugger.__init__)
RECORDER = "flowdbg.recorder"


class Hooks:
    """Typed facade over ``pm.hook``: one method per hook, keyword arguments only.

    An observer that raises is logged (once per hook) and never breaks the debugged run.
    """

    def __init__(self, pm: pluggy.PluginManager, debugger: Debugger) -> None:
        self._pm = pm
        self._debugger = debugger
        self._failed: set[str] = set()
        self._listeners: list[Callable[[], None]] = []
        #: ``on_step(unit)``: the finished-unit hook for the hot path, or ``None`` (see refresh)
        self.on_step: Callable[[Unit], None] | None = None
        #: ``on_unit_start(unit)``: the same for units starting (runs whose values change in
        #: place only), or ``None``
        self.on_unit_start: Callable[[Unit], None] | None = None
        self.refresh()

    def _observe(self, name: str, **kwargs: Any) -> None:
        try:
            getattr(self._pm.hook, name)(debugger=self._debugger, **kwargs)
        except Exception:
            if name not in self._failed:
                self._failed.add(name)
                log.exception("a flowdbg plugin failed in %s; the run goes on", name)

    def refresh(self) -> None:
        """Recompute which observation hooks have implementations (after registering)."""
        hook = self._pm.hook
        self.has_run_start = bool(hook.flowdbg_on_run_start.get_hookimpls())
        self.has_event = bool(hook.flowdbg_on_event.get_hookimpls())
        self.has_stop = bool(hook.flowdbg_on_stop.get_hookimpls())
        self.has_resume = bool(hook.flowdbg_on_resume.get_hookimpls())
        self.has_log = bool(hook.flowdbg_on_log.get_hookimpls())
        self.has_run_end = bool(hook.flowdbg_on_run_end.get_hookimpls())
        self.on_step = self._direct("flowdbg_on_step")
        self.on_unit_start = self._direct("flowdbg_on_unit_start")
        for listener in self._listeners:
            listener()

    def listen(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` whenever the implementations change (the controller keeps its
        fast-path dispatch in step with them)."""
        self._listeners.append(listener)

    def _direct(self, name: str) -> Callable[[Unit], None] | None:
        """A call of hook ``name`` (whose one argument besides ``debugger`` is ``unit``) for the
        hot path: ``None`` with no implementation; the built-in recorder's own method when it
        is the only one (it queues and never raises); else a loop over the implementations
        that logs a failure once and never lets it reach the run. Wrappers (``wrapper=True``,
        ``hookwrapper=True``) go through pluggy's own call."""
        caller = getattr(self._pm.hook, name)
        impls = caller.get_hookimpls()
        if not impls:
            return None
        only = impls[0]
        if len(impls) == 1 and only.plugin_name == RECORDER and tuple(only.argnames) == ("unit",):
            direct: Callable[[Unit], None] = impls[0].function
            return direct
        debugger = self._debugger
        failed = self._failed

        def report(exc: Exception) -> None:
            if name not in failed:
                failed.add(name)
                log.error("a flowdbg plugin failed in %s; the run goes on", name, exc_info=exc)

        if any(impl.hookwrapper or impl.wrapper for impl in impls):

            def through_pluggy(unit: Unit) -> None:
                try:
                    caller(debugger=debugger, unit=unit)
                except Exception as exc:
                    report(exc)

            return through_pluggy
        calls = [(impl.function, tuple(impl.argnames)) for impl in reversed(impls)]

        def dispatch(unit: Unit) -> None:
            values = {"debugger": debugger, "unit": unit}
            for function, argnames in calls:
                try:
                    function(*[values[arg] for arg in argnames])
                except Exception as exc:
                    report(exc)

        return dispatch

    def register_adapters(self, register: Any) -> None:
        self._pm.hook.flowdbg_register_adapters(register=register)

    def register_commands(self, cli: Any) -> None:
        self._pm.hook.flowdbg_register_commands(cli=cli)

    def on_run_start(self, *, run: RunInfo) -> None:
        if self.has_run_start:
            self._observe("flowdbg_on_run_start", run=run)

    def on_event(self, *, event: Event) -> None:
        if self.has_event:
            self._observe("flowdbg_on_event", event=event)

    def on_stop(self, *, stop: Stop) -> None:
        if self.has_stop:
            self._observe("flowdbg_on_stop", stop=stop)

    def on_resume(self, *, stop: Stop, action: str) -> None:
        if self.has_resume:
            self._observe("flowdbg_on_resume", stop=stop, action=action)

    def on_log(self, *, breakpoint: Breakpoint, event: Event, message: str) -> None:
        if self.has_log:
            self._observe("flowdbg_on_log", breakpoint=breakpoint, event=event, message=message)

    def on_run_end(self, *, run: RunInfo) -> None:
        if self.has_run_end:
            self._observe("flowdbg_on_run_end", run=run)
