"""Who may use the served doors (`/v1`, `/mcp`, the web page to come), and as whom.

Promises:
- `Gate.check_host_origin` runs first on every request, before the key is looked at: a `Host`
  that names neither the bound address nor a configured name, or an `Origin` that is neither the
  server's own nor configured, is refused (403). A web page elsewhere that a browser was tricked
  into sending here (DNS rebinding: evil.example resolving to 127.0.0.1) gets nothing, not even
  a 401. Requests without `Origin` (every non-browser client) are judged on `Host` alone.
- `Gate.identify` turns the key a request carries (`X-API-KEY`, or `Authorization: Bearer`) into
  an `Identity`: the owner (the server's own key) or an agent (a key of `brain keys`, whose name
  is the agent's). Anything else is UNAUTHENTICATED.
- `bind_agent` is the one rule of what an identity may ask for: the owner acts for whichever agent
  a request names (like the CLI's `--agent`); an agent's key always acts as its own agent, and
  naming another agent, or asking for every agent's private memories (`include_private`), is
  FORBIDDEN (refused, not ignored: a client that asks for something else learns at once that it
  does not get it). Everything the doors do with the arguments afterwards is the owner's path.
- Plain functions and one small class over request headers, so any door served from this
  process (the web UI of issue 24 too) calls the same checks.
"""

from __future__ import annotations

import hmac
import re
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import Forbidden, HostNotAllowed, OriginNotAllowed, Unauthenticated

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD = frozenset({"", "0.0.0.0", "::"})
_PORT = re.compile(r"^:\d{1,5}$")


@dataclass(frozen=True)
class Identity:
    """The caller a key names: `agent` None for the owner's key, else the agent's name."""

    agent: str | None = None

    @property
    def owner(self) -> bool:
        return self.agent is None

    @property
    def actor(self) -> str | None:
        """What the log's `actor` says for this caller's writes: `agent:NAME` for an agent's key;
        None for the owner, whose writes are logged as the server's own user, as before."""
        return None if self.agent is None else f"agent:{self.agent}"

    @property
    def name(self) -> str:
        return "owner" if self.agent is None else self.agent


OWNER = Identity()


def _single(headers: Any, name: str) -> str | None:
    """The one value of header `name`; None when absent. Given twice, it is refused by the
    caller as unreadable (`...` is returned so no check can take either copy as the answer)."""
    values = headers.get_all(name) if hasattr(headers, "get_all") else (
        [headers[name]] if name in headers else None)
    if not values:
        return None
    return values[0] if len(values) == 1 else "..."


def host_name(value: str) -> str | None:
    """The host a `Host` header names (port dropped, lower case, IPv6 unbracketed), or None when
    it is not one (`a b`, `x:y`, `[::1`)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or (value[end + 1:] and not _PORT.match(value[end + 1:])):
            return None
        return value[1:end] or None
    host, colon, port = value.partition(":")
    if colon and (not port.isdigit() or len(port) > 5):
        return None
    host = host.rstrip(".")
    return host if host and re.fullmatch(r"[a-z0-9_.-]+", host) else None


def _is_ip(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Gate:
    """The checks of one served address: which Host names and Origins it answers, and the keys."""

    def __init__(self, bound_host: str, port: int, owner_key: str, keyring=None,
                 allowed_hosts: tuple[str, ...] = (), allowed_origins: tuple[str, ...] = ()) -> None:
        bound = bound_host.strip("[]").lower()
        self.port = port
        self.any_ip = bound in WILDCARD
        names = {bound} | {h.strip("[]").lower().rstrip(".") for h in allowed_hosts}
        if bound in WILDCARD or bound in LOOPBACK or bound.startswith("127."):
            names |= LOOPBACK
        if self.any_ip:
            names.add(socket.gethostname().lower())
        self.hosts = frozenset(names - {""})
        self.origins = frozenset(filter(None, (_origin_key(o) for o in allowed_origins)))
        self.owner_key = owner_key.encode("utf-8")
        self.keyring = keyring

    # ------------------------------------------------------------------ Host and Origin

    def host_allowed(self, host: str) -> bool:
        return host in self.hosts or (self.any_ip and _is_ip(host))

    def check_host_origin(self, headers: Any) -> None:
        """Refuse (HostNotAllowed / OriginNotAllowed, 403) a request addressed to a name this
        server does not answer to, or sent by a page of another origin."""
        raw = _single(headers, "Host")
        host = host_name(raw) if raw else None
        if host is None or not self.host_allowed(host):
            shown = "no Host header" if raw is None else f"Host {raw!r}"
            raise HostNotAllowed(f"{shown} is not this server's address; use one of {', '.join(sorted(self.hosts))} "
                                 "or add the name to [http] allowed_hosts", header="Host")
        origin = _single(headers, "Origin")
        if origin is None:
            return
        key = _origin_key(origin)
        if key is not None and (key in self.origins or (key[0] == "http" and key[2] == self.port
                                                          and self.host_allowed(key[1]))):
            return
        raise OriginNotAllowed(f"Origin {origin!r} may not use this server; add it to [http] allowed_origins "
                               "if it is yours", header="Origin")

    # ------------------------------------------------------------------ keys

    def identify(self, headers: Any) -> Identity:
        """The caller the request's key names; Unauthenticated (401) for none or a wrong one."""
        given = [v.strip() for v in (headers.get_all("X-API-KEY") or [])]
        if not given:   # `Authorization: Bearer` only when there is no X-API-KEY (a proxy may use its own)
            for value in headers.get_all("Authorization") or []:
                scheme, _, token = value.strip().partition(" ")
                if scheme.lower() == "bearer" and token.strip():
                    given.append(token.strip())
        if len(given) == 1:
            token = given[0]
            if hmac.compare_digest(token.encode("utf-8", "replace"), self.owner_key):
                return OWNER
            if self.keyring is not None and token:
                agent = self.keyring.agent_for(token)
                if agent is not None:
                    return Identity(agent)
        raise Unauthenticated("missing or wrong X-API-KEY header; send the server's key or an agent's key "
                              "(`brain keys add NAME`)")

    def admit(self, headers: Any) -> Identity:
        """Host and Origin first, then the key: the checks every request passes before anything else."""
        self.check_host_origin(headers)
        return self.identify(headers)


def _origin_key(origin: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin like `https://app.example.com:8443`; None for `null` or junk."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.fragment or parts.username or parts.password:
        return None
    return parts.scheme, parts.hostname.lower().rstrip("."), port or (443 if parts.scheme == "https" else 80)


def gate_for(vault, host: str, port: int, owner_key: str) -> Gate:
    """The gate of `brain serve` on `vault` bound to host:port, with the agents' keys file."""
    from ..agents.keys import KeyRing, keys_path, read_keys

    path = keys_path(vault)
    read_keys(path)   # a keys file that cannot be read stops the start, not every request after it
    settings = vault.settings.http
    return Gate(host, port, owner_key, KeyRing(path), settings.allowed_hosts, settings.allowed_origins)


def bind_agent(identity: Identity, args: dict[str, Any], field: str,
               private_field: str | None = None) -> dict[str, Any]:
    """`args` as `identity` may send them: unchanged for the owner; for an agent's key, `field`
    set to its own name (naming another agent is Forbidden) and `private_field` refused when true."""
    if identity.owner:
        return args
    asked = args.get(field)
    if asked not in (None, "", identity.agent):
        raise Forbidden(f"this key is agent {identity.agent}'s and acts only as that agent; drop {field} "
                        f"or send {field}={identity.agent}", field=field)
    if private_field and args.get(private_field):
        raise Forbidden(f"{private_field} (every agent's private memories) is for the owner's key only",
                        field=private_field)
    return {**args, field: identity.agent}
