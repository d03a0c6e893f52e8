"""Waking a waiter from any thread, whether it waits in a thread, an asyncio task or a trio task."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anyio


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class AsyncWaker:
    """A one-shot wake-up for the current async task.

    Create it inside the task that will wait; call :meth:`wake` from any thread (or from the same
    event loop); ``await wait(timeout)`` returns ``True`` when woken, ``False`` on timeout. The
    event loop is never blocked.
    """

    __slots__ = ("_wait", "wake")

    wake: Callable[[], None]

    def __init__(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            fut: asyncio.Future[None] = loop.create_future()

            def wake() -> None:
                try:
                    loop.call_soon_threadsafe(_resolve, fut)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    pass

            self.wake = wake
            self._wait: Any = fut
        else:
            import trio  # only reached under trio, where it is installed

            event = trio.Event()
            token = trio.lowlevel.current_trio_token()

            def wake_trio() -> None:
                try:
                    token.run_sync_soon(event.set)
                except trio.RunFinishedError:
                    pass

            self.wake = wake_trio
            self._wait = event

    async def wait(self, timeout: float | None) -> bool:
        """Wait until woken or ``timeout`` seconds pass (``None``: forever)."""
        waitable = self._wait
        with anyio.move_on_after(timeout):
            if isinstance(waitable, asyncio.Future):
                await asyncio.shield(waitable)
            else:
                await waitable.wait()
            return True
        return False
