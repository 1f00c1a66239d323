"""The hardware profiles (``*.yaml``): package data ``appliance.data.hardware_profiles``."""
