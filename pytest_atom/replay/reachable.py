"""Whether a recording's upstream can be reached, asked once per session before it records.

An unreachable upstream does not fail a recording by itself (each refused request becomes a
502, which Claude Code retries, for minutes), so the upstream is connected to once a session
with a short timeout: an unreachable one is `UpstreamUnreachable`, which stops the session.

Only a TCP connection is made: no request is sent, so nothing is billed and no credential
leaves the machine. Through a proxy (the ``https_proxy`` family the forwarding client
honours too), the proxy is connected to, as that is all the machine itself reaches.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from pytest_atom.errors import UpstreamUnreachable

#: How long the check waits: long enough for a slow network, far shorter than the retries.
CHECK_TIMEOUT = 5.0


def unreachable(url: str, timeout: float = CHECK_TIMEOUT) -> str | None:
    """Why `url` (or the proxy in front of it) cannot be connected to; None when it can."""
    import urllib.request  # only when a session records: collecting specs never needs it

    target = urlsplit(url)
    host, scheme = target.hostname or "", target.scheme or "http"
    port = target.port or (443 if scheme == "https" else 80)
    via = ""
    proxy = urllib.request.getproxies().get(scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        address = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = address.hostname or "", address.port or 80
        via = f" (through the proxy {host}:{port})"
    started = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror as exc:
        return f"could not be found{via}: no address for {host} ({exc.strerror or exc})"
    except TimeoutError:
        return f"did not accept a connection within {timeout:g} s{via}"
    except ConnectionRefusedError:
        return f"refused the connection{via}"
    except OSError as exc:
        waited = time.monotonic() - started
        return f"could not be connected to{via} ({exc.strerror or exc}, after {waited:.1f} s)"


@dataclass
class UpstreamCheck:
    """The session's answers about its upstreams: each is connected to at most once."""

    timeout: float = CHECK_TIMEOUT
    _found: dict[str, UpstreamUnreachable | None] = field(default_factory=dict)

    def require(self, url: str, spec: str) -> None:
        """Return when `url` can be reached; else `UpstreamUnreachable`, the same for every
        spec of the session (naming `spec`, the first to need it)."""
        if url not in self._found:
            why = unreachable(url, self.timeout)
            headline = f"recording stopped: upstream {url} {why}"
            self._found[url] = (
                None
                if why is None
                else UpstreamUnreachable(
                    f"{headline} (checked before spec '{spec}' recorded; no spec of this "
                    "session can record from it): start it, or set --atom-upstream (atom run "
                    "--upstream) or ANTHROPIC_BASE_URL to one that answers, or replay the "
                    "cassettes with --atom-record-mode=none",
                    headline,
                )
            )
        found = self._found[url]
        if found is not None:
            raise UpstreamUnreachable(str(found), found.headline)
