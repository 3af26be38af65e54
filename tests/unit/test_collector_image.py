"""The history-server collector stand-in (``hack/image/collector``): its image is the Ray
image's Debian layer plus ``server.py``, and the server records what Ray posts."""

from __future__ import annotations

import hashlib
import json
import tarfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from hack.image.collector import SERVER_PATH, collector_layout
from hack.image.collector import server as collector_server


def _blob(layout: Path, digest: str) -> Path:
    return layout / "blobs" / "sha256" / digest.split(":", 1)[1]


def _put(layout: Path, data: bytes) -> tuple[str, int]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    _blob(layout, digest).write_bytes(data)
    return digest, len(data)


def _fake_ray_layout(root: Path) -> Path:
    layout = root / "ray"
    (layout / "blobs" / "sha256").mkdir(parents=True)
    base, base_size = _put(layout, b"base layer bytes")
    top, top_size = _put(layout, b"ray layer bytes")
    config = {
        "architecture": "amd64", "os": "linux", "created": "2026-11-29T00:00:00Z",
        "config": {"Cmd": ["/bin/bash"], "User": "1000:100",
                   "Env": ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "RAY_X=1"]},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "a" * 64, "sha256:" + "b" * 64]},
        "history": [{"created_by": "debian"}, {"created_by": "ray"}],
    }  # fmt: skip
    config_digest, config_size = _put(layout, json.dumps(config).encode())
    layer_type = "application/vnd.oci.image.layer.v1.tar+gzip"
    manifest = {
        "schemaVersion": 2,
        "config": {"digest": config_digest, "size": config_size},
        "layers": [{"mediaType": layer_type, "digest": base, "size": base_size},
                   {"mediaType": layer_type, "digest": top, "size": top_size}],
    }  # fmt: skip
    manifest_digest, manifest_size = _put(layout, json.dumps(manifest).encode())
    index = {"schemaVersion": 2, "manifests": [{"digest": manifest_digest, "size": manifest_size}]}
    (layout / "index.json").write_text(json.dumps(index))
    return layout


def test_the_image_is_the_ray_base_layer_and_the_server(tmp_path: Path) -> None:
    ray = _fake_ray_layout(tmp_path)
    out = collector_layout(ray, tmp_path / "collector")
    (entry,) = json.loads((out / "index.json").read_text())["manifests"]
    manifest = json.loads(_blob(out, entry["digest"]).read_bytes())
    config = json.loads(_blob(out, manifest["config"]["digest"]).read_bytes())
    base, server_layer = manifest["layers"]
    assert _blob(out, base["digest"]).read_bytes() == b"base layer bytes"
    layer_bytes = _blob(out, server_layer["digest"]).read_bytes()
    assert server_layer["digest"] == "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    # An uncompressed layer: its digest is its diff_id.
    assert config["rootfs"]["diff_ids"] == ["sha256:" + "a" * 64, server_layer["digest"]]
    assert config["config"]["Cmd"] == ["python3.11", f"/{SERVER_PATH}"]
    assert config["config"]["User"] == "1000:100"
    assert config["config"]["Env"] == ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"]
    with tarfile.open(_blob(out, server_layer["digest"])) as archive:
        member = archive.extractfile(SERVER_PATH)
        assert member is not None
        assert member.read() == Path(collector_server.__file__).read_bytes()
    # The same input gives the same image.
    again = collector_layout(ray, tmp_path / "again")
    assert (again / "index.json").read_text() == (out / "index.json").read_text()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    logs = tmp_path / "session_1" / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.out").write_text("raylet")
    monkeypatch.setattr(collector_server, "RAY_DIR", tmp_path)
    monkeypatch.setattr(collector_server, "SEEN", collector_server.Seen())
    monkeypatch.setenv("RAY_ROLE", "Head")
    http = ThreadingHTTPServer(("127.0.0.1", 0), collector_server.Handler)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{http.server_address[1]}"
    finally:
        http.shutdown()
        http.server_close()


def test_the_server_counts_the_events_ray_posts(server: str) -> None:
    events = [{"eventType": "TASK_DEFINITION_EVENT"}, {"eventType": "NODE_LIFECYCLE_EVENT"},
              {"eventType": "TASK_DEFINITION_EVENT"}]  # fmt: skip
    request = urllib.request.Request(f"{server}/v1/events", data=json.dumps(events).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200
    with urllib.request.urlopen(f"{server}/status", timeout=10) as answer:
        status = json.loads(answer.read())
    assert status["posts"] == 1
    assert status["events"] == {"TASK_DEFINITION_EVENT": 2, "NODE_LIFECYCLE_EVENT": 1}
    assert status["files"] == ["session_1/logs/raylet.out"]
    assert status["env"]["RAY_ROLE"] == "Head"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(f"{server}/v1/other", data=b"[]"))
    assert refused.value.code == 404
    refused.value.close()
