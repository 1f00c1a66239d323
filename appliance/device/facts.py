"""What the probe saw on a device: plain, frozen facts that profiles are matched against."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NvidiaGpu(_Frozen):
    name: str = Field(description="GPU name, e.g. 'Tesla T4'.")
    memory_mb: int | None = Field(None, description="Total memory, when the source reports it.")
    source: str = Field(description="nvml, nvidia-smi or procfs.")


class CoralUsb(_Frozen):
    usb_id: str = Field(description="vendor:product, 1a6e:089a (no firmware yet) or 18d1:9302.")
    sysfs_name: str = Field(description="The device's name under /sys/bus/usb/devices.")


class HardwareFacts(_Frozen):
    root: str = Field(description="The root directory everything was read under.")
    arch: str = Field(description="CPU architecture (uname -m).")
    device_tree_model: str | None = Field(None, description="/proc/device-tree/model.")
    tegra_release: str | None = Field(None, description="First line of /etc/nv_tegra_release.")
    nvidia_gpus: tuple[NvidiaGpu, ...] = ()
    coral_usb: tuple[CoralUsb, ...] = ()
    coral_pcie: tuple[str, ...] = Field((), description="/dev/apex_* device nodes.")
    cpu_count: int | None = None
    memory_mb: int | None = None
    notes: tuple[str, ...] = Field((), description="What could not be read, and why.")

    def recognisable(self) -> bool:
        """Anything beyond a plain CPU: a board model, L4T, an NVIDIA GPU or a Coral."""
        return bool(
            self.device_tree_model
            or self.tegra_release
            or self.nvidia_gpus
            or self.coral_usb
            or self.coral_pcie
        )

    def summary(self) -> str:
        """The facts in one line of words."""
        parts = [
            f"device-tree model {self.device_tree_model!r}"
            if self.device_tree_model
            else "no device-tree model",
            "L4T release present" if self.tegra_release else "no L4T release",
            "NVIDIA GPU " + ", ".join(repr(g.name) for g in self.nvidia_gpus)
            if self.nvidia_gpus
            else "no NVIDIA GPU",
            "Coral USB " + ", ".join(c.usb_id for c in self.coral_usb)
            if self.coral_usb
            else "no Coral USB",
            "PCIe Coral " + ", ".join(self.coral_pcie) if self.coral_pcie else "no PCIe Coral",
        ]
        cpus = f"{self.cpu_count} CPUs" if self.cpu_count else "CPU count unknown"
        memory = f"{self.memory_mb} MB" if self.memory_mb else "memory unknown"
        return ", ".join(parts) + f"; {self.arch}, {cpus}, {memory}"
