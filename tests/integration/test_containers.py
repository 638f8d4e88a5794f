# SPDX-License-Identifier: Apache-2.0
"""The container and Kubernetes examples (Dockerfile, docker-compose.yml,
deploy/kubernetes/fencelock.yaml; docs/operations.md "Containers"). No container engine nor
Kubernetes runs here, so what can be checked without them is:

- the manifests against their schemas, with validators from the registries
  (scripts/deploy-tools.sh): docker-compose.yml by compose-go, the Compose specification's
  reference loader; the Kubernetes objects by kubernetes-validate --strict (the API's JSON
  schemas, unknown fields refused). A broken copy of each must fail the same validator: the
  check bites.
- every fencelockd command line they hold (the image's ENTRYPOINT and CMD, each compose
  service's command, the StatefulSet's script for each ordinal) is accepted by fencelockd's
  own settings rules (`--print-config`, which checks them exactly as a start does) and gives
  the node id, addresses and cluster the example means.
- the probes name HTTP paths the server answers (/readyz, /livez).

The image's build step itself (deploy/container/install-debs.sh) runs against the built
packages in test_packages.py."""

import json
import os
import re
import subprocess

from helpers import eq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCKERFILE = os.path.join(ROOT, "Dockerfile")
COMPOSE = os.path.join(ROOT, "docker-compose.yml")
K8S = os.path.join(ROOT, "deploy", "kubernetes", "fencelock.yaml")
TOOLS = os.path.join(ROOT, "build", "deploy-tools")
PACKAGED_CONF = "/etc/fencelock/fencelockd.conf"  # what the image has from the package:
CONF = os.path.join(ROOT, "debian", "fencelockd.conf")  # this file
K8S_VERSION = "1.33.0"  # the Kubernetes release whose API schemas the example must meet


def tools():
    r = subprocess.run([os.path.join(ROOT, "scripts", "deploy-tools.sh"), TOOLS],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, "scripts/deploy-tools.sh: %s %s" % (r.stdout, r.stderr)


def run(argv, timeout=120):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def print_config(binary, argv):
    """{key: value} of fencelockd `argv` --print-config (its first word replaced by binary)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FENCELOCK_")}
    argv = [CONF if a == PACKAGED_CONF else a for a in argv]
    r = subprocess.run([binary] + argv[1:] + ["--print-config"], capture_output=True, text=True,
                       timeout=60, env=env)
    eq(r.returncode, 0, "%s --print-config: %s" % (" ".join(argv), r.stderr))
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^#? ?([a-z][a-z0-9-]*) = ?(.*?)\s+# ", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def dockerfile_argv():
    """The image's ENTRYPOINT + CMD (exec form)."""
    with open(DOCKERFILE) as f:
        text = f.read()
    entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M).group(1))
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))
    return entry, cmd


def compose_model(path=COMPOSE):
    r = run([os.path.join(TOOLS, "composecheck"), path])
    return r


def k8s_objects(path=K8S):
    """The manifest's documents as JSON, through the validator's own PyYAML."""
    py = os.path.join(TOOLS, "venv", "bin", "python")
    r = run([py, "-c", "import json, sys, yaml; "
             "print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))", path])
    eq(r.returncode, 0, "yaml: %s" % r.stderr)
    return json.loads(r.stdout)


def kubernetes_validate(path):
    return run([os.path.join(TOOLS, "venv", "bin", "kubernetes-validate"), "--strict",
                "-k", K8S_VERSION, path])


def test_compose_file_validates_and_its_commands_start(ctx):
    tools()
    r = compose_model()
    eq(r.returncode, 0, "composecheck docker-compose.yml: %s" % r.stderr)
    model = json.loads(r.stdout)
    services = model["services"]
    eq(sorted(services), ["node1", "node2", "node3"], "services")
    entry, _ = dockerfile_argv()
    members = None
    for name, svc in sorted(services.items()):
        n = int(name[-1])
        cfg = print_config(ctx.binary, entry + svc["command"])
        eq(cfg.get("id"), str(n), "%s: id" % name)
        eq(cfg.get("data-dir"), "/var/lib/fencelock", "%s: data-dir from the image's conf" % name)
        members = members or cfg.get("initial-cluster")
        eq(cfg.get("initial-cluster"), members, "%s: the same --initial-cluster" % name)
        assert "%d=%s" % (n, cfg.get("raft-listen")) in members.split(","), (name, cfg)
        assert any(p.endswith(":7480") and p.startswith("127.0.0.1:") for p in svc["ports"]), \
            "%s publishes its client port on the host's loopback only: %s" % (name, svc["ports"])
    # The check bites: a service with an unknown key, and one with a malformed port.
    for bad in ("    restart_policy: always\n", "    healthcheck: \"yes\"\n"):
        with open(COMPOSE) as f:
            text = f.read()
        broken = os.path.join(ctx.workdir, "compose-broken.yml")
        with open(broken, "w") as f:
            f.write(text.replace("  node3:\n", "  node3:\n" + bad, 1))
        r = compose_model(broken)
        assert r.returncode != 0, "composecheck accepted a broken file (%r)" % bad


def test_kubernetes_example_validates_and_its_command_starts(ctx):
    tools()
    r = kubernetes_validate(K8S)
    eq(r.returncode, 0, "kubernetes-validate: %s %s" % (r.stdout, r.stderr))
    objs = k8s_objects()
    kinds = sorted(o["kind"] for o in objs)
    eq(kinds, ["NetworkPolicy", "PodDisruptionBudget", "Service", "Service", "StatefulSet"],
       "objects")
    sts = [o for o in objs if o["kind"] == "StatefulSet"][0]
    eq(sts["spec"]["podManagementPolicy"], "Parallel", "all pods start at once")
    peers = [o for o in objs if o["kind"] == "Service"
             and o["metadata"]["name"] == sts["spec"]["serviceName"]][0]
    assert peers["spec"]["clusterIP"] == "None" and peers["spec"]["publishNotReadyAddresses"]
    c = sts["spec"]["template"]["spec"]["containers"][0]
    eq(c["readinessProbe"]["httpGet"]["path"], "/readyz", "readiness")
    eq(c["livenessProbe"]["httpGet"]["path"], "/livez", "liveness")
    eq(c["command"], ["/bin/sh", "-c"], "command")
    script = c["args"][0]
    # The script for each ordinal, with fencelockd replaced by the built binary's
    # --print-config: the id comes from the ordinal, the addresses from the pod.
    replicas = sts["spec"]["replicas"]
    eq(replicas, 3, "replicas")
    members = None
    for ordinal in range(replicas):
        env = {k: v for k, v in os.environ.items() if not k.startswith("FENCELOCK_")}
        env.update(HOSTNAME="fencelock-%d" % ordinal, POD_IP="127.0.0.1", POD_NAMESPACE="ns")
        s = script.replace("exec /usr/sbin/fencelockd", "exec %s --print-config" % ctx.binary)
        assert PACKAGED_CONF in s, "the script uses the packaged conf file"
        s = s.replace(PACKAGED_CONF, CONF)
        r = subprocess.run(["/bin/sh", "-c", s], capture_output=True, text=True, timeout=60,
                           env=env)
        eq(r.returncode, 0, "the StatefulSet's command for ordinal %d: %s" % (ordinal, r.stderr))
        cfg = {}
        for line in r.stdout.splitlines():
            m = re.match(r"^#? ?([a-z][a-z0-9-]*) = ?(.*?)\s+# ", line)
            if m:
                cfg[m.group(1)] = m.group(2).strip()
        eq(cfg.get("id"), str(ordinal + 1), "id of fencelock-%d" % ordinal)
        eq(cfg.get("raft-listen"), "fencelock-%d.fencelock-peers.ns.svc.cluster.local:7481"
           % ordinal, "raft-listen")
        eq(cfg.get("listen"), "127.0.0.1:7480", "listen: the pod IP")
        members = members or cfg.get("initial-cluster")
        eq(cfg.get("initial-cluster"), members, "the same --initial-cluster everywhere")
    eq(len(members.split(",")), 3, members)
    # The check bites: an unknown field and a wrong type each fail the same validator.
    with open(K8S) as f:
        text = f.read()
    for old, new in (("  replicas: 3\n", "  replicas: three\n"),
                     ("  podManagementPolicy: Parallel\n",
                      "  podManagementPolicy: Parallel\n  podStartOrder: any\n")):
        assert old in text, old
        broken = os.path.join(ctx.workdir, "k8s-broken.yaml")
        with open(broken, "w") as f:
            f.write(text.replace(old, new, 1))
        r = kubernetes_validate(broken)
        assert r.returncode != 0, "kubernetes-validate accepted %r: %s" % (new, r.stdout)


def test_dockerfile_command_and_probe_paths(ctx):
    """The image's default command passes fencelockd's rules; the probes' paths are served."""
    entry, cmd = dockerfile_argv()
    eq(entry[:3], ["/usr/sbin/fencelockd", "--config", "/etc/fencelock/fencelockd.conf"],
       "ENTRYPOINT")
    cfg = print_config(ctx.binary, entry + cmd)
    eq(cfg.get("data-dir"), "/var/lib/fencelock", "data-dir")
    srv = ctx.server()
    import urllib.request
    for path in ("/readyz", "/livez", "/health", "/metrics"):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (srv.http_port, path),
                                    timeout=10) as r:
            eq(r.status, 200, path)


# The first run makes build/deploy-tools (a pip install and a Go build of compose-go).
test_compose_file_validates_and_its_commands_start.timeout = 900
test_kubernetes_example_validates_and_its_command_starts.timeout = 900
