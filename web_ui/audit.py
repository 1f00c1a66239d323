"""Security events: logins, wrong passwords, lock-outs, password changes.

They go through this module's logger, which records INFO and above whatever
``-v`` says (a login is worth a line in the journal), and each record is
marked as a security event (``appliance.control.log_buffer.SECURITY_EVENT``):
the admin logs page keeps those in a ring of their own, which a flood of
other warnings cannot evict. Every value in them reaches stderr with its
control characters escaped (``appliance.log_text``).
"""

from __future__ import annotations

import logging

from appliance.control.log_buffer import SECURITY_EVENT

logger = logging.getLogger(__name__)
logger.setLevel(logging.INFO)

_MARK = {SECURITY_EVENT: True}


def info(message: str, *args: object) -> None:
    logger.info(message, *args, extra=_MARK, stacklevel=2)


def warning(message: str, *args: object) -> None:
    logger.warning(message, *args, extra=_MARK, stacklevel=2)
