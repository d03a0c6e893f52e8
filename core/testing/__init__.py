"""flowdbg's conformance suite: one set of tests every adapter passes.

An adapter proves it behaves like every other one by building the canonical scenarios natively
in its framework (an :class:`AdapterFixtures` subclass) and composing that with the abstract
suites, in the habit of fsspec's and SQLAlchemy's shipped test suites::

    # tests/conformance/test_myframework.py
    from flowdbg.testing import AdapterFixtures, AbstractBreakpointTests, Scenario

    class MyFrameworkFixtures(AdapterFixtures):
        adapter = "myframework"

        def build_linear(self) -> Scenario: ...
        # ... one builder per scenario

    class TestMyFrameworkBreakpoints(MyFrameworkFixtures, AbstractBreakpointTests):
        pass

Tests that need a capability the adapter does not declare (``Adapter.capabilities``) are
skipped with the reason. :data:`ALL_SUITES` lists every suite, to compose them all at once.
Importing this module imports pytest; ``import flowdbg`` never imports it.
"""

from __future__ import annotations

from flowdbg.testing._base import MODES, WAIT, SuiteBase, ThreadCall, requires
from flowdbg.testing._breakpoints import (
    AbstractBreakpointTests,
    AbstractConditionTests,
    AbstractLogpointTests,
    AbstractWatchTests,
)
from flowdbg.testing._control import (
    AbstractExceptionTests,
    AbstractParallelTests,
    AbstractPauseTests,
    AbstractStateEditingTests,
    AbstractSteppingTests,
    AbstractTerminateTests,
)
from flowdbg.testing._fixtures import (
    EXPECTED,
    SCENARIO_CAPABILITIES,
    AdapterFixtures,
    Placement,
    Scenario,
)
from flowdbg.testing._fork import AbstractForkTests, AbstractRerunTests, AbstractRewindTests
from flowdbg.testing._handoffs import AbstractHandoffTests
from flowdbg.testing._recording import AbstractRecordingTests
from flowdbg.testing._runs import (
    AbstractAsyncTests,
    AbstractObserverTests,
    AbstractTransparencyTests,
    AbstractWaitTests,
)
from flowdbg.testing._tools import AbstractToolTests
from flowdbg.testing._views import AbstractViewTests

__all__ = [
    "ALL_SUITES",
    "EXPECTED",
    "MODES",
    "SCENARIO_CAPABILITIES",
    "WAIT",
    "AbstractAsyncTests",
    "AbstractBreakpointTests",
    "AbstractConditionTests",
    "AbstractExceptionTests",
    "AbstractForkTests",
    "AbstractHandoffTests",
    "AbstractLogpointTests",
    "AbstractObserverTests",
    "AbstractParallelTests",
    "AbstractPauseTests",
    "AbstractRecordingTests",
    "AbstractRerunTests",
    "AbstractRewindTests",
    "AbstractStateEditingTests",
    "AbstractSteppingTests",
    "AbstractTerminateTests",
    "AbstractToolTests",
    "AbstractTransparencyTests",
    "AbstractViewTests",
    "AbstractWaitTests",
    "AbstractWatchTests",
    "AdapterFixtures",
    "Placement",
    "Scenario",
    "SuiteBase",
    "ThreadCall",
    "requires",
]

#: Every suite, for composing them all at once::
#:
#:     class TestMyFrameworkAll(MyFrameworkFixtures, *ALL_SUITES):
#:         pass
ALL_SUITES: tuple[type[SuiteBase], ...] = (
    AbstractBreakpointTests,
    AbstractConditionTests,
    AbstractExceptionTests,
    AbstractWatchTests,
    AbstractSteppingTests,
    AbstractStateEditingTests,
    AbstractViewTests,
    AbstractPauseTests,
    AbstractParallelTests,
    AbstractTerminateTests,
    AbstractLogpointTests,
    AbstractTransparencyTests,
    AbstractWaitTests,
    AbstractAsyncTests,
    AbstractObserverTests,
    AbstractToolTests,
    AbstractHandoffTests,
    AbstractRecordingTests,
    AbstractForkTests,
    AbstractRerunTests,
    AbstractRewindTests,
)
