"""The arm64 install test's helpers: host tools and binfmt, cached Debian roots, chroot runs.

``python -m tests.arm64`` (``make arm64-test``) installs the host tools when
missing and allowed, registers the aarch64 binfmt handler when the kernel
allows, then runs ``tests/test_arm64_install.py``, which skips with the
reason when it cannot run (not root, no binfmt_misc, no emulator).
"""
