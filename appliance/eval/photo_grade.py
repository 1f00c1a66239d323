"""Grade an identity photo by what its swap will look like (the ``result`` check).

``mirror identity check`` and the admin page's upload grade a photo by its own
measures (``appliance.vision.identity_check``); this grades the swap it makes.
The enrolled identity is swapped onto the demo views of the upload's previews
(the astronaut and Grace Hopper, each frontal and redrawn with the head
turned both ways, ``appliance.control.enrollment.demo_views``) by the
enroller's own small processor, and each render is measured against its
unswapped view as ``mirror eval`` measures a clip's frames (on the mesh the
swap drew, ``drawn``), the AI label's box left out:

- the fill step (``seams``): a colour line down the midline or round the part
  of the face a turned photo's completion filled: a seam;
- the coverage (``coverage``): the share of the face the identity covers; the
  rest shows the visitor's own skin (a half-face);
- the texture stretch (``artefacts``): the photo's pixels smeared over a cheek
  the photo saw edge-on;
- the shading mismatch (``artefacts``): measured and reported, not graded.

A render over a bound has a problem. ``refused`` when a problem shows on every
frontal render (every visitor facing the camera would see it), ``usable`` with
a plain warning naming what would show and where when it shows on some
renders (the turned ones, as a rule), else ``good``.

Bounds, per render (the figures behind them are in the README; calibrated on
the shared portraits, frame 265 of ``expressive_woman.mp4`` (turned 22°) and
its mirror image, and identities made worse by hand, looking at every render):

- fill step over ``MAX_FILL_STEP`` (4.0): ``mirror eval``'s 3.0 is for a
  clip's mean; one render of a frontal photo measured up to 3.4 (the painting's
  painted nose shadow; 7.2 on a turned render, where it does read as a line),
  half the texture 30 % darker 5.0-13.3 facing the camera, 15 % darker 1.1-5.2;
- coverage under ``MIN_COVERAGE`` (0.98): frontal photos measured 0.991-1.0 on
  every render, the turned frame and its mirror image 0.933-0.991 (hair over
  the near temple, the visitor's own glasses showing beside the eye), half the
  texture transparent 0.30-0.85;
- stretch over ``MAX_STRETCH`` (3.0 frontal, 3.5 turned): the photo's pixels
  are stretched by the expression and, on a turned render, by the visitor's
  turn itself (Grace Hopper's own photo: 1.1-1.8 frontal, 1.7-2.2 turned), so
  ``mirror eval``'s 2.0 would flag frontal portraits that look right; the
  shared photos measured up to 2.86 frontal (the frowning turned frame) and
  3.21 turned, a face squeezed to half its width 2.9-3.2 and 2.8-3.8. No shared
  photo reaches these bounds: in the renders no smear was to be seen.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from appliance.config import Settings
from appliance.control.enrollment import DemoView, Enroller, Graded
from appliance.eval import artefacts, seams
from appliance.eval.coverage import coverage
from appliance.eval.drawn import DrawnMesh
from appliance.eval.regions import face_crops
from appliance.media.frames import Frame, Image
from appliance.modelstore import ModelStore
from appliance.pipeline.processor import FrameProcessor
from appliance.vision.identity import Identity
from appliance.vision.identity_check import Finding
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

CHECK = "result"
MAX_FILL_STEP = 4.0
MIN_COVERAGE = float(artefacts.THRESHOLDS["coverage"][0] or 0.98)
MAX_STRETCH = {True: 3.0, False: 3.5}  # frontal render, turned render

# what a person would see, per problem (on a frontal render, on a turned one)
SEEN = {
    "seam": ("a visible seam down the face",) * 2,
    "skin": ("part of the face would show the visitor's own skin",) * 2,
    "stretch": ("the face is stretched", "the far cheek is stretched"),
}
GOOD = "the swap looks right, facing the camera and turned"
NOT_SHOWN = "the swap could not be shown on the demo faces: check the previews"
BETTER = "a frontal, evenly lit photo with nothing covering the face works best"


@dataclass(frozen=True)
class RenderFigures:
    """What one render measured (None: not measurable; all None: no mesh was drawn)."""

    view: str
    frontal: bool
    swapped: bool  # the swap changed the frame
    stretch: float | None = None
    fill_step: float | None = None
    coverage: float | None = None
    shading: float | None = None

    @property
    def measured(self) -> bool:
        return self.coverage is not None or self.stretch is not None

    def problems(self) -> list[str]:
        """The ``SEEN`` keys of what this render shows wrong."""
        found = []
        if self.fill_step is not None and self.fill_step > MAX_FILL_STEP:
            found.append("seam")
        if self.coverage is not None and self.coverage < MIN_COVERAGE:
            found.append("skin")
        if self.stretch is not None and self.stretch > MAX_STRETCH[self.frontal]:
            found.append("stretch")
        return found

    def as_dict(self) -> dict[str, object]:
        return {
            "view": self.view,
            "frontal": self.frontal,
            "swapped": self.swapped,
            **{
                name: None if value is None else round(value, 3)
                for name, value in (
                    ("stretch", self.stretch),
                    ("fill_step", self.fill_step),
                    ("coverage", self.coverage),
                    ("shading", self.shading),
                )
            },
            "problems": self.problems(),
        }


class PhotoGrader:
    """Renders identities onto demo views with ``processor`` and grades the renders
    (the enroller's ``PreviewGrader``; it taps ``processor``'s swapper)."""

    def __init__(self, processor: FrameProcessor, views: Sequence[DemoView]) -> None:
        self.processor = processor
        self.views = tuple(views)
        self._drawn = DrawnMesh(processor.swapper)
        self.last: list[RenderFigures] = []  # the last grade's figures, view by view

    @classmethod
    def attach(cls, enroller: Enroller) -> PhotoGrader:
        """A grader on ``enroller``'s previewer and views, set as its grader."""
        grader = cls(enroller.previewer, enroller.views)
        enroller.grader = grader
        return grader

    def grade(self, identity: Identity) -> Graded:
        images, figures = self.render(identity)
        self.last = figures
        finding = verdict(figures)
        logger.info("identity %s on the demo faces: %s", identity.name, finding.message)
        return Graded(finding, tuple(images), measures(figures))

    def render(self, identity: Identity) -> tuple[list[Image], list[RenderFigures]]:
        """``identity`` swapped onto each view (labelled), and each render's figures."""
        images, figures = [], []
        edges = seams.fill_edges(identity)
        self.processor.identity = identity
        try:
            for view in self.views:
                self.processor.reset()
                self._drawn.take()
                frame = self.processor.process(Frame(view.image.copy(), 0, 0))
                tracks = self.processor.tracks
                drawn = self._drawn.take()
                if not frame.swapped:
                    logger.warning("%s: not swapped onto %s", identity.name, view.name)
                if not tracks or drawn is None:  # no face followed, or faded out: no mesh
                    figures.append(RenderFigures(view.name, view.frontal, False))
                else:  # measured even when the swap changed nothing (a transparent texture)
                    figures.append(
                        self._measure(
                            identity,
                            view=view,
                            swapped=frame.image,
                            visitor=tracks[0].landmarks.points,
                            drawn=drawn,
                            edges=edges,
                            changed=frame.swapped,
                        )
                    )
                images.append(frame.image)
        finally:
            self.processor.identity = None
        return images, figures

    def _measure(
        self,
        identity: Identity,
        *,
        view: DemoView,
        swapped: Image,
        visitor: FloatArray,
        drawn: FloatArray,
        edges: npt.NDArray[np.intp],
        changed: bool,
    ) -> RenderFigures:
        original = view.image
        label = self.processor.labeler.region(original.shape)
        step = seams.fill_step(original, swapped, drawn, edges, visitor=visitor, exclude=label)
        shading = artefacts.shading_mismatch(*face_crops(original, swapped, visitor, label))
        return RenderFigures(
            view.name,
            view.frontal,
            changed,
            stretch=artefacts.texture_stretch(identity, drawn),
            fill_step=step.figure,
            coverage=coverage(identity, drawn),
            shading=shading,
        )


def verdict(figures: Sequence[RenderFigures]) -> Finding:
    """The ``result`` finding from every render's figures."""
    shown = [f for f in figures if f.measured]
    frontal = [f for f in shown if f.frontal]
    worst = _worst(shown)
    if not frontal:
        return Finding(CHECK, "usable", NOT_SHOWN, worst)
    everywhere = [p for p in SEEN if all(p in f.problems() for f in frontal)]
    if everywhere:
        seen = _words([SEEN[p][0] for p in everywhere])
        text = f"even on visitors facing the camera, {seen}: {BETTER}"
        return Finding(CHECK, "refused", text, worst)
    somewhere = [f for f in shown if f.problems()]
    if somewhere:
        turned = not any(f.frontal for f in somewhere)
        found = {p for f in somewhere for p in f.problems()}
        seen = _words([SEEN[p][0 if not turned else 1] for p in SEEN if p in found])
        where = "on turned visitors" if turned else "on some visitors"
        text = f"{where}, {seen} (see the previews); {BETTER}"
        return Finding(CHECK, "usable", text, worst)
    return Finding(CHECK, "good", GOOD, worst)


def _worst(figures: Sequence[RenderFigures]) -> float | None:
    """The lowest coverage of the renders (the finding's value)."""
    values = [f.coverage for f in figures if f.coverage is not None]
    return min(values) if values else None


def _words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def measures(figures: Sequence[RenderFigures]) -> dict[str, float]:
    """The worst of each figure over the renders, frontal and turned apart."""
    out: dict[str, float] = {}
    for kind, frontal in (("frontal", True), ("turned", False)):
        group = [f for f in figures if f.measured and f.frontal == frontal]
        for name, pick in (("fill_step", max), ("stretch", max), ("shading", max)):
            values = [v for f in group if (v := getattr(f, name)) is not None]
            if values:
                out[f"result_{name}_{kind}"] = round(float(pick(values)), 3)
        cover = [f.coverage for f in group if f.coverage is not None]
        if cover:
            out[f"result_coverage_{kind}"] = round(float(min(cover)), 3)
    return out


def graded_enroller(settings: Settings, store: ModelStore) -> Enroller:
    """The upload's enroller with a ``PhotoGrader`` on it."""
    enroller = Enroller.from_store(settings, store)
    PhotoGrader.attach(enroller)
    return enroller
