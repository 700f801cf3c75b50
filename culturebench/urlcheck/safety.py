"""Refuse requests to private, loopback, link-local and other non-public addresses (SSRF
guard), unless the caller explicitly allows them (tests allow 127.0.0.1)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit


class BlockedAddress(Exception):
    """The URL resolves to an address the checker must not contact."""


def _addresses(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise OSError(f"cannot resolve {host}: {exc}") from exc
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]


def check_target(url: str, allowed: Iterable[str] = ()) -> None:
    """Raise :class:`BlockedAddress` if ``url``'s host resolves to a non-public address that
    is not in ``allowed`` (IP addresses or networks, e.g. ``127.0.0.1`` or ``127.0.0.0/8``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise BlockedAddress(f"scheme {parts.scheme!r} is not http(s)")
    host = parts.hostname or ""
    networks = [ipaddress.ip_network(a, strict=False) for a in allowed]
    for address in _addresses(host):
        if any(address in net for net in networks):
            continue
        if (
            address.is_private
            or address.is_loopback
            or address.is_link_local
            or address.is_multicast
            or address.is_reserved
            or address.is_unspecified
        ):
            raise BlockedAddress(f"{host} resolves to non-public address {address}")
