"""The one gpiozero pin factory of the process, chosen explicitly, or why there is none.

A Raspberry Pi 5 needs ``lgpio`` (the ``pi`` extra); on a Pi 4 gpiozero would
otherwise fall back to its ``native`` factory, which has no PWM (a fan would
never run). So lgpio is tried first when it can be imported, then RPi.GPIO,
pigpio and native. ``GPIOZERO_PIN_FACTORY`` in the environment (an
operator's choice, or ``mock`` for a demo) wins and is loaded by gpiozero
itself. The factory chosen becomes gpiozero's ``Device.pin_factory``, so the
panel and the fan share it. Where none loads, ONE warning says what to
install and the mirror runs without GPIO; gpiozero's own fallback warnings
and its "Unable to load any default pin factory!" are folded into it.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import threading
import warnings
from typing import Any

logger = logging.getLogger(__name__)

INSTALL_HINT = "install the `pi` extra (lgpio)"
NO_FACTORY = f"no GPIO pin factory: {INSTALL_HINT}"
NONE_OPENS = "no GPIO pin factory can open this device's GPIO"
ENV_FACTORY = "GPIOZERO_PIN_FACTORY"

# (name, the Python module it needs, gpiozero's class), best first.
CANDIDATES: tuple[tuple[str, str, str], ...] = (
    ("lgpio", "lgpio", "gpiozero.pins.lgpio:LGPIOFactory"),
    ("rpigpio", "RPi", "gpiozero.pins.rpigpio:RPiGPIOFactory"),
    ("pigpio", "pigpio", "gpiozero.pins.pigpio:PiGPIOFactory"),
    ("native", "gpiozero", "gpiozero.pins.native:NativeFactory"),
)

_lock = threading.Lock()
_warned = False


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, a broken package
        return False


def _build(entry: str) -> Any:
    module_name, class_name = entry.split(":")
    return getattr(importlib.import_module(module_name), class_name)()


def _first_that_loads() -> tuple[Any, list[str]]:
    """The first candidate whose module imports and whose factory opens, and why the others not."""
    tried: list[str] = []
    for name, module, entry in CANDIDATES:
        if not _importable(module):
            tried.append(f"{name}: {module} is not installed")
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # native's "prefer lgpio" note: said below
                return _build(entry), tried
        except Exception as exc:  # ImportError, gpiozero's errors, OSError on /dev/gpiochip*
            tried.append(f"{name}: {' '.join(str(exc).split())}")
    return None, tried


def _from_environment(device: Any) -> tuple[Any, list[str]]:
    name = os.environ[ENV_FACTORY]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            device.ensure_pin_factory()
        except Exception as exc:
            return None, [f"{ENV_FACTORY}={name}: {' '.join(str(exc).split())}"]
    return device.pin_factory, []


def _say_none(tried: list[str]) -> str:
    """Why there is no factory: what to install, unless lgpio is there and cannot open either."""
    global _warned
    reason = NONE_OPENS if _importable("lgpio") else NO_FACTORY
    with _lock:
        first, _warned = not _warned, True
    if first:
        logger.warning(
            "%s; the mirror runs without GPIO (LED, button, PIR, fan) (%s)",
            reason,
            "; ".join(tried) or "nothing tried",
        )
    return reason


def choose_pin_factory(injected: Any = None) -> tuple[Any, str]:
    """``(factory, its class name)``, or ``(None, why not)`` with one warning per process.

    An injected factory (tests: ``MockFactory``) is used as is; a factory gpiozero
    already has (chosen earlier in this process, or set by a test) is kept.
    """
    if injected is not None:
        return injected, type(injected).__name__
    try:
        from gpiozero import Device
    except ImportError as exc:
        return None, _say_none([f"gpiozero is not installed ({exc})"])
    with _lock:
        factory = Device.pin_factory
        tried: list[str] = []
        if factory is None:
            if ENV_FACTORY in os.environ:
                factory, tried = _from_environment(Device)
            else:
                factory, tried = _first_that_loads()
                Device.pin_factory = factory
    if factory is None:
        return None, _say_none(tried)
    name = type(factory).__name__
    if tried:
        logger.info("GPIO pin factory %s (%s)", name, "; ".join(tried))
    return factory, name
