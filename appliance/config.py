"""One validated settings model, loaded from and saved to a YAML file.

Settings are frozen pydantic models: stages receive them as explicit
arguments, and a new settings object is swapped in between frames.
A bad file or value raises :class:`ConfigError` naming the key and value;
saving is atomic, so the last good file survives any failure, and the admin
page's saves write only the keys changed (:func:`save_changes`).

Types are strict: a boolean only from a real boolean (YAML ``true``/``false``;
the web form turns its "true"/"false" into one), an integer only from an
integer (YAML ASCII digits, see :mod:`appliance.config_yaml`), never from a
string. Label and prompt texts must be visible (:mod:`appliance.label_text`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from appliance.config_yaml import load_config_yaml
from appliance.errors import ConfigError
from appliance.fileio import atomic_write_text
from appliance.label_text import DEFAULT_LABEL_TEXT, bundled_font_path, label_text_problem

logger = logging.getLogger(__name__)

LabelPosition = Literal["top-left", "top-right", "bottom-left", "bottom-right", "top", "bottom"]
LivenessMode = Literal["off", "blink", "turn", "either", "both"]


def _visible_text(text: str) -> str:
    """A label or prompt text that is sure to show (with the installed font, when there is one)."""
    problem = label_text_problem(text, bundled_font_path())
    if problem:
        raise ValueError(problem)
    return text


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class LabelSettings(_Frozen):
    text: str = Field(
        DEFAULT_LABEL_TEXT,
        min_length=1,
        max_length=64,
        description="Visible label on every frame that contains a swapped face.",
    )
    position: LabelPosition = Field("bottom-right", description="Where the label is drawn.")
    size_fraction: float = Field(
        0.06,
        ge=0.05,
        le=0.25,
        description="Label text height as a fraction of the frame's shorter side (>= 5%).",
    )

    @field_validator("text")
    @classmethod
    def _text_is_visible(cls, value: str) -> str:
        return _visible_text(value)


class SwapSettings(_Frozen):
    swapper: Literal["geometric", "inswapper_128", "simswap_256", "ghost_256"] = Field(
        "geometric",
        description=(
            "geometric: the embedded mesh warp; a neural swapper only when the installer "
            "provisioned it (else the geometric one, with the reason logged)."
        ),
    )
    eyes: Literal["identity", "blinks", "visitor"] = Field(
        "blinks",
        description=(
            "identity: the identity's eyes; blinks: the identity's, giving way to the "
            "visitor's own as they close (blinks and winks show); visitor: always the visitor's."
        ),
    )
    keep_mouth: bool = Field(True, description="Keep the visitor's inner mouth (speech shows).")
    blend: Literal["feather", "poisson"] = Field(
        "feather", description="feather: fast alpha blend; poisson: seamlessClone, slower."
    )
    color_match: bool = Field(True, description="Match the source skin colour to the visitor.")
    feather_fraction: float = Field(
        0.08, gt=0.0, le=0.3, description="Mask feather width as a fraction of face size."
    )
    keep_occluders: bool = Field(
        True, description="Leave what covers the face (a hand, a phone) in front of the swap."
    )
    shape_transfer: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description="How far the face takes the identity's proportions (0: the visitor's shape).",
    )


class DetectorSettings(_Frozen):
    model: Literal["short", "full"] = Field(
        "short", description="short: near faces (BlazeFace short range); full: far/small faces."
    )
    min_score: float = Field(0.5, gt=0.0, lt=1.0, description="Detection score threshold.")
    max_faces: int = Field(4, ge=1, le=16, description="At most this many faces per frame.")
    landmarks: Literal["auto", "full", "light"] = Field(
        "auto",
        description="auto: the full landmark model, the light one (FaceMesh v1 + iris) for small"
        " faces, for 3 or more faces on two CPUs (which also take turns: one face's landmarks"
        " a frame, each every third frame), on one CPU and on the degrade ladder; full: never"
        " the light one; light: always.",
    )


class PipelineSettings(_Frozen):
    latency_budget_ms: float = Field(
        200.0,
        gt=0.0,
        le=30000.0,  # an emulated CPU (the image's boot test under QEMU) takes seconds a frame
        description="A frame older than this is never shown.",
    )
    redetect_every: int = Field(
        5, ge=1, le=60, description="Frames between full face detections while tracking."
    )
    faces: Literal["largest", "all"] = Field(
        "largest", description="largest: swap the largest face; all: up to max_faces faces."
    )
    max_faces: int = Field(3, ge=1, le=16, description="Faces swapped with faces=all.")
    target_fps: float = Field(
        30.0, gt=0.0, le=240.0, description="Output rate to hold; below it quality steps down."
    )
    adaptive: bool = Field(True, description="Step quality down (and back up) to hold the rate.")
    idle_after_s: float = Field(
        5.0, gt=0.0, le=3600.0, description="With no face for this long, process at idle_fps."
    )
    idle_fps: float = Field(15.0, gt=0.0, le=240.0, description="Processing rate when idle.")


class LivenessSettings(_Frozen):
    mode: LivenessMode = Field(
        "either",
        description=(
            "What a face must show before it is swapped: blink, turn (head turn), either, "
            "both; off swaps every face at once (photos too) and shows as a warning."
        ),
    )
    prompt: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description=(
            "Shown on unverified faces; none: by mode (blink and either: 'Blink to start', "
            "turn: 'Turn your head to start', both: 'Blink and turn your head to start')."
        ),
    )

    @field_validator("prompt")
    @classmethod
    def _prompt_is_visible(cls, value: str | None) -> str | None:
        return None if value is None else _visible_text(value)


class Settings(_Frozen):
    label: LabelSettings = Field(default_factory=LabelSettings)
    swap: SwapSettings = Field(default_factory=SwapSettings)
    detector: DetectorSettings = Field(default_factory=DetectorSettings)
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    liveness: LivenessSettings = Field(default_factory=LivenessSettings)


def _describe(exc: ValidationError, origin: str) -> str:
    parts = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        value = err.get("input")
        parts.append(f"{key}={value!r}: {err['msg']}")
    return f"invalid settings in {origin}: " + "; ".join(parts)


def settings_from_dict(data: dict[str, Any], origin: str = "settings") -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, origin)) from exc


def load_settings(path: Path, *, required: bool = False) -> Settings:
    """Load settings from ``path``; a missing file gives the defaults unless ``required``."""
    if not path.exists():
        if required:
            raise ConfigError(f"config file {path} not found")
        logger.info("no config at %s, using defaults", path)
        return Settings()
    data = load_config_yaml(path) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path} must be a mapping, not {type(data).__name__}")
    return settings_from_dict(data, str(path))


def save_settings(path: Path, settings: Settings) -> None:
    """Save every field atomically: on any failure the previous file stays as it was."""
    text = yaml.safe_dump(settings.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    atomic_write_text(path, text, mode=0o600)


def save_changes(path: Path, settings: Settings, keys: Iterable[str]) -> None:
    """Write the dotted ``keys`` of ``settings`` into the file at ``path`` and keep the rest
    of the file as it is, atomically.

    The file holds only what someone chose, never a value the mirror filled in (a field's
    default, the hardware profile's rate): a later change of profile or of a default still
    reaches every field nobody set. A file that no longer reads is left as it was
    (``ConfigError``), as on a failed write (``OutputError``).
    """
    data = _file_data(path)
    current = settings.model_dump(mode="json")
    for key in keys:
        _put(data, key, _get(current, key))
    chosen = settings_from_dict(data, str(path)).model_dump(mode="json", exclude_unset=True)
    text = yaml.safe_dump(chosen, sort_keys=False, allow_unicode=True) if chosen else "{}\n"
    atomic_write_text(path, text, mode=0o600)


def _file_data(path: Path) -> dict[str, Any]:
    """The settings file's mapping as it stands ({} without a file)."""
    if not path.exists():
        return {}
    data = load_config_yaml(path) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path} must be a mapping, not {type(data).__name__}")
    return data


def _get(tree: dict[str, Any], key: str) -> Any:
    for part in key.split("."):
        tree = tree[part]
    return tree


def _put(tree: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        child = tree.get(part)
        if not isinstance(child, dict):
            child = tree[part] = {}
        tree = child
    tree[last] = value


def updated(settings: Settings, changes: dict[str, Any]) -> Settings:
    """A copy of ``settings`` with nested ``changes`` applied and re-validated."""
    merged = _deep_merge(settings.model_dump(mode="json"), changes)
    return settings_from_dict(merged, "update")


def _deep_merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
