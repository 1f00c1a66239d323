"""Package layout only (metadata is in pyproject.toml).

The top-level ``models/`` and ``hardware_profiles/`` folders are mapped into the
wheel as the packages ``appliance.data.models`` and ``appliance.data.hardware_profiles``,
which pyproject.toml's ``packages.find`` cannot express.
"""

from setuptools import find_packages, setup

DATA_PACKAGES = {
    "appliance.data.models": "models",
    "appliance.data.hardware_profiles": "hardware_profiles",
}

setup(
    packages=[
        *find_packages(include=["appliance", "appliance.*", "web_ui", "web_ui.*", "provisioning*"]),
        *DATA_PACKAGES,
    ],
    package_dir=DATA_PACKAGES,
    package_data={
        "appliance.data.models": ["*.yaml"],
        "appliance.data.hardware_profiles": ["*.yaml", "README.md"],
        "web_ui": ["templates/*.html", "static/*"],
    },
)
