"""What the RayJob controller creates: the submit command, the submitter Job and sidecar,
the RayJob's RayCluster and its ``<j>-head-svc``; and Go's formats they are written in."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from operator_runtime.api import FeatureGates, RayCluster, RayJob
from operator_runtime.render import (
    ManifestRenderParams,
    RenderError,
    RenderOptions,
    SubmitterParams,
    build_rayjob_cluster,
    build_rayjob_head_service,
    build_submitter_job,
    render_manifest,
    sidecar_submitter_container,
    submit_command,
)
from operator_runtime.render._gofmt import (
    go_format_f32,
    go_json,
    go_quote,
    go_trim_space,
    go_yaml_to_json,
)

MANIFESTS = Path(__file__).resolve().parents[3] / "examples" / "manifests"
URL = "demo-xxxxx-head-svc.ns.svc.cluster.local:8265"
ADDR = f"http://{URL}"
HEAD_IMAGE = "rayproject/ray:2.52.0"
WAIT = (
    "until python -c \"import urllib.request; r=urllib.request.urlopen('{health}', "
    "timeout=10); exit(0 if b'success' in r.read() else 1)\" >/dev/null 2>&1 ; "
    'do echo "Waiting for Ray Dashboard GCS to become healthy at {addr} ..." ; '
    "sleep 2 ; done ; "
)


def job_document(**spec: Any) -> dict[str, Any]:
    head = {"name": "ray-head", "image": HEAD_IMAGE}
    document: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": "demo",
            "namespace": "ns",
            "uid": "job-uid",
            "labels": {"team": "a"},
            "annotations": {"note": "kept"},
        },
        "spec": {
            "entrypoint": "python /app/main.py",
            "rayClusterSpec": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [head]}},
                },
            },
        },
    }
    document["spec"].update(spec)
    return document


def make_job(**spec: Any) -> RayJob:
    return RayJob.model_validate(job_document(**spec))


def params(job: RayJob, **changes: Any) -> SubmitterParams:
    values: dict[str, Any] = {"job": job, "job_id": "demo-xxxxx", "dashboard_url": URL}
    values.update(changes)
    return SubmitterParams(**values)


def own_cluster(job: RayJob, name: str = "demo-xxxxx") -> RayCluster:
    return RayCluster.model_validate(build_rayjob_cluster(job=job, cluster_name=name, job_id="x"))


# --- Go's formats ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain words", '"plain words"'),
        ('say "hi" \\ now', '"say \\"hi\\" \\\\ now"'),
        ("a\nb\tc\rd\a\b\f\v", '"a\\nb\\tc\\rd\\a\\b\\f\\v"'),
        ("$HOME 'single'", "\"$HOME 'single'\""),
        ("\x01\x1f\x7f", '"\\x01\\x1f\\x7f"'),
        ("über ✓ 😀", '"über ✓ 😀"'),
        ("nb\u00a0sp zw\u200bsp", '"nb\\u00a0sp zw\\u200bsp"'),
        ("tag\U000e0001", '"tag\\U000e0001"'),
        ("", '""'),
    ],
)
def test_go_quote_is_strconv_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


def test_go_json_sorts_keys_and_escapes_like_encoding_json() -> None:
    value = {"b": ["<a&b>", 1, 2.5, 1e21, None, True], "a": {"z": "\u2028", "y": "é\n"}}
    expected = (
        '{"a":{"y":"é\\n","z":"\\u2028"},"b":["\\u003ca\\u0026b\\u003e",1,2.5,1e+21,null,true]}'
    )
    assert go_json(value) == expected
    with pytest.raises(ValueError):
        go_json(float("nan"))


def test_yaml_to_json_reads_scalars_as_go_yaml_v2_does() -> None:
    text = (
        "b: y\nc: 1e3\nd: 0x1F\ne: 2001-12-14\nf: 'yes'\ng: 012\nh: 1_000\ni: .5\n"
        "j: 3.0\nk: ~\nl: on\nm: 1.2.3\n7: int key\ntrue: bool key\n"
        "a: [x, {z: 1, y: 2}]\n"
    )
    assert go_yaml_to_json(text) == (
        # A key `y` is the boolean true too, so it becomes "true".
        '{"7":"int key","a":["x",{"true":2,"z":1}],"b":true,"c":1000,"d":31,'
        '"e":"2001-12-14","f":"yes","g":10,"h":1000,"i":0.5,"j":3,"k":null,"l":true,'
        '"m":"1.2.3","true":"bool key"}'
    )
    with pytest.raises(ValueError, match="did not find expected"):
        go_yaml_to_json("a: [unclosed")


def test_f32_and_trim_space_follow_go() -> None:
    assert go_format_f32(1) == "1.000000"
    assert go_format_f32(0.5) == "0.500000"
    # float32 cannot hold 16777217 (2**24 + 1): Go prints the float32 it became.
    assert go_format_f32(16777217) == "16777216.000000"
    assert go_trim_space("\x1c \u3000 body \n\t") == "\x1c \u3000 body"


# --- the submit command -----------------------------------------------------------------


def test_k8s_job_mode_command_with_every_option() -> None:
    job = make_job(
        entrypoint='  python -c "print(\'$HOME\')"\n  && echo "two words" \n',
        runtimeEnvYAML="pip:\n  - requests==2.32.3\nenv_vars:\n  B: 'x y'\n  A: yes\n",
        metadata={"owner": "a&b", "team": "ml"},
        entrypointNumCpus=1,
        entrypointNumGpus=0.5,
        entrypointResources='{"custom": 1}',
    )
    expected = (
        WAIT.format(health=f"{ADDR}/api/gcs_healthz", addr=ADDR)
        + f"if ! ray job status --address {ADDR} demo-xxxxx >/dev/null 2>&1 ; then "
        f"ray job submit --address {ADDR} --no-wait "
        '--runtime-env-json "{\\"env_vars\\":{\\"A\\":true,\\"B\\":\\"x y\\"},'
        '\\"pip\\":[\\"requests==2.32.3\\"]}" '
        '--metadata-json "{\\"owner\\":\\"a\\\\u0026b\\",\\"team\\":\\"ml\\"}" '
        "--submission-id demo-xxxxx "
        "--entrypoint-num-cpus 1.000000 --entrypoint-num-gpus 0.500000 "
        '--entrypoint-resources "{\\"custom\\": 1}" '
        '-- python -c "print(\'$HOME\')"\n  && echo "two words" ; '
        f"fi ; ray job logs --address {ADDR} --follow demo-xxxxx"
    )
    assert submit_command(params(job)) == expected


def test_sidecar_command_with_the_restart_gate_and_every_option() -> None:
    """KubeRay v1.7.0's TestBuildJobSubmitCommandWithSidecarModeAndFeatureGate: with
    SidecarSubmitterRestart the sidecar's command checks ``ray job status`` first,
    submits with ``--no-wait`` and follows the logs, all on the head's localhost."""
    document = job_document(
        submissionMode="SidecarMode",
        entrypoint="echo no quote 'single quote' \"double quote\"",
        runtimeEnvYAML="test: test\n",
        metadata={"testKey": "testValue"},
        entrypointNumCpus=1,
        entrypointNumGpus=0.5,
        entrypointResources='{"Custom_1": 1, "Custom_2": 5.5}',
    )
    head = document["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    head["containers"][0]["ports"] = [{"name": "dashboard", "containerPort": 8265}]
    job = RayJob.model_validate(document)
    addr = "http://127.0.0.1:8265"
    expected = (
        WAIT.format(health="http://localhost:8265/api/gcs_healthz", addr=addr)
        + f"if ! ray job status --address {addr} demo-xxxxx >/dev/null 2>&1 ; then "
        f"ray job submit --address {addr} --no-wait "
        '--runtime-env-json "{\\"test\\":\\"test\\"}" '
        '--metadata-json "{\\"testKey\\":\\"testValue\\"}" '
        "--submission-id demo-xxxxx "
        "--entrypoint-num-cpus 1.000000 --entrypoint-num-gpus 0.500000 "
        '--entrypoint-resources "{\\"Custom_1\\": 1, \\"Custom_2\\": 5.5}" '
        "-- echo no quote 'single quote' \"double quote\" ; "
        f"fi ; ray job logs --address {addr} --follow demo-xxxxx"
    )
    assert submit_command(params(job), sidecar=True, sidecar_restart=True) == expected


def test_a_minimal_command_and_an_address_that_has_its_scheme() -> None:
    job = make_job()
    tail = f"ray job submit --address {ADDR} --no-wait --submission-id demo-xxxxx -- "
    assert tail + "python /app/main.py ; fi ;" in submit_command(params(job))
    # KubeRay prefixes http:// only when it is missing.
    assert submit_command(params(job, dashboard_url=ADDR)) == submit_command(params(job))


def test_sidecar_command_uses_the_head_dashboard_port_on_localhost() -> None:
    document = job_document(submissionMode="SidecarMode")
    head = document["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    head["containers"][0]["ports"] = [{"name": "dashboard", "containerPort": 9999}]
    job = RayJob.model_validate(document)
    addr = "http://127.0.0.1:9999"
    once = submit_command(params(job), sidecar=True)
    assert once == (
        WAIT.format(health="http://localhost:9999/api/gcs_healthz", addr=addr)
        + f"ray job submit --address {addr} --submission-id demo-xxxxx -- python /app/main.py ;"
    )
    restartable = submit_command(params(job), sidecar=True, sidecar_restart=True)
    assert f"if ! ray job status --address {addr} demo-xxxxx" in restartable
    assert restartable.endswith(f"; fi ; ray job logs --address {addr} --follow demo-xxxxx")


@pytest.mark.parametrize(("version", "ok"), [("2.5.1", False), ("2.6.0-rc1", False),
                                             ("2.6", True), ("v2.52.0", True)])  # fmt: skip
def test_metadata_needs_ray_2_6(version: str, ok: bool) -> None:
    document = job_document(metadata={"k": "v"})
    document["spec"]["rayClusterSpec"]["rayVersion"] = version
    job = RayJob.model_validate(document)
    if ok:
        assert '--metadata-json "{\\"k\\":\\"v\\"}"' in submit_command(params(job))
    else:
        with pytest.raises(RenderError, match=r"2\.6\.0"):
            submit_command(params(job))


# --- the submitter Job and sidecar ------------------------------------------------------


def test_default_submitter_job() -> None:
    job = make_job()
    built = build_submitter_job(params=params(job))
    meta = built["metadata"]
    labels = {
        "app.kubernetes.io/created-by": "kuberay-operator",
        "ray.io/originated-from-cr-name": "demo",
        "ray.io/originated-from-crd": "RayJob",
    }
    assert (built["apiVersion"], built["kind"]) == ("batch/v1", "Job")
    assert (meta["name"], meta["namespace"], meta["labels"]) == ("demo", "ns", labels)
    assert meta["ownerReferences"] == [
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "demo", "uid": "job-uid",
         "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip
    assert built["spec"]["backoffLimit"] == 2 and set(built["spec"]) == {"backoffLimit", "template"}
    template = built["spec"]["template"]
    assert template["metadata"] == {"labels": labels}
    assert template["spec"]["restartPolicy"] == "Never"
    (container,) = template["spec"]["containers"]
    assert container == {
        "name": "ray-job-submitter",
        "image": HEAD_IMAGE,
        "command": ["/bin/bash", "-ce", "--"],
        "args": [submit_command(params(job))],
        "env": [
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "RAY_DASHBOARD_ADDRESS", "value": URL},
            {"name": "RAY_JOB_SUBMISSION_ID", "value": "demo-xxxxx"},
        ],
        "resources": {
            "limits": {"cpu": "1", "memory": "1Gi"},
            "requests": {"cpu": "500m", "memory": "200Mi"},
        },
    }
    login = build_submitter_job(params=params(job, options=RenderOptions(enable_login_shell=True)))
    assert login["spec"]["template"]["spec"]["containers"][0]["command"][1] == "-cel"


@pytest.mark.parametrize(("config", "limit"), [({"backoffLimit": 0}, 0), ({"backoffLimit": 5}, 5),
                                               ({}, 2)])  # fmt: skip
def test_submitter_backoff_limit(config: dict[str, int], limit: int) -> None:
    job = make_job(submitterConfig=config)
    assert build_submitter_job(params=params(job))["spec"]["backoffLimit"] == limit


def user_template(command: list[str] | None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "my-submitter",
        "image": "me/submitter:1",
        "env": [{"name": "PYTHONUNBUFFERED", "value": "0"}],
    }
    if command is not None:
        container["command"] = command
        container["args"] = ["run"]
    return {
        "metadata": {"labels": {"team": "b", "ray.io/originated-from-crd": "mine"}},
        "spec": {"containers": [container], "restartPolicy": "OnFailure"},
    }


def test_a_user_template_without_command_gets_the_script() -> None:
    job = make_job(submitterPodTemplate=user_template(None))
    template = build_submitter_job(params=params(job))["spec"]["template"]
    assert template["metadata"]["labels"] == {
        "app.kubernetes.io/created-by": "kuberay-operator",
        "ray.io/originated-from-cr-name": "demo",
        "ray.io/originated-from-crd": "RayJob",
        "team": "b",
    }
    assert template["spec"]["restartPolicy"] == "OnFailure"
    (container,) = template["spec"]["containers"]
    assert (container["name"], container["image"]) == ("my-submitter", "me/submitter:1")
    assert container["command"] == ["/bin/bash", "-ce", "--"]
    assert container["args"] == [submit_command(params(job))]
    # Appended after the user's own, even where the name repeats (as KubeRay does).
    assert [e["name"] for e in container["env"]] == [
        "PYTHONUNBUFFERED", "PYTHONUNBUFFERED", "RAY_DASHBOARD_ADDRESS", "RAY_JOB_SUBMISSION_ID",
    ]  # fmt: skip
    assert "resources" not in container


def test_a_user_template_with_a_command_keeps_it() -> None:
    job = make_job(submitterPodTemplate=user_template(["python", "submit.py"]))
    (container,) = build_submitter_job(params=params(job))["spec"]["template"]["spec"]["containers"]
    assert (container["command"], container["args"]) == (["python", "submit.py"], ["run"])
    assert container["env"][-1] == {"name": "RAY_JOB_SUBMISSION_ID", "value": "demo-xxxxx"}


def test_token_auth_env_and_k8s_token_volume() -> None:
    document = job_document()
    document["spec"]["rayClusterSpec"]["authOptions"] = {"mode": "token"}
    secret_job = RayJob.model_validate(document)
    cluster = own_cluster(secret_job, "demo-abcde")
    built = build_submitter_job(params=params(secret_job, cluster=cluster))
    spec = built["spec"]["template"]["spec"]
    env = spec["containers"][0]["env"]
    assert env[3:] == [
        {"name": "RAY_AUTH_MODE", "value": "token"},
        {"name": "RAY_AUTH_TOKEN",
         "valueFrom": {"secretKeyRef": {"name": "demo-abcde", "key": "auth_token"}}},
    ]  # fmt: skip
    assert "volumes" not in spec
    document["spec"]["rayClusterSpec"]["authOptions"]["enableK8sTokenAuth"] = True
    k8s_job = RayJob.model_validate(document)
    spec = build_submitter_job(params=params(k8s_job, cluster=own_cluster(k8s_job)))["spec"][
        "template"
    ]["spec"]
    container = spec["containers"][0]
    assert [e["name"] for e in container["env"][3:]] == [
        "RAY_AUTH_MODE",
        "RAY_ENABLE_K8S_TOKEN_AUTH",
    ]
    assert container["volumeMounts"] == [
        {
            "name": "ray-token",
            "readOnly": True,
            "mountPath": "/var/run/secrets/ray.io/serviceaccount",
        }
    ]
    assert spec["volumes"] == [
        {
            "name": "ray-token",
            "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
        }
    ]


def test_a_selector_job_without_template_or_cluster_cannot_pick_an_image() -> None:
    document = job_document(clusterSelector={"ray.io/cluster": "shared"})
    del document["spec"]["rayClusterSpec"]
    with pytest.raises(RenderError, match="submitterPodTemplate"):
        build_submitter_job(params=params(RayJob.model_validate(document)))


def test_sidecar_container() -> None:
    job = make_job(submissionMode="SidecarMode")
    plain = sidecar_submitter_container(params(job, dashboard_url=""))
    assert plain["name"] == "ray-job-submitter" and "restartPolicy" not in plain
    assert plain["args"] == [submit_command(params(job), sidecar=True)]
    assert plain["env"][1] == {"name": "RAY_DASHBOARD_ADDRESS"}  # not known yet: no value
    gated = sidecar_submitter_container(params(job), restart_gate=True)
    assert gated["restartPolicy"] == "OnFailure"
    assert gated["args"] == [submit_command(params(job), sidecar=True, sidecar_restart=True)]


# --- the RayJob's cluster and head Service ----------------------------------------------


def test_the_rayjobs_cluster() -> None:
    job = make_job()
    built = build_rayjob_cluster(job=job, cluster_name="demo-xxxxx", job_id="demo-xxxxx")
    assert (built["apiVersion"], built["kind"]) == ("ray.io/v1", "RayCluster")
    assert built["metadata"] == {
        "name": "demo-xxxxx",
        "namespace": "ns",
        "labels": {
            "ray.io/job-submission-mode": "K8sJobMode",
            "ray.io/originated-from-cr-name": "demo",
            "ray.io/originated-from-crd": "RayJob",
            "team": "a",
        },
        "annotations": {"note": "kept"},
        "ownerReferences": [
            {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "demo", "uid": "job-uid",
             "controller": True, "blockOwnerDeletion": True}
        ],
    }  # fmt: skip
    assert job.spec.ray_cluster_spec is not None
    assert built["spec"] == job.spec.ray_cluster_spec.to_dict()
    assert built["spec"]["headGroupSpec"]["template"]["spec"] == {
        "containers": [{"name": "ray-head", "image": HEAD_IMAGE}]
    }


@pytest.mark.parametrize("gate", [False, True])
def test_a_sidecar_mode_cluster(gate: bool) -> None:
    job = make_job(submissionMode="SidecarMode")
    options = RenderOptions(feature_gates=FeatureGates(sidecar_submitter_restart=gate))
    before = job.model_dump()
    built = build_rayjob_cluster(
        job=job, cluster_name="demo-xxxxx", job_id="demo-1", options=options
    )
    assert job.model_dump() == before
    assert built["metadata"]["annotations"] == {
        "note": "kept",
        "ray.io/disable-provisioned-head-restart": "true",
    }
    assert built["metadata"]["labels"]["ray.io/job-submission-mode"] == "SidecarMode"
    head = built["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["restartPolicy"] == "Never"
    ray, submitter = head["containers"]
    assert ray["name"] == "ray-head"
    expected = sidecar_submitter_container(
        params(job, job_id="demo-1", dashboard_url="", options=options), restart_gate=gate
    )
    assert submitter == expected
    assert ("restartPolicy" in submitter) is gate


def test_a_selector_job_has_no_cluster() -> None:
    document = job_document(clusterSelector={"ray.io/cluster": "shared"})
    del document["spec"]["rayClusterSpec"]
    with pytest.raises(RenderError, match="clusterSelector"):
        build_rayjob_cluster(job=RayJob.model_validate(document), cluster_name="x", job_id="y")


def test_the_rayjob_head_service_points_at_its_cluster() -> None:
    document = job_document()
    spec = document["spec"]["rayClusterSpec"]
    spec["headServiceAnnotations"] = {"only": "on the cluster's own Service"}
    spec["headGroupSpec"]["headService"] = {"metadata": {"name": "custom", "labels": {"x": "y"}}}
    job = RayJob.model_validate(document)
    cluster = own_cluster(job, "demo-abcde")
    service = build_rayjob_head_service(job=job, cluster=cluster, options=RenderOptions())
    meta = service["metadata"]
    assert (meta["name"], meta["namespace"]) == ("demo-head-svc", "ns")
    assert meta["labels"] == {
        "ray.io/identifier": "demo-head",
        "ray.io/node-type": "head",
        "ray.io/originated-from-cr-name": "demo",
        "ray.io/originated-from-crd": "RayJob",
    }
    assert "annotations" not in meta
    assert [ref["kind"] for ref in meta["ownerReferences"]] == ["RayJob"]
    assert service["spec"]["selector"]["ray.io/cluster"] == "demo-abcde"
    assert service["spec"]["selector"]["ray.io/identifier"] == "demo-abcde-head"
    ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    assert ports["dashboard"] == 8265


# --- render_manifest --------------------------------------------------------------------


def test_the_example_rayjob_renders_its_cluster_service_and_job() -> None:
    document = yaml.safe_load((MANIFESTS / "rayjob.yaml").read_text())
    result = render_manifest(params=ManifestRenderParams(document=document))
    kinds = [(o["kind"], o["metadata"].get("name") or o["metadata"]["generateName"])
             for o in result.objects]  # fmt: skip
    assert kinds == [
        ("RayCluster", "rayjob-sample-xxxxx"),
        ("Service", "rayjob-sample-xxxxx-head-svc"),
        ("Pod", "rayjob-sample-xxxxx-head-"),
        ("Pod", "rayjob-sample-xxxxx-small-group-worker-"),
        ("Service", "rayjob-sample-head-svc"),
        ("Job", "rayjob-sample"),
    ]
    job = result.objects[-1]
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[1] == {
        "name": "RAY_DASHBOARD_ADDRESS",
        "value": "rayjob-sample-xxxxx-head-svc.default.svc.cluster.local:8265",
    }
    assert env[2] == {"name": "RAY_JOB_SUBMISSION_ID", "value": "rayjob-sample-xxxxx"}
    assert len(result.notes) == 2 and all("xxxxx" in note for note in result.notes)
    again = render_manifest(params=ManifestRenderParams(document=copy.deepcopy(document)))
    assert again == result


def test_a_selector_rayjob_renders_only_its_submitter_job() -> None:
    document = job_document(clusterSelector={"ray.io/cluster": "shared"}, jobId="fixed")
    del document["spec"]["rayClusterSpec"]
    result = render_manifest(params=ManifestRenderParams(document=document))
    (job,) = result.objects
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "<head image of RayCluster shared>"
    assert container["env"][1]["value"] == "shared-head-svc.ns.svc.cluster.local:8265"
    assert container["env"][2]["value"] == "fixed"
    assert any("clusterSelector" in note and "shared" in note for note in result.notes)


def test_a_suspended_rayjob_renders_nothing_and_other_modes_no_job() -> None:
    suspended = render_manifest(
        params=ManifestRenderParams(
            document=job_document(suspend=True, shutdownAfterJobFinishes=True)
        )
    )
    assert suspended.objects == () and "suspend" in suspended.notes[0]
    http = render_manifest(
        params=ManifestRenderParams(document=job_document(submissionMode="HTTPMode"))
    )
    assert [o["kind"] for o in http.objects][-1] == "Service"
    assert any("HTTPMode" in note for note in http.notes)
