"""The admin account: one user, a per-device password stored only as a scrypt hash.

There is no default password. ``provision`` generates one (16 characters
from ``secrets``, grouped for reading off a screen) unless one is given,
and marks it to be changed at the first login. The file
(``<data dir>/web/auth.json``) is written atomically with mode 0600.
``generation`` goes up at every change, which ends every other login.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash

from appliance.fileio import atomic_write_text
from web_ui.errors import PasswordError, WebConfigError, WrongPasswordError

logger = logging.getLogger(__name__)

USERNAME = "admin"
MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 256
HASH_METHOD = "scrypt"  # werkzeug's default cost: 2**15, r=8, p=1
FIRST_BOOT_NAME = "first-boot.txt"  # provisioning's one-time password for the display


def first_boot_notice(password: str) -> str:
    """The text of the first-boot notice (``FIRST_BOOT_NAME``): the display reads the
    ``password:`` line from it, and the first password change deletes it."""
    return (
        "Face-swap mirror: admin login for the web page\n"
        f"user: {USERNAME}\n"
        f"password: {password}\n"
        "This screen goes away after the first login, which asks for a new password.\n"
    )


# no 0/O, 1/l/I, 5/S, 8/B: readable off a display and typeable on a phone
ALPHABET = "abcdefghijkmnpqrstuvwxyzACDEFGHJKLMNPQRTUVWXYZ234679"
GROUPS, GROUP_LEN = 4, 4


@dataclass(frozen=True)
class Account:
    username: str
    password_hash: str
    must_change: bool
    generation: int


def generate_password() -> str:
    """Like ``k7Qp-x3Ma-...``: 16 random characters, about 91 bits."""
    return "-".join(
        "".join(secrets.choice(ALPHABET) for _ in range(GROUP_LEN)) for _ in range(GROUPS)
    )


class AuthStore:
    """Reads, checks and changes the admin account in one JSON file."""

    def __init__(self, path: Path, method: str = HASH_METHOD) -> None:
        self.path = Path(path)
        self.method = method
        self._lock = threading.Lock()
        self._cached: Account | None = None

    def exists(self) -> bool:
        return self.path.exists()

    def provision(self, password: str | None = None, must_change: bool = True) -> str:
        """Create (or replace) the account; returns the password, generated when not given."""
        password = password or generate_password()
        with self._lock:
            old = self._load_unlocked() if self.path.exists() else None
            generation = 1 if old is None else old.generation + 1
            self._save(Account(USERNAME, self._hash(password), must_change, generation))
        logger.info("admin account provisioned (change required: %s)", must_change)
        return password

    def account(self) -> Account:
        with self._lock:
            return self._load_unlocked()

    def verify(self, username: str, password: str) -> bool:
        """Whether the pair is right; as slow for a wrong user name as for a wrong password."""
        account = self.account()
        if username != account.username or len(password) > MAX_PASSWORD_LENGTH:
            check_password_hash(_dummy_hash(self.method), password[:MAX_PASSWORD_LENGTH])
            return False
        return check_password_hash(account.password_hash, password)

    def change(self, current: str, new: str) -> Account:
        """Set a new password after checking the current one; ``PasswordError`` says why not."""
        account = self.account()
        if not check_password_hash(account.password_hash, current):
            raise WrongPasswordError("the current password is wrong")
        check_new_password(new, current)
        with self._lock:
            changed = Account(account.username, self._hash(new), False, account.generation + 1)
            self._save(changed)
        first_boot = self.path.parent / FIRST_BOOT_NAME
        if first_boot.exists():  # the one-time password is spent: the display stops showing it
            first_boot.unlink()
        logger.info("admin password changed")
        return changed

    def _hash(self, password: str) -> str:
        return generate_password_hash(password, method=self.method)

    def _load_unlocked(self) -> Account:
        if self._cached is not None:
            return self._cached
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            account = Account(
                str(data["username"]),
                str(data["password_hash"]),
                bool(data["must_change"]),
                int(data["generation"]),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise WebConfigError(
                f"cannot read the admin account {self.path}: {exc}; provision it again"
            ) from exc
        self._cached = account
        return account

    def _save(self, account: Account) -> None:
        text = json.dumps(
            {
                "username": account.username,
                "password_hash": account.password_hash,
                "must_change": account.must_change,
                "generation": account.generation,
            },
            indent=2,
        )
        atomic_write_text(self.path, text + "\n", mode=0o600)
        self._cached = account


def check_new_password(new: str, current: str) -> None:
    if len(new) < MIN_PASSWORD_LENGTH:
        raise PasswordError(f"the new password must have at least {MIN_PASSWORD_LENGTH} characters")
    if len(new) > MAX_PASSWORD_LENGTH:
        raise PasswordError(f"the new password must have at most {MAX_PASSWORD_LENGTH} characters")
    if new == current:
        raise PasswordError("the new password must differ from the current one")


@functools.cache
def _dummy_hash(method: str) -> str:
    """A hash to check wrong user names against, so they take as long as wrong passwords."""
    return generate_password_hash(secrets.token_urlsafe(16), method=method)
