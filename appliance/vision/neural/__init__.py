"""Neural swappers provisioned by installers: inswapper_128, simswap_256, ghost_256.

align (five-point templates), embedder (ArcFace w600k_r50), source (the
per-identity source tensor), generator (one network on a crop), paste
(inverse affine, eroded and blurred mask), swapper (the fallback chain),
chooser (settings -> swapper), emap and provision (installer time).
"""

from appliance.vision.neural.chooser import build_swapper, load_neural
from appliance.vision.neural.emap import extract_emap
from appliance.vision.neural.provision import provision_neural
from appliance.vision.neural.swapper import NeuralSwapper

__all__ = ["NeuralSwapper", "build_swapper", "extract_emap", "load_neural", "provision_neural"]
