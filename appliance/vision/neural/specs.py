"""What each neural swapper expects: crop size and template, input scaling, source, output.

From ARCHITECTURE.md "Neural swappers provisioned by installers (contract
facts)"; the 256 px models' template (ArcFace 112 v1) is the one FaceFusion
cuts their crops with. The ``source`` modes:

- ``emap``: normalised ArcFace embedding times the emap, L2-normalised (inswapper);
- ``converted_normalised``: through the embedding converter, L2-normalised (SimSwap);
- ``converted``: through the embedding converter as it comes out (GHOST).

The converter is an optional ONNX file beside the model (``<stem>.converter.onnx``,
input [1,512], output [1,512]); when the bundle has none, the ArcFace
embedding goes in unchanged (the identity converter) -- an assumption the
contract leaves open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from appliance.vision.neural.align import Template

SourceMode = Literal["emap", "converted_normalised", "converted"]

TARGET_INPUT = "target"
SOURCE_INPUT = "source"
EMBEDDING_SIZE = 512


@dataclass(frozen=True)
class SwapperSpec:
    name: str
    size: int
    template: Template
    mean: tuple[float, float, float]  # RGB, on x / 255
    std: tuple[float, float, float]
    source: SourceMode
    output_signed: bool  # output in [-1, 1] (else [0, 1])


SPECS: dict[str, SwapperSpec] = {
    "inswapper_128": SwapperSpec(
        "inswapper_128", 128, "arcface_128", (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), "emap", False
    ),
    "simswap_256": SwapperSpec(
        "simswap_256",
        256,
        "arcface_112_v1",
        (0.485, 0.456, 0.406),
        (0.229, 0.224, 0.225),
        "converted_normalised",
        False,
    ),
    "ghost_256": SwapperSpec(
        "ghost_256", 256, "arcface_112_v1", (0.5, 0.5, 0.5), (0.5, 0.5, 0.5), "converted", True
    ),
}
