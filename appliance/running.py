"""Context-manager mixins for the things that run or hold resources.

``StartStop``: ``with thing:`` starts it and stops it at the end (runners,
servers, governors). ``Closing``: ``with thing:`` closes it at the end.
"""

from __future__ import annotations

from typing_extensions import Self


class StartStop:
    """``start()`` on entering the ``with`` block, ``stop()`` on leaving it."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> object:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Closing:
    """``close()`` on leaving the ``with`` block."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
