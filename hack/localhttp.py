"""Plain HTTP to what runs in the sandbox (a Ray head's dashboard, a Serve proxy, an
operator's metrics port), through one client.

``httpx.get`` makes a client for each call, and a client builds a TLS context, loading
the CA bundle, even for an ``http://`` URL: 22 ms of CPU a call, against 0.14 through a
kept client, and the tests' polls call it a few times a second (a head's start alone
polls its dashboard every quarter second for 10-60 s). The client keeps no connection
alive, so each call still dials afresh as ``httpx.get`` did: a poll of a server that died
or was replaced sees it at once. Its default timeout is ``httpx.get``'s, 5 s.
"""

from __future__ import annotations

from typing import Final

import httpx

LOCAL_HTTP: Final = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))
