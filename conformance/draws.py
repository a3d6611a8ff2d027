"""The hook through which the runner observes what the properties draw.

A property draws its message with :func:`conformance.properties.draw_message`,
which hands every drawn message to :func:`notify`. A runner plugin that needs
to see them (the shrinking budget keeps the last one to show with a failure
raised inside a codec; ``--variant-coverage`` counts the variants reached)
subscribes with :func:`observe` while it is active. Observers run in the
drawing thread, in subscription order; an observer must not raise.
"""

from __future__ import annotations

from typing import Any, Callable, List

__all__ = ["Observer", "observe", "notify"]

#: ``observer(message)``: called once per drawn message.
Observer = Callable[[Any], None]

_observers: List[Observer] = []


def observe(observer: Observer) -> Callable[[], None]:
    """Call ``observer`` with every message drawn from now on; returns the function that stops it."""
    _observers.append(observer)

    def stop() -> None:
        if observer in _observers:
            _observers.remove(observer)

    return stop


def notify(message: Any) -> None:
    """Tell every observer that a property drew ``message``."""
    for observer in tuple(_observers):
        observer(message)
