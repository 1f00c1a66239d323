"""Which ``Host`` a request may name: the device's own names and addresses (DNS rebinding).

A page on another site can point its own name at the mirror's address (DNS
rebinding): the visiting browser then sends that site's name as ``Host`` and
treats the mirror as that site. So only these are served: ``localhost``, this
machine's host name and ``<name>.local``, the names in web.yaml's
``allowed_hosts``, and IP addresses this machine owns (IPv6 in brackets;
loopback always). Whether it owns an address is asked of the kernel when a
request names one (binding a UDP socket to it works only for its own), so a
new DHCP lease needs no restart. A request without ``Host`` (HTTP/1.0) names
no site and passes. Werkzeug's ``TRUSTED_HOSTS`` is not used: it cannot match
IPv6 addresses, and the device's addresses change.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
import socket
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

_HOST = re.compile(r"(?P<name>[a-z0-9.-]+|\[(?P<v6>[0-9a-f:.]+)\])(?::(?P<port>[0-9]{1,5}))?")
DEFAULT_PORTS = {"http": 80, "https": 443}


def split_host(host: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a ``Host`` value (lower case, IPv6 without brackets, no final
    dot); None when it is not a well-formed host."""
    match = _HOST.fullmatch(host.strip().lower())
    if match is None:
        return None
    name = match.group("v6") or match.group("name").rstrip(".")
    port = int(match.group("port")) if match.group("port") else None
    if not name or (port is not None and not 0 < port < 65536):
        return None
    return name, port


def owns_address(address: str) -> bool:
    """Whether ``address`` is one of this machine's (loopback included)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return True
    if ip.is_unspecified or ip.is_multicast:
        return False
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((str(ip), 0))
    except OSError:
        return False
    return True


class AllowedHosts:
    """The names and addresses this device answers to; ``allows`` a ``Host`` value."""

    def __init__(self, extra: tuple[str, ...] = (), hostname: str | None = None) -> None:
        own = (hostname if hostname is not None else socket.gethostname()).lower().rstrip(".")
        names = {"localhost"} | ({own, f"{own}.local"} if own else set())
        for value in extra:
            parsed = split_host(value)
            if parsed is not None:
                names.add(_canonical(parsed[0]))
        self.names = frozenset(names)

    def allows(self, host: str) -> bool:
        parsed = split_host(host)
        if parsed is None:
            return False
        name = _canonical(parsed[0])
        return name in self.names or owns_address(name)

    def allows_origin(self, origin: str, host: str, scheme: str) -> bool:
        """Whether ``Origin`` (``scheme://host:port``) is this page: an allowed host on the
        port the request came to (``host`` is the request's own, already allowed)."""
        try:
            parts = urlsplit(origin.strip())
        except ValueError:
            return False
        if parts.scheme not in DEFAULT_PORTS or not self.allows(parts.netloc):
            return False
        ours, theirs = split_host(host), split_host(parts.netloc)
        if ours is None or theirs is None:
            return False
        return (theirs[1] or DEFAULT_PORTS[parts.scheme]) == (ours[1] or DEFAULT_PORTS[scheme])


def _canonical(name: str) -> str:
    """IP addresses in one spelling (``::0001`` is ``::1``); names as they are."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


@functools.lru_cache(maxsize=8)
def allowed_hosts(extra: tuple[str, ...]) -> AllowedHosts:
    """The device's ``AllowedHosts`` with web.yaml's ``extra`` names (made once)."""
    return AllowedHosts(extra)
