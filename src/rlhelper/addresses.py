"""Who a client is, as the web server's limits count it (issue 37).

    address_key("203.0.113.7")            -> "203.0.113.7"
    address_key("2001:db8:1:2:aa::7")     -> "2001:db8:1:2::/64"   one IPv6 host holds a whole /64
    network_key("203.0.113.7")            -> "203.0.113.0/24"
    network_key("2001:db8:1:2:aa::7")     -> "2001:db8:1::/48"

An IPv6 host is handed a /64 (or more) and may use any address in it, so counting /128s makes one
host unlimited: every per-address limit (new visitor ids, votes a minute, sessions, sign-in
attempts, votes held) counts an IPv6 client by its /64. An IPv4 address mapped into IPv6
(::ffff:a.b.c.d) counts as that IPv4 address. The network (IPv4 /24, IPv6 /48) is what the vote
store spreads its room over, and what `rlhelper questions review` shows a suggestion's votes by.
Text that is not an address (a test client's name, "?") is its own key.

Standard library only.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

IPV6_HOST_PREFIX = 64
IPV4_NETWORK_PREFIX = 24
IPV6_NETWORK_PREFIX = 48


def _parsed(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(str(host).split("%", 1)[0].strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@lru_cache(maxsize=4096)
def address_key(host: str) -> str:
    """The client as the per-address limits count it: an IPv4 address, or an IPv6 address's /64."""
    address = _parsed(host)
    if address is None:
        return str(host)[:100]
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/{IPV6_HOST_PREFIX}", strict=False))
    return str(address)


@lru_cache(maxsize=4096)
def network_key(host: str) -> str:
    """The network a client is in: IPv4 /24, IPv6 /48 (`host` may already be an address_key)."""
    address = _parsed(str(host).split("/", 1)[0])
    if address is None:
        return str(host)[:100]
    prefix = IPV6_NETWORK_PREFIX if address.version == 6 else IPV4_NETWORK_PREFIX
    return str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))
