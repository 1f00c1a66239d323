"""Inference backends behind one narrow protocol."""

from appliance.inference.base import Backend, Model, TensorSpec

__all__ = ["Backend", "Model", "TensorSpec"]
