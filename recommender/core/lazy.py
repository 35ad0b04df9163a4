"""A property computed on first use and kept, which threads can compute side by side.

``functools.cached_property`` in Python 3.8-3.11 holds one lock per property for all
instances, so two threads computing different instances' values (two kernels' candidates
applied at once in ``recommend.ranking``) take turns; 3.12 dropped the lock. Without it, two
threads that ask for the same instance's value at once both compute it, and the later one's
equal value is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class lazy(Generic[T]):  # noqa: N801 - used as a decorator, like cached_property
    """Decorate a method: its value is computed on first access and stored on the instance
    (works on frozen dataclasses, as ``cached_property`` does)."""

    def __init__(self, func: Callable[[Any], T]):
        self.func = func
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = instance.__dict__[self.name] = self.func(instance)
        return value
