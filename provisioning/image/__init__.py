"""Flashable device images: a Debian root by mmdebstrap, the partitions by genimage."""
