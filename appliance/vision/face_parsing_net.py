"""The BiSeNet face-parsing network (zllrunning/face-parsing.PyTorch) as an ONNX graph.

Built from the checkpoint's weights (``torch_legacy``) with each batch norm folded
into the convolution before it. Only the main head is kept (the two auxiliary
heads serve training): the output is the 19 class logits at an eighth of the
input's resolution, upsampled by the caller. The layout follows the original
``model.py`` and ``resnet.py``: a ResNet-18, attention refinement on its 1/16
and 1/32 features plus the global average, a feature fusion with the 1/8
features, a 3x3 then 1x1 classifier.
"""

from __future__ import annotations

import logging

import numpy as np

from appliance.errors import ModelError
from appliance.vision.onnx_proto import Graph
from appliance.vision.torch_legacy import Weights

logger = logging.getLogger(__name__)

CLASSES = 19
INPUT_SIDE = 512
STRIDE = 8  # the logits' resolution: the input's over this
BN_EPS = 1e-5


class _Builder:
    def __init__(self, weights: Weights) -> None:
        self.w = weights
        self.g = Graph("bisenet_face_parsing")

    def conv(self, x: str, prefix: str, bn: str | None, stride: int = 1, relu: bool = True) -> str:
        """Conv ``prefix``.weight (no bias), then batch norm ``bn`` folded in, then ReLU."""
        kernel = self.w[f"{prefix}.weight"].astype(np.float64)
        bias = np.zeros(kernel.shape[0], np.float64)
        if bn is not None:
            gain = self.w[f"{bn}.weight"] / np.sqrt(self.w[f"{bn}.running_var"] + BN_EPS)
            kernel = kernel * gain[:, None, None, None]
            bias = self.w[f"{bn}.bias"] - self.w[f"{bn}.running_mean"] * gain
        k = kernel.shape[-1]
        inputs = [x, self.g.constant(kernel.astype(np.float32))]
        inputs.append(self.g.constant(bias.astype(np.float32)))
        pad = (k // 2,) * 4
        out = self.g.node("Conv", inputs, kernel_shape=(k, k), strides=(stride, stride), pads=pad)
        return self.g.node("Relu", [out]) if relu else out

    def conv_bn_relu(self, x: str, prefix: str, stride: int = 1) -> str:
        return self.conv(x, f"{prefix}.conv", f"{prefix}.bn", stride)

    def block(self, x: str, prefix: str, stride: int) -> str:
        r = self.conv(x, f"{prefix}.conv1", f"{prefix}.bn1", stride)
        r = self.conv(r, f"{prefix}.conv2", f"{prefix}.bn2", relu=False)
        shortcut = x
        if f"{prefix}.downsample.0.weight" in self.w:
            shortcut = self.conv(
                x, f"{prefix}.downsample.0", f"{prefix}.downsample.1", stride, relu=False
            )
        return self.g.node("Relu", [self.g.node("Add", [shortcut, r])])

    def resnet(self, x: str) -> tuple[str, str, str]:
        p = "cp.resnet"
        x = self.conv(x, f"{p}.conv1", f"{p}.bn1", stride=2)
        x = self.g.node("MaxPool", [x], kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
        feats = []
        for layer in (1, 2, 3, 4):
            for index in (0, 1):
                stride = 2 if layer > 1 and index == 0 else 1
                x = self.block(x, f"{p}.layer{layer}.{index}", stride)
            feats.append(x)
        return feats[1], feats[2], feats[3]

    def attention(self, x: str, prefix: str) -> str:
        """The attention refinement module: features times a sigmoid of their average."""
        feat = self.conv_bn_relu(x, f"{prefix}.conv")
        atten = self.g.node("GlobalAveragePool", [feat])
        atten = self.conv(atten, f"{prefix}.conv_atten", f"{prefix}.bn_atten", relu=False)
        return self.g.node("Mul", [feat, self.g.node("Sigmoid", [atten])])

    def twice(self, x: str) -> str:
        scales = self.g.constant(np.array([1, 1, 2, 2], np.float32))
        return self.g.node(
            "Resize",
            [x, "", scales],
            mode="nearest",
            coordinate_transformation_mode="asymmetric",
            nearest_mode="floor",
        )

    def network(self, x: str) -> str:
        feat8, feat16, feat32 = self.resnet(x)
        avg = self.conv_bn_relu(self.g.node("GlobalAveragePool", [feat32]), "cp.conv_avg")
        up32 = self.g.node("Add", [self.attention(feat32, "cp.arm32"), avg])
        up32 = self.conv_bn_relu(self.twice(up32), "cp.conv_head32")
        up16 = self.g.node("Add", [self.attention(feat16, "cp.arm16"), up32])
        cp8 = self.conv_bn_relu(self.twice(up16), "cp.conv_head16")
        fused = self.conv_bn_relu(self.g.node("Concat", [feat8, cp8], axis=1), "ffm.convblk")
        atten = self.g.node("GlobalAveragePool", [fused])
        atten = self.conv(atten, "ffm.conv1", None)
        atten = self.g.node("Sigmoid", [self.conv(atten, "ffm.conv2", None, relu=False)])
        fused = self.g.node("Add", [self.g.node("Mul", [fused, atten]), fused])
        head = self.conv_bn_relu(fused, "conv_out.conv")
        return self.conv(head, "conv_out.conv_out", None, relu=False)


def face_parsing_onnx(weights: Weights, side: int = INPUT_SIDE) -> bytes:
    """The network of ``weights`` as ONNX bytes: input ``image`` [1, 3, side, side]
    (RGB, ImageNet mean and spread), output [1, 19, side / 8, side / 8] logits."""
    try:
        builder = _Builder(weights)
        logits = builder.network("image")
    except KeyError as exc:
        raise ModelError(f"not the BiSeNet face-parsing weights: no tensor {exc}") from exc
    out = side // STRIDE
    return builder.g.model_bytes("image", (1, 3, side, side), logits, (1, CLASSES, out, out))
