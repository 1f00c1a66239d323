"""The neural swapper path with tiny ONNX models that have the real names and shapes.

The models are generated here (never stored in the repo): an embedder
[1,3,112,112] -> [1,512]; swappers with ``target`` [1,3,S,S] and ``source``
[1,512] -> ``output`` [1,3,S,S] whose last initializer is a 512x512 emap;
variants that return NaN or a black square. Faces are real photos.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from appliance.config import Settings, updated
from appliance.errors import BackendFallbackWarning, ModelHashError
from appliance.inference.base import Model, TensorSpec
from appliance.inference.fallbacks import clear_fallbacks, fallbacks
from appliance.inference.onnx_backend import OnnxBackend
from appliance.modelstore import ModelStore, ProvidedEntry, load_manifest
from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.manifest import ProvidedFile
from appliance.pipeline.factory import build_processor
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.identity import Identity, enroll
from appliance.vision.mesh import FACE_OVAL
from appliance.vision.neural import build_swapper, extract_emap, provision_neural
from appliance.vision.neural.align import (
    ARCFACE_112_V2,
    alignment,
    apply,
    five_points,
    template,
    warp_crop,
)
from appliance.vision.neural.emap import emap_path, load_emap
from appliance.vision.neural.embedder import ArcFaceEmbedder
from appliance.vision.neural.generator import Generator
from appliance.vision.neural.source import SourceEncoder
from appliance.vision.neural.specs import SPECS
from appliance.vision.neural.swapper import NeuralSwapper
from appliance.vision.swap_geometric import GeometricSwapper
from appliance.vision.types import FaceLandmarks

Image = npt.NDArray[np.uint8]
OPSET = 17
CPU = OnnxBackend(("cpu",))


# --- tiny models -------------------------------------------------------------


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _const(name: str, value: npt.ArrayLike) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def make_embedder(path: Path, *, nan: bool = False) -> Path:
    """[1,3,112,112] -> 16x16 average pool -> flatten -> MatMul -> [1,512]."""
    rng = np.random.default_rng(1)
    inits = [_const("w", rng.normal(size=(147, 512)) * 0.1)]
    nodes = [
        helper.make_node(
            "AveragePool", ["input.1"], ["pooled"], kernel_shape=[16, 16], strides=[16, 16]
        ),
        helper.make_node("Flatten", ["pooled"], ["flat"]),
        helper.make_node("MatMul", ["flat", "w"], ["683" if not nan else "emb"]),
    ]
    if nan:
        inits += [_const("zero", 0.0)]
        nodes += [
            helper.make_node("Mul", ["emb", "zero"], ["nil"]),
            helper.make_node("Div", ["nil", "zero"], ["683"]),
        ]
    graph = helper.make_graph(
        nodes,
        "embedder",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, 112, 112])],
        [helper.make_tensor_value_info("683", TensorProto.FLOAT, [1, 512])],
        inits,
    )
    return _save(graph, path)


def make_swapper(path: Path, size: int, behaviour: str = "ok", *, signed: bool = False) -> Path:
    """``target`` [1,3,S,S], ``source`` [1,512] -> ``output``: half the target, half a colour
    from the source (so the swap shows); ``nan``: 0/0; ``black``: zeros. The last
    initializer is the 512x512 emap, as in inswapper_128."""
    rng = np.random.default_rng(2)
    squash = "Tanh" if signed else "Sigmoid"
    inits = [
        _const("p", rng.normal(size=(512, 3)) * 3.0),
        numpy_helper.from_array(np.array([1, 3, 1, 1], np.int64), "shape"),
        _const("half", 0.5),
        _const("zero", 0.0),
    ]
    nodes = [
        helper.make_node("MatMul", ["source", "p"], ["colour"]),
        helper.make_node(squash, ["colour"], ["squashed"]),
        helper.make_node("Reshape", ["squashed", "shape"], ["tint"]),
        helper.make_node("Mul", ["target", "half"], ["kept"]),
        helper.make_node("Mul", ["tint", "half"], ["added"]),
        helper.make_node("Add", ["kept", "added"], ["mixed"]),
    ]
    if behaviour == "ok":
        nodes.append(helper.make_node("Identity", ["mixed"], ["output"]))
    elif behaviour == "black":
        nodes.append(helper.make_node("Mul", ["mixed", "zero"], ["output"]))
    else:
        nodes += [
            helper.make_node("Mul", ["mixed", "zero"], ["nil"]),
            helper.make_node("Div", ["nil", "zero"], ["output"]),
        ]
    inits.append(_const("emap", rng.normal(size=(512, 512)) / np.sqrt(512)))
    graph = helper.make_graph(
        nodes,
        "swapper",
        [
            helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 3, size, size]),
            helper.make_tensor_value_info("source", TensorProto.FLOAT, [1, 512]),
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, size, size])],
        inits,
    )
    return _save(graph, path)


def make_converter(path: Path) -> Path:
    rng = np.random.default_rng(3)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["input", "m"], ["output"])],
        "converter",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 512])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 512])],
        [_const("m", rng.normal(size=(512, 512)) / np.sqrt(512))],
    )
    return _save(graph, path)


class Counting:
    """A model that counts its runs (the ``Model`` protocol, delegating)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.path = model.path
        self.backend_name = model.backend_name
        self.runs = 0

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.model.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.model.outputs

    def run(self, feeds: Sequence[npt.NDArray[np.float32]]) -> list[npt.NDArray[np.float32]]:
        self.runs += 1
        return self.model.run(feeds)

    def close(self) -> None:
        self.model.close()


# --- fixtures ------------------------------------------------------------------


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("tiny_models")
    return {
        "embedder": make_embedder(d / "w600k_r50.onnx"),
        "embedder_nan": make_embedder(d / "embedder_nan.onnx", nan=True),
        "ok": make_swapper(d / "inswapper_128.onnx", 128),
        "nan": make_swapper(d / "nan.onnx", 128, "nan"),
        "black": make_swapper(d / "black.onnx", 128, "black"),
        "simswap": make_swapper(d / "simswap_256.onnx", 256),
        "ghost": make_swapper(d / "ghost_256.onnx", 256, signed=True),
        "converter": make_converter(d / "simswap_256.converter.onnx"),
    }


@pytest.fixture(scope="module")
def visitor(analyzer: FaceAnalyzer, astronaut: Image) -> FaceLandmarks:
    return analyzer.analyze(astronaut)[0]


@pytest.fixture(scope="module")
def identity(analyzer: FaceAnalyzer, grace_hopper: Image) -> Identity:
    return enroll(grace_hopper, analyzer, name="grace_hopper")


@pytest.fixture(autouse=True)
def _fresh_fallbacks() -> None:
    clear_fallbacks()


def inswapper(models: dict[str, Path], swap: str = "ok", *fp32: str) -> NeuralSwapper:
    spec = SPECS["inswapper_128"]
    emap = load_emap(extract_emap(models["ok"], models["ok"].parent / "emap.npy"))
    source = SourceEncoder(ArcFaceEmbedder(CPU.load(models["embedder"])), spec, emap=emap)
    stages = [
        (f"fp32 {kind}", lambda kind=kind: Generator(CPU.load(models[kind]), spec, f"fp32 {kind}"))
        for kind in fp32
    ]
    return NeuralSwapper(
        Settings().swap, Generator(CPU.load(models[swap]), spec, swap), source, stages
    )


def oval_mask(face: FaceLandmarks, shape: tuple[int, ...], grow_px: int) -> npt.NDArray[np.bool_]:
    mask = np.zeros(shape[:2], np.uint8)
    cv2.fillPoly(mask, [np.round(face.xy[list(FACE_OVAL)]).astype(np.int32)], 255)
    kernel = np.ones((2 * abs(grow_px) + 1,) * 2, np.uint8)
    grown = cv2.dilate(mask, kernel) if grow_px > 0 else cv2.erode(mask, kernel)
    return np.asarray(grown > 0)


def assert_only_face_changed(before: Image, after: Image, face: FaceLandmarks) -> None:
    changed = np.any(after != before, axis=2)
    assert not np.any(changed & ~oval_mask(face, before.shape, 3)), (
        "pixels outside the face changed"
    )
    assert changed[oval_mask(face, before.shape, -9)].mean() > 0.6, "the face hardly changed"


# --- alignment -------------------------------------------------------------------


def test_templates_follow_insightface() -> None:
    assert np.allclose(template("arcface_112_v2", 112), ARCFACE_112_V2)
    assert np.allclose(template("arcface_128", 128), ARCFACE_112_V2 + np.array([8.0, 0.0]))
    assert np.allclose(template("arcface_112_v2", 224), ARCFACE_112_V2 * 2)


def test_five_point_alignment_puts_the_eyes_on_the_template(
    analyzer: FaceAnalyzer, visitor: FaceLandmarks, astronaut: Image
) -> None:
    points = five_points(visitor.points)
    assert points[0, 0] < points[1, 0] and points[3, 0] < points[4, 0], "image order: left first"
    matrix = alignment(visitor.points, "arcface_112_v2", 112)
    residual = np.linalg.norm(apply(matrix, points) - ARCFACE_112_V2, axis=1)
    assert residual[:3].max() < 4.0 and residual.max() < 8.0, residual  # she smiles: mouth wide
    # The crop itself: found again in the aligned image, its eyes are where the template says.
    crop = warp_crop(astronaut, alignment(visitor.points, "arcface_112_v2", 224), 224)
    found = analyzer.analyze(cv2.copyMakeBorder(crop, 64, 64, 64, 64, cv2.BORDER_CONSTANT))
    assert found, "no face in the aligned crop"
    eyes = five_points(found[0].points)[:2] - 64
    assert np.linalg.norm(eyes - template("arcface_112_v2", 224)[:2], axis=1).max() < 8.0


# --- embedding, swap, paste-back -------------------------------------------------------


def test_source_embedding_is_computed_once_per_identity(
    models: dict[str, Path], visitor: FaceLandmarks, identity: Identity, astronaut: Image
) -> None:
    spec = SPECS["inswapper_128"]
    counting = Counting(CPU.load(models["embedder"]))
    emap = load_emap(extract_emap(models["ok"], models["ok"].parent / "emap.npy"))
    source = SourceEncoder(ArcFaceEmbedder(counting), spec, emap=emap)
    swapper = NeuralSwapper(Settings().swap, Generator(CPU.load(models["ok"]), spec, "ok"), source)
    for _ in range(3):
        assert swapper.swap(astronaut.copy(), visitor, identity)
    assert counting.runs == 1
    vector = source.source(identity)
    assert vector.shape == (1, 512) and np.isclose(np.linalg.norm(vector), 1.0, atol=1e-4)
    other = Identity(
        "other",
        identity.texture[:, ::-1].copy(),
        identity.points,
        identity.triangles,
        identity.shape,
    )
    swapper.swap(astronaut.copy(), visitor, other)
    assert counting.runs == 2
    assert not np.allclose(source.source(other), vector)


def test_swap_and_paste_back_change_only_the_face(
    models: dict[str, Path], visitor: FaceLandmarks, identity: Identity, astronaut: Image
) -> None:
    frame = astronaut.copy()
    timings: dict[str, float] = {}
    assert inswapper(models).swap(frame, visitor, identity, timings)
    assert_only_face_changed(astronaut, frame, visitor)
    assert set(timings) == {"warp", "blend"}
    assert not fallbacks()


def test_strength_zero_changes_nothing(
    models: dict[str, Path], visitor: FaceLandmarks, identity: Identity, astronaut: Image
) -> None:
    frame = astronaut.copy()
    assert not inswapper(models).swap(frame, visitor, identity, strength=0.0)
    assert np.array_equal(frame, astronaut)


@pytest.mark.parametrize("name", ["simswap_256", "ghost_256"])
def test_256_swappers_with_and_without_converter(
    models: dict[str, Path],
    visitor: FaceLandmarks,
    identity: Identity,
    astronaut: Image,
    name: str,
) -> None:
    spec = SPECS[name]
    converter = CPU.load(models["converter"]) if name == "simswap_256" else None
    source = SourceEncoder(ArcFaceEmbedder(CPU.load(models["embedder"])), spec, converter=converter)
    kind = "simswap" if name == "simswap_256" else "ghost"
    swapper = NeuralSwapper(Settings().swap, Generator(CPU.load(models[kind]), spec, kind), source)
    frame = astronaut.copy()
    assert swapper.swap(frame, visitor, identity)
    assert_only_face_changed(astronaut, frame, visitor)
    normalised = np.isclose(np.linalg.norm(source.source(identity)), 1.0, atol=1e-4)
    assert normalised == (name == "simswap_256")  # ghost takes the converted embedding as is


# --- fallbacks -------------------------------------------------------------------------


def test_nan_model_falls_back_to_the_fp32_variant(
    models: dict[str, Path], visitor: FaceLandmarks, identity: Identity, astronaut: Image
) -> None:
    swapper = inswapper(models, "nan", "ok")
    frame = astronaut.copy()
    with pytest.warns(BackendFallbackWarning, match="NaN"):
        assert swapper.swap(frame, visitor, identity)
    assert swapper.active == "fp32 ok"
    [record] = fallbacks()
    assert (record.subject, record.wanted, record.used) == ("inswapper_128", "nan", "fp32 ok")
    assert "NaN" in record.reason
    reference = astronaut.copy()
    inswapper(models).swap(reference, visitor, identity)
    assert np.array_equal(frame, reference), "the failing frame is swapped by the fp32 model"
    assert swapper.swap(astronaut.copy(), visitor, identity)
    assert len(fallbacks()) == 1, "the switch happens once"


def test_nan_then_black_fp32_ends_on_the_geometric_swapper(
    models: dict[str, Path], visitor: FaceLandmarks, identity: Identity, astronaut: Image
) -> None:
    swapper = inswapper(models, "nan", "black")
    frame = astronaut.copy()
    with pytest.warns(BackendFallbackWarning):
        assert swapper.swap(frame, visitor, identity)
    assert swapper.active == "geometric"
    chain = [(f.wanted, f.used) for f in fallbacks()]
    assert chain == [("nan", "fp32 black"), ("fp32 black", "geometric")]
    assert "flat output" in fallbacks()[1].reason and "black square" in fallbacks()[1].reason
    reference = astronaut.copy()
    GeometricSwapper(Settings().swap).swap(reference, visitor, identity)
    assert np.array_equal(frame, reference), "the failing frame is swapped by the geometric one"
    assert_only_face_changed(astronaut, frame, visitor)


def test_nan_embedding_goes_straight_to_geometric(
    models: dict[str, Path], visitor: FaceLandmarks, identity: Identity, astronaut: Image
) -> None:
    spec = SPECS["inswapper_128"]
    emap = load_emap(extract_emap(models["ok"], models["ok"].parent / "emap.npy"))
    source = SourceEncoder(ArcFaceEmbedder(CPU.load(models["embedder_nan"])), spec, emap=emap)
    stages = [("fp32", lambda: Generator(CPU.load(models["ok"]), spec, "fp32"))]
    swapper = NeuralSwapper(
        Settings().swap, Generator(CPU.load(models["ok"]), spec, "ok"), source, stages
    )
    with pytest.warns(BackendFallbackWarning):
        assert swapper.swap(astronaut.copy(), visitor, identity)
    [record] = fallbacks()
    assert record.used == "geometric" and "arcface_w600k_r50" in record.reason


# --- provisioning, manifest, config ----------------------------------------------------


def test_emap_is_the_last_initializer(models: dict[str, Path], tmp_path: Path) -> None:
    written = extract_emap(models["ok"], tmp_path / "inswapper_128.emap.npy")
    last = onnx.load(str(models["ok"])).graph.initializer[-1]
    assert np.array_equal(np.load(written), numpy_helper.to_array(last))
    assert emap_path(Path("x/inswapper_128.onnx")) == Path("x/inswapper_128.emap.npy")


def test_manifest_declares_the_installer_models_with_licences() -> None:
    manifest = load_manifest()
    provided = manifest.provided
    assert set(provided) == {"arcface_w600k_r50", "inswapper_128", "simswap_256", "ghost_256"}
    assert not set(provided) & set(manifest.entries()), "`mirror models fetch` must skip them"
    assert provided["inswapper_128"].sha256 == (
        "e4a3f08c753cb72d04e10aa0f7dbe3deebbf39567d4ead6dce08e98aa49e16af"
    )
    assert provided["arcface_w600k_r50"].sha256 == (
        "4c06341c33c2ca1f86781dab0e829f88ad5b64be9fba56e56bc9ebdefc619e43"
    )
    for name in ("arcface_w600k_r50", "inswapper_128", "simswap_256"):
        assert provided[name].commercial_use == "no"
        assert "non-commercial" in provided[name].licence.lower()
    assert provided["inswapper_128"].emap


def _bundle_store(
    models: dict[str, Path], tmp_path: Path, *, pin_simswap: bool, inswapper: str = "ok"
) -> ModelStore:
    """A bundle of tiny models and a store whose manifest pins their hashes.

    ``inswapper``: the model provided as inswapper_128.onnx; when it is not the
    good one, the good one comes as its declared fp32 variant.
    """
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    names = {
        "w600k_r50.onnx": models["embedder"],
        "inswapper_128.onnx": models[inswapper],
        "inswapper_128.fp32.onnx": models["ok"],
        "simswap_256.onnx": models["simswap"],
        "simswap_256.converter.onnx": models["converter"],
    }
    for file, source in names.items():
        (bundle / file).write_bytes(source.read_bytes())
    real = load_manifest()
    provided = dict(real.provided)
    provided["arcface_w600k_r50"] = _pinned(provided["arcface_w600k_r50"], bundle)
    provided["inswapper_128"] = _pinned(provided["inswapper_128"], bundle)
    if inswapper != "ok":
        fp32 = ProvidedFile(
            file="inswapper_128.fp32.onnx", sha256=sha256_file(bundle / "inswapper_128.fp32.onnx")
        )
        provided["inswapper_128"] = provided["inswapper_128"].model_copy(update={"fp32": fp32})
    if pin_simswap:
        entry = _pinned(provided["simswap_256"], bundle)
        assert entry.converter is not None
        converter = entry.converter.model_copy(
            update={"sha256": sha256_file(bundle / entry.converter.file)}
        )
        provided["simswap_256"] = entry.model_copy(update={"converter": converter})
    manifest = real.model_copy(update={"provided": provided})
    return ModelStore(cache_dir=tmp_path / "models", manifest=manifest)


def _pinned(entry: ProvidedEntry, bundle: Path) -> ProvidedEntry:
    return entry.model_copy(update={"sha256": sha256_file(bundle / entry.file)})


def test_provisioned_bundle_gives_a_working_neural_swapper(
    models: dict[str, Path],
    tmp_path: Path,
    visitor: FaceLandmarks,
    identity: Identity,
    astronaut: Image,
) -> None:
    store = _bundle_store(models, tmp_path, pin_simswap=True)
    report = provision_neural(store, tmp_path / "bundle")
    assert "inswapper_128/model" in report.installed and "ghost_256/model" in report.not_in_bundle
    assert (store.cache_dir / "inswapper_128.emap.npy").exists()
    for name in ("inswapper_128", "simswap_256"):
        settings = updated(Settings(), {"swap": {"swapper": name}}).swap
        swapper = build_swapper(settings, store, backend=CPU)
        assert isinstance(swapper, NeuralSwapper), fallbacks()
        assert swapper.source.converter is not None or name == "inswapper_128"
        frame = astronaut.copy()
        assert swapper.swap(frame, visitor, identity)
        assert_only_face_changed(astronaut, frame, visitor)
    with pytest.warns(BackendFallbackWarning):
        ghost = build_swapper(updated(Settings(), {"swap": {"swapper": "ghost_256"}}).swap, store)
    assert type(ghost) is GeometricSwapper
    assert fallbacks()[-1].reason.startswith("ghost_256 not provisioned: run the installer bundle")


def test_declared_fp32_variant_takes_over_from_a_nan_model(
    models: dict[str, Path],
    tmp_path: Path,
    visitor: FaceLandmarks,
    identity: Identity,
    astronaut: Image,
) -> None:
    store = _bundle_store(models, tmp_path, pin_simswap=False, inswapper="nan")
    report = provision_neural(
        store, tmp_path / "bundle", names=["inswapper_128", "arcface_w600k_r50"]
    )
    assert "inswapper_128/fp32" in report.installed
    swapper = build_swapper(updated(Settings(), {"swap": {"swapper": "inswapper_128"}}).swap, store)
    assert isinstance(swapper, NeuralSwapper)
    frame = astronaut.copy()
    with pytest.warns(BackendFallbackWarning, match="NaN"):
        assert swapper.swap(frame, visitor, identity)
    assert swapper.active == "inswapper_128 fp32 variant on onnx-cpu"
    assert_only_face_changed(astronaut, frame, visitor)


def test_unpinned_hash_is_an_error_at_provisioning(models: dict[str, Path], tmp_path: Path) -> None:
    store = _bundle_store(models, tmp_path, pin_simswap=False)
    with pytest.raises(ModelHashError, match="pins no sha256") as info:
        provision_neural(store, tmp_path / "bundle", names=["simswap_256"])
    assert sha256_file(tmp_path / "bundle" / "simswap_256.onnx") in str(info.value)
    assert not (store.cache_dir / "simswap_256.onnx").exists()


def test_processor_uses_geometric_when_the_neural_swapper_is_not_provisioned(
    store: ModelStore, analyzer: FaceAnalyzer
) -> None:
    assert Settings().swap.swapper == "geometric"
    settings = updated(Settings(), {"swap": {"swapper": "inswapper_128"}})
    with pytest.warns(BackendFallbackWarning, match="not provisioned"):
        processor = build_processor(settings, store, "grace_hopper", analyzer=analyzer)
    assert type(processor.swapper) is GeometricSwapper
    [record] = fallbacks()
    assert record.subject == "inswapper_128" and record.used == "geometric"
    assert record.reason.startswith("inswapper_128 not provisioned: run the installer bundle")
