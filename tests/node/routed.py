"""What a client pod on the node runs to reach a Service: kube-proxy programs a ClusterIP on
its next sync after the endpoint turns Ready, and until then a connection to it is
refused. The tier's client pods retry a refusal, and only a refusal, for a bounded time,
as a user's client would."""

from __future__ import annotations

import textwrap

ROUTED_SECONDS = 60
"""How long a client keeps trying a refused ClusterIP: kube-proxy's sync on a loaded node
took up to a minute."""

GET_ONCE_ROUTED = textwrap.dedent(f"""
    import time, urllib.error, urllib.request
    def get_once_routed(url, seconds={ROUTED_SECONDS}):
        deadline, attempts = time.monotonic() + seconds, 0
        while True:
            attempts += 1
            try:
                return urllib.request.urlopen(url, timeout=10).read().decode(), attempts
            except urllib.error.URLError as error:
                if not isinstance(error.reason, ConnectionRefusedError):
                    raise
                if time.monotonic() > deadline:
                    raise SystemExit(f"{{url}} refused for {{seconds}} s") from error
                time.sleep(1)
""")
"""Python source defining ``get_once_routed(url)``: the body and the attempts it took."""
