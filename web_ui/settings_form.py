"""The settings form, built from the ``Settings`` model itself, and read back from a POST.

Every section (a nested model) becomes a fieldset and every field an input
chosen by its type: bool -> checkbox, Literal or Enum -> select, int/float ->
number (with the field's bounds), str -> text; anything else is shown
read-only. A field added to the model appears here without code changes.
Reading the form re-validates the whole model (``appliance.config.updated``)
and maps each error to its field; a field absent from the POST keeps its value.
"""

from __future__ import annotations

import enum
import logging
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from appliance.config import Settings, updated
from appliance.config_yaml import FLOAT_RE, INT_RE
from appliance.errors import ConfigError

logger = logging.getLogger(__name__)

FORM_ERROR = "__form__"  # errors not about one field
Kind = Literal["checkbox", "select", "int", "float", "text", "readonly"]


@dataclass(frozen=True)
class FormField:
    key: str  # dotted: "label.text"
    label: str
    kind: Kind
    value: str
    help: str = ""
    choices: tuple[str, ...] = ()
    minimum: str | None = None
    maximum: str | None = None
    max_length: int | None = None
    optional: bool = False
    live: bool = True
    error: str | None = None

    @property
    def checked(self) -> bool:
        return self.value == "true"


@dataclass(frozen=True)
class FormSection:
    key: str
    title: str
    fields: tuple[FormField, ...]


@dataclass(frozen=True)
class _Leaf:
    key: str
    info: FieldInfo
    base: Any  # the annotation without ``| None``
    optional: bool


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _kind(base: Any) -> Kind:
    if base is bool:
        return "checkbox"
    if typing.get_origin(base) is Literal or (
        isinstance(base, type) and issubclass(base, enum.Enum)
    ):
        return "select"
    if base is int:
        return "int"
    if base is float:
        return "float"
    if base is str:
        return "text"
    return "readonly"


def _choices(base: Any) -> tuple[str, ...]:
    if typing.get_origin(base) is Literal:
        return tuple(str(a) for a in typing.get_args(base))
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return tuple(str(m.value) for m in base)
    return ()


def _bounds(info: FieldInfo) -> tuple[str | None, str | None, int | None]:
    low = high = None
    max_length = None
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge | annotated_types.Gt):
            low = str(meta.ge if isinstance(meta, annotated_types.Ge) else meta.gt)
        elif isinstance(meta, annotated_types.Le | annotated_types.Lt):
            high = str(meta.le if isinstance(meta, annotated_types.Le) else meta.lt)
        elif isinstance(meta, annotated_types.MaxLen):
            max_length = meta.max_length
    return low, high, max_length


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)


def leaves(model: type[BaseModel], prefix: str = "") -> list[_Leaf]:
    """Every editable-or-shown leaf field of ``model``, depth first."""
    out: list[_Leaf] = []
    for name, info in model.model_fields.items():
        base, optional = _unwrap(info.annotation)
        if _is_model(base) and not optional:
            out.extend(leaves(base, f"{prefix}{name}."))
        else:
            out.append(_Leaf(f"{prefix}{name}", info, base, optional))
    return out


def build_sections(
    settings: Settings,
    live: Callable[[str], bool],
    submitted: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
) -> list[FormSection]:
    """The form for ``settings`` (or for what was ``submitted``, with ``errors``), by section."""
    builder = _Builder(live, submitted or {}, errors or {})
    builder.walk(type(settings), settings.model_dump(), "")
    return builder.sections


@dataclass
class _Builder:
    live: Callable[[str], bool]
    submitted: Mapping[str, str]
    errors: Mapping[str, str]
    sections: list[FormSection] = field(default_factory=list)

    def walk(self, model: type[BaseModel], data: Mapping[str, Any], prefix: str) -> None:
        fields: list[FormField] = []
        nested: list[tuple[str, type[BaseModel]]] = []
        for name, info in model.model_fields.items():
            base, optional = _unwrap(info.annotation)
            if _is_model(base) and not optional:
                nested.append((name, base))
            else:
                leaf = _Leaf(f"{prefix}{name}", info, base, optional)
                fields.append(self.field(leaf, data[name]))
        if fields:
            path = prefix.rstrip(".")
            title = " / ".join(_title(part) for part in path.split(".")) if path else "General"
            self.sections.append(FormSection(path, title, tuple(fields)))
        for name, sub in nested:
            self.walk(sub, data[name], f"{prefix}{name}.")

    def field(self, leaf: _Leaf, current: Any) -> FormField:
        low, high, max_length = _bounds(leaf.info)
        return FormField(
            key=leaf.key,
            label=leaf.info.title or _title(leaf.key.rsplit(".", 1)[-1]),
            kind=_kind(leaf.base),
            value=self.submitted.get(leaf.key, as_text(current)),
            help=leaf.info.description or "",
            choices=_choices(leaf.base),
            minimum=low,
            maximum=high,
            max_length=max_length,
            optional=leaf.optional,
            live=self.live(leaf.key),
            error=self.errors.get(leaf.key),
        )


def field_keys(settings: Settings) -> set[str]:
    return {leaf.key for leaf in leaves(type(settings))}


# ---- reading a POST -----------------------------------------------------------------------


def parse_form(
    settings: Settings, form: Mapping[str, list[str]]
) -> tuple[Settings | None, dict[str, str], dict[str, str]]:
    """(new settings or None, errors by key, the submitted values by key, for redisplay).

    ``form`` maps each name to all its values (a checkbox sends a hidden
    "false" and, when ticked, "true": the last one counts).
    """
    changes: dict[str, Any] = {}
    errors: dict[str, str] = {}
    submitted: dict[str, str] = {}
    for leaf in leaves(type(settings)):
        values = form.get(leaf.key)
        kind = _kind(leaf.base)
        if not values or kind == "readonly":
            continue
        raw = values[-1].strip()
        submitted[leaf.key] = raw
        try:
            _set(changes, leaf.key, _convert(kind, raw, leaf.optional))
        except ValueError as exc:
            errors[leaf.key] = str(exc)
    if errors:
        return None, errors, submitted
    try:
        return updated(settings, changes), {}, submitted
    except ConfigError as exc:
        return None, _field_errors(exc), submitted


def _convert(kind: Kind, raw: str, optional: bool) -> Any:
    if optional and raw == "":
        return None
    if kind == "checkbox":
        if raw not in ("true", "false"):
            raise ValueError("tick or untick the box")
        return raw == "true"
    if kind == "int":  # ASCII digits only: not "1_6", "+5" or "١٦", which int() takes
        if not INT_RE.match(raw):
            raise ValueError("enter a whole number (digits 0-9)")
        return int(raw)
    if kind == "float":  # ASCII decimal notation only: not "1_0", "nan" or "inf"
        if not (INT_RE.match(raw) or FLOAT_RE.match(raw)):
            raise ValueError("enter a number (digits 0-9 and a decimal point)")
        number = float(raw)
        if not math.isfinite(number):
            raise ValueError("enter a number (digits 0-9 and a decimal point)")
        return number
    return raw


def _set(tree: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[last] = value


def _field_errors(exc: ConfigError) -> dict[str, str]:
    cause = exc.__cause__
    if not isinstance(cause, ValidationError):
        return {FORM_ERROR: str(exc)}
    errors: dict[str, str] = {}
    for err in cause.errors():
        key = ".".join(str(p) for p in err["loc"]) or FORM_ERROR
        message = str(err["msg"]).removeprefix("Value error, ")
        errors.setdefault(key, message)
    return errors
