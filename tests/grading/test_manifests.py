"""Issue 27: what grades on Kubernetes and what serves a class there, checked offline (no cluster can be
had here): grader/cluster/kubernetes' Jobs against Kubernetes' own schemas (kubernetes-validate), and
hub/z2jh-values.yaml, merged into the jupyterhub chart's defaults as Helm merges them, against the
chart's schema (both from Zero to JupyterHub, in hub/z2jh/)."""
import json
import shlex

import jsonschema
import kubernetes_validate
import pytest
import yaml

from grader.build import ROOT

KUBERNETES = ("1.30", "1.33")  # 1.30: the first with per-index retries and appArmorProfile both
JOBS = ROOT / "grader" / "cluster" / "kubernetes"
Z2JH = ROOT / "hub" / "z2jh"


def job(name):
    return yaml.safe_load((JOBS / f"{name}.yaml").read_text())


@pytest.mark.parametrize("version", KUBERNETES)
@pytest.mark.parametrize("name", ["prepare", "grade"])
def test_the_jobs_are_valid_kubernetes(name, version):
    kubernetes_validate.validate(job(name), version, strict=True)


def test_a_mistake_in_a_job_is_caught():
    broken = job("grade")
    broken["spec"]["template"]["spec"]["containers"][0]["resources"]["limit"] = {"cpu": "2"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES[-1], strict=True)


def test_each_pod_of_the_indexed_job_grades_its_shard_with_what_the_sandbox_needs():
    spec = job("grade")["spec"]
    container = spec["template"]["spec"]["containers"][0]
    env = {variable["name"]: variable.get("value") for variable in container["env"]}
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == int(env["SHARDS"])
    assert spec["backoffLimitPerIndex"] >= 1  # a failed shard is retried on its own
    command = shlex.split(container["command"][-1])
    assert command[:4] == ["exec", "python", "-m", "grader"] and "$JOB_COMPLETION_INDEX/$SHARDS" in command
    assert spec["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == [2]  # a refusal: not retried
    assert container["resources"]["limits"] == container["resources"]["requests"]
    security = container["securityContext"]
    assert security["capabilities"] == {"add": ["SYS_ADMIN", "NET_ADMIN"]} and security["runAsUser"] == 0
    assert security["seccompProfile"] == security["appArmorProfile"] == {"type": "Unconfined"}
    assert job("prepare")["spec"]["template"]["spec"]["containers"][0]["securityContext"] == security


def z2jh_errors(values):
    """What the chart's schema finds wrong in ``values`` merged into the chart's defaults."""
    def merge(base, override):
        if isinstance(base, dict) and isinstance(override, dict):
            return {**base, **{key: merge(base.get(key), value) for key, value in override.items()}}
        return override
    schema = json.loads((Z2JH / "values.schema.json").read_text())
    merged = merge(yaml.safe_load((Z2JH / "values.yaml").read_text()), values)
    return [error.message for error in jsonschema.Draft7Validator(schema).iter_errors(merged)]


def test_the_hubs_zero_to_jupyterhub_values_are_valid_for_the_chart():
    assert z2jh_errors(yaml.safe_load((ROOT / "hub" / "z2jh-values.yaml").read_text())) == []


def test_a_mistake_in_the_values_is_caught():
    assert z2jh_errors({"singleuser": {"memory": {"limt": "4G"}}})
