"""The model manifest (``manifest.yaml``), shipped as package data ``appliance.data.models``."""
