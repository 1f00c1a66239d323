"""Log text that cannot forge log lines: control characters escaped, one record one line.

Request paths, header values and file names reach log messages; a ``%0A``
in a URL would otherwise start a line of its own on stderr (one journal
entry per line) that reads like another record ("... admin logged in ...").
``escape_controls`` writes every control character (C0, DEL, C1, the
Unicode line and paragraph separators, the bidirectional overrides) as a
visible escape (``\\n``, ``\\x1b``, ``\\u2028``). ``SafeFormatter`` is the
standard ``logging.Formatter`` with that applied to each record's line, and
with every line of a traceback or stack after it indented by ``CONTINUED``
(and escaped too), so no record can start a line that looks like another.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

CONTINUED = "  | "
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CONTROLS = [
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x2028,
    0x2029,
]


def _escape(code: int) -> str:
    char = chr(code)
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TABLE = {code: _escape(code) for code in _CONTROLS}


def escape_controls(text: str) -> str:
    """``text`` with its control characters written as visible escapes: one line always."""
    return text.translate(_TABLE)


def _continued(text: str) -> str:
    return "\n".join(CONTINUED + escape_controls(line) for line in text.splitlines())


class SafeFormatter(logging.Formatter):
    """A ``logging.Formatter`` whose output cannot hold a line that starts another record."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        lines = [escape_controls(self.formatMessage(record))]
        if record.exc_info:
            lines.append(_continued(self.formatException(record.exc_info)))
        elif record.exc_text:
            lines.append(_continued(record.exc_text))
        if record.stack_info:
            lines.append(_continued(self.formatStack(record.stack_info)))
        return "\n".join(lines)
