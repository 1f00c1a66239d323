"""Reading a settings file that cannot blow up: a capped size and a strict YAML loader.

- The file is read at most :data:`MAX_CONFIG_BYTES` (+1) bytes; a larger one
  is refused before any parsing.
- Anchors and aliases (``&name``, ``*name``) are refused where the parser
  meets them, so an alias bomb ("billion laughs") never expands; so is
  nesting deeper than :data:`MAX_DEPTH` and a key given twice.
- Plain scalars resolve as YAML 1.2's core schema, narrowed: booleans only
  from ``true``/``false``, integers only from ASCII digits with an optional
  leading ``-`` (no ``+``, ``_``, ``0x``, ``0o``, ``1:30``, leading-zero
  octal or other scripts' digits), floats only from ASCII decimal notation;
  ``yes``, ``on``, ``1_6``, ``+5``, ``.inf`` stay strings, which the strict
  settings model then refuses with the key named.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

from appliance.errors import ConfigError

logger = logging.getLogger(__name__)

MAX_CONFIG_BYTES = 64 * 1024
MAX_DEPTH = 8  # the settings file needs 3: the document, a section, a value

BOOL_TAG = "tag:yaml.org,2002:bool"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
BOOL_RE = re.compile(r"(?:true|false)\Z")
INT_RE = re.compile(r"-?[0-9]+\Z", re.ASCII)
FLOAT_RE = re.compile(
    r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][-+]?[0-9]+)?\Z", re.ASCII
)


class _Refused(yaml.MarkedYAMLError):
    """Something this loader does not accept, with where it is."""


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without anchors, aliases, deep nesting, duplicate keys or loose types."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(
                problem="YAML anchors and aliases (&name, *name) are not allowed",
                problem_mark=event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(
                    problem=f"nesting deeper than {MAX_DEPTH} levels is not allowed",
                    problem_mark=event.start_mark,
                )
            node: Node | None = super().compose_node(parent, index)
            return node
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, ScalarNode):
                if key_node.value in seen:
                    raise _Refused(
                        problem=f"key {key_node.value!r} is given twice",
                        problem_mark=key_node.start_mark,
                    )
                seen.add(key_node.value)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def _checked(loader: StrictLoader, node: ScalarNode, pattern: re.Pattern[str], kind: str) -> str:
    """The scalar's text when it matches ``pattern`` (explicit ``!!int`` tags included)."""
    value = loader.construct_scalar(node)
    if not isinstance(value, str) or not pattern.match(value):
        raise ConstructorError(None, None, f"{value!r} is not {kind}", node.start_mark)
    return value


def _construct_bool(loader: StrictLoader, node: ScalarNode) -> bool:
    return _checked(loader, node, BOOL_RE, "true or false") == "true"


def _construct_int(loader: StrictLoader, node: ScalarNode) -> int:
    return int(_checked(loader, node, INT_RE, "an integer in ASCII digits"))


def _construct_float(loader: StrictLoader, node: ScalarNode) -> float:
    return float(_checked(loader, node, FLOAT_RE, "a decimal number in ASCII digits"))


def _install_resolvers() -> None:
    narrowed = (BOOL_TAG, INT_TAG, FLOAT_TAG)
    StrictLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in narrowed]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    # ints before floats: the first matching resolver for a first character wins
    StrictLoader.add_implicit_resolver(BOOL_TAG, BOOL_RE, list("tf"))
    StrictLoader.add_implicit_resolver(INT_TAG, INT_RE, list("-0123456789"))
    StrictLoader.add_implicit_resolver(FLOAT_TAG, FLOAT_RE, list("-.0123456789"))
    StrictLoader.add_constructor(BOOL_TAG, _construct_bool)
    StrictLoader.add_constructor(INT_TAG, _construct_int)
    StrictLoader.add_constructor(FLOAT_TAG, _construct_float)


_install_resolvers()


def read_config_text(path: Path) -> str:
    """The text of ``path``, refused (ConfigError) when over :data:`MAX_CONFIG_BYTES`."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config {path} is larger than {MAX_CONFIG_BYTES // 1024} KiB; "
            "a settings file is a few hundred bytes"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read config {path}: not UTF-8 text ({exc.reason})") from exc


def load_config_yaml(path: Path) -> Any:
    """Parse ``path`` with :class:`StrictLoader`; every refusal is one-line ConfigError."""
    text = read_config_text(path)
    loader = StrictLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError(f"cannot read config {path}: {_one_line(exc)}") from exc
    finally:
        loader.dispose()


def _one_line(exc: yaml.YAMLError) -> str:
    """The problem and where it is, without PyYAML's multi-line snippet."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        text = f"{exc.context}: {exc.problem}" if exc.context else exc.problem
        mark = exc.problem_mark
        return text if mark is None else f"{text} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())
