"""Face-swap mirror appliance runtime."""

__version__ = "0.1.0"
