"""Who a login attempt comes from, as the lock-out counts it: an address and its network.

An IPv4 client is its address (its own network). An IPv6 client is its full
address, so one host's wrong passwords lock out that host only, never its
whole /64 (the whole LAN); its ``network`` is the /64, which the limiter
also bounds, with a larger budget, because one host can take any number of
addresses in it. An IPv4-mapped IPv6 address counts as the IPv4 address.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import NamedTuple

logger = logging.getLogger(__name__)

IPV6_PREFIX = 64


class ClientKey(NamedTuple):
    address: str
    network: str

    @property
    def shares_network(self) -> bool:
        """True when other addresses count in the same network (an IPv6 /64)."""
        return self.network != self.address


def client_of(address: str | None) -> ClientKey:
    """The key of a client at ``address`` (as the server saw it; ``?`` when unknown)."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return ClientKey(address or "?", address or "?")
    if isinstance(ip, ipaddress.IPv4Address):
        return ClientKey(str(ip), str(ip))
    if ip.ipv4_mapped is not None:
        return ClientKey(str(ip.ipv4_mapped), str(ip.ipv4_mapped))
    bare = ipaddress.IPv6Address(int(ip))  # without a zone (fe80::1%eth0)
    network = ipaddress.IPv6Network((int(bare), IPV6_PREFIX), strict=False)
    return ClientKey(str(bare), str(network))
