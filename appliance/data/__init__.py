"""Package data shipped in the wheel: the model manifest and the hardware profiles.

Their files live at the repository's top level (``models/``, ``hardware_profiles/``,
as the design card lays it out); ``setup.py`` maps them in as
``appliance.data.models`` and ``appliance.data.hardware_profiles``, so an installed
wheel carries them and the code finds them through :mod:`importlib.resources`.
"""
