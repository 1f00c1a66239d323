"""What Python 3.11 added that 3.10 (Jetson's JetPack 6) lacks, in one place."""

from __future__ import annotations

import logging
import sys
from enum import Enum

logger = logging.getLogger(__name__)

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:

    class StrEnum(str, Enum):
        """``enum.StrEnum`` of 3.11: members are strings and ``str()`` gives the value."""

        def __str__(self) -> str:
            return str(self.value)


__all__ = ["StrEnum"]
