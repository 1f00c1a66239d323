"""The neural swapper: align, generate, paste back; fp32 then geometric when it fails.

Per face: the five-point alignment of the visitor's landmarks cuts the
model's crop, the network swaps in the identity's ``source`` (computed once
per identity), and the result is pasted back through the inverse affine.

When a network returns NaN or a flat (black) square -- fp16 engines do on
some GPUs -- or fails to run, the swapper switches for good to the next
stage: the fp32 variant when one is provisioned, then the geometric swapper.
Each switch is recorded (``record_fallback``) with its reason and logged
once, and the frame at hand is swapped by the next stage, so a black square
never reaches the screen. An unusable identity embedding goes straight to
the geometric swapper: another generator would not help.

It is a ``GeometricSwapper`` (its settings, signature and final fallback):
``target`` and ``colour`` are used only once it has fallen back to it; the
network itself follows the visitor's expression, so the visitor's own eyes
and mouth need no holes in its mask.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from appliance.config import SwapSettings
from appliance.errors import BackendError, ModelError
from appliance.inference.fallbacks import record_fallback
from appliance.timing import add_stage_ms
from appliance.vision.blend import ColourMemory
from appliance.vision.identity import Identity
from appliance.vision.neural.align import alignment, warp_crop
from appliance.vision.neural.generator import Generator, Image
from appliance.vision.neural.output_check import BadOutputError, EmbeddingError
from appliance.vision.neural.paste import paste_back
from appliance.vision.neural.source import SourceEncoder
from appliance.vision.swap_geometric import GeometricSwapper
from appliance.vision.types import FaceLandmarks, FloatArray

logger = logging.getLogger(__name__)

GEOMETRIC = "geometric"

Loader = Callable[[], Generator]


class NeuralSwapper(GeometricSwapper):
    """Swaps faces with a provisioned network; falls back stage by stage, never to black."""

    def __init__(
        self,
        settings: SwapSettings,
        generator: Generator,
        source: SourceEncoder,
        fallbacks: list[tuple[str, Loader]] | None = None,
    ) -> None:
        """``fallbacks``: (label, loader) of the generators to try, in order, when one fails."""
        super().__init__(settings)
        self.spec = generator.spec
        self.name = generator.spec.name
        self.source = source
        self._generator: Generator | None = generator
        self._pending = list(fallbacks or [])
        self._lock = threading.Lock()

    @property
    def active(self) -> str:
        """What swaps now: the generator's label, or ``geometric``."""
        generator = self._generator
        return GEOMETRIC if generator is None else generator.label

    def swap(
        self,
        frame: Image,
        face: FaceLandmarks,
        identity: Identity,
        timings_ms: dict[str, float] | None = None,
        *,
        strength: float = 1.0,
        target: FloatArray | None = None,
        colour: ColourMemory | None = None,
        own_eyes: tuple[float, float] | None = None,
    ) -> bool:
        """Swap one face in place; False when nothing was changed (face off the frame).

        ``target``, ``colour`` and ``own_eyes`` serve the geometric fallback only.
        """
        timings = {} if timings_ms is None else timings_ms
        while (generator := self._generator) is not None:
            try:
                source = self.source.source(identity)
            except (EmbeddingError, BackendError) as exc:
                self._give_up(str(exc))
                break
            try:
                return self._swap_with(
                    generator, frame, face, source, timings=timings, strength=strength
                )
            except (BadOutputError, BackendError) as exc:
                self._fall_back(generator, str(exc))
        return super().swap(
            frame,
            face,
            identity,
            timings,
            strength=strength,
            target=target,
            colour=colour,
            own_eyes=own_eyes,
        )

    def _swap_with(
        self,
        generator: Generator,
        frame: Image,
        face: FaceLandmarks,
        source: FloatArray,
        *,
        timings: dict[str, float],
        strength: float,
    ) -> bool:
        start = time.perf_counter()
        size = generator.spec.size
        matrix = alignment(face.points, generator.spec.template, size)
        swapped = generator.swap_crop(warp_crop(frame, matrix, size), source)
        middle = add_stage_ms(timings, "warp", start)
        changed = paste_back(
            frame,
            swapped,
            matrix,
            face.xy,
            feather_fraction=self.settings.feather_fraction,
            strength=strength,
            keep_occluders=self.settings.keep_occluders,
        )
        add_stage_ms(timings, "blend", middle)
        return changed

    def _fall_back(self, failed: Generator, reason: str) -> None:
        """Move past ``failed`` (once, whichever thread sees it first) to the next stage."""
        with self._lock:
            if self._generator is not failed:
                return
            wanted, why = failed.label, reason
            self._generator = None
            while self._pending:
                label, load = self._pending.pop(0)
                try:
                    generator = load()
                except (ModelError, BackendError) as exc:
                    record_fallback(self.name, wanted, label, why)
                    wanted, why = label, f"cannot load it: {exc}"
                    continue
                record_fallback(self.name, wanted, label, why)
                self._generator = generator
                return
            record_fallback(self.name, wanted, GEOMETRIC, why)

    def _give_up(self, reason: str) -> None:
        with self._lock:
            generator = self._generator
            if generator is None:
                return
            self._generator = None
            self._pending.clear()
            record_fallback(self.name, generator.label, GEOMETRIC, reason)
