"""What each command's --help says beyond its flags: a description where the command gives none, and examples.

Kept in one table so that every command answers `--help` alike (tests/unit/cli/test_help.py walks them all).
"""

from __future__ import annotations

import argparse

# path -> (description used when the command sets none, examples: comment line then command line)
HELP: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "kubesched extender": (
        "The scheduler extender kube-scheduler calls over HTTP (filter, prioritize, bind, preempt).",
        (
            (
                "serve the example policy over the example nodes",
                "kubesched extender serve --policy custom-label --nodes examples/nodes.yaml",
            ),
        ),
    ),
    "kubesched extender serve": (
        "Serve a policy as a kube-scheduler extender: POST /filter, /prioritize, /bind, /preempt, plus "
        "/healthz, /readyz and /metrics. Nodes come from a file (--nodes) or a cluster's list + watch; the cluster is "
        "found as kubectl finds it: --kubeconfig, else $KUBECONFIG, else in-cluster in a pod, else ~/.kube/config.",
        (
            ("on a node file, for a try", "kubesched extender serve --policy custom-label --nodes examples/nodes.yaml"),
            ("against the cluster kubectl talks to", "kubesched extender serve --policy custom-label"),
            (
                "against a cluster, over HTTPS",
                "kubesched extender serve --policy custom-label --kubeconfig ~/.kube/config "
                "--listen 0.0.0.0:8888 --tls-cert tls.crt --tls-key tls.key",
            ),
        ),
    ),
    "kubesched config": (
        "KubeSchedulerConfiguration files: generate the extenders part, validate a file.",
        (("validate a file", "kubesched config validate examples/scheduler-config.yaml"),),
    ),
    "kubesched config extender": (
        "",
        (
            (
                "kube-scheduler's config for an extender on 127.0.0.1:8888",
                "kubesched config extender --url-prefix "
                "http://127.0.0.1:8888 --policy custom-label --bind-verb bind --preempt-verb preempt > sched.yaml",
            ),
        ),
    ),
    "kubesched config validate": (
        "",
        (("every problem, each with its field path (exit 2 if any)", "kubesched config validate sched.yaml"),),
    ),
    "kubesched dev-cluster": (
        "",
        (("a local control plane with 3 fake nodes", "kubesched dev-cluster up --nodes 3"),),
    ),
    "kubesched dev-cluster up": (
        "",
        (
            ("3 fake nodes, kube-scheduler included", "kubesched dev-cluster up --nodes 3"),
            ("without kube-scheduler, for kubesched's own", "kubesched dev-cluster up --no-scheduler"),
            (
                "GPU nodes in zones, from a file; JSON state on stdout",
                "kubesched dev-cluster up --nodes-file gpu.yaml -o json",
            ),
        ),
    ),
    "kubesched dev-cluster status": (
        "",
        (
            (
                "point kubectl at the running dev-cluster",
                "export KUBECONFIG=$(kubesched dev-cluster status -o json | jq -r .kubeconfig)",
            ),
        ),
    ),
    "kubesched dev-cluster restart-scheduler": (
        "",
        (("run kube-scheduler with another config", "kubesched dev-cluster restart-scheduler --config sched-v2.yaml"),),
    ),
    "kubesched dev-cluster down": (
        "",
        (
            ("stop the dev-cluster started in another terminal (or in the background)", "kubesched dev-cluster down"),
            ("stop one of several", "kubesched dev-cluster down --dir /tmp/kubesched-cp-b3wvpsbo"),
        ),
    ),
    "kubesched dev-cluster build": (
        "Build (once, then cached) the etcd, kube-apiserver and kube-scheduler binaries from the Go module proxy.",
        (("build or check the cache", "kubesched dev-cluster build"),),
    ),
    "kubesched scheduler": ("", ()),  # its own
    "kubesched scheduler run": ("", ()),
    "kubesched plugins": (
        "The scheduling plugins a configuration can name.",
        (("list them", "kubesched plugins list"),),
    ),
    "kubesched plugins list": (
        "List every plugin a scheduler configuration can name: built-in, from entry points (group "
        "kubesched.plugins) and from a configuration's pluginModules, with extension points and source.",
        (
            ("as a table", "kubesched plugins list"),
            ("with a configuration's own modules, as JSON", "kubesched plugins list --config sched.yaml -o json"),
        ),
    ),
    "kubesched webhook": (
        "The pod admission webhook (AdmissionReview v1).",
        (
            (
                "serve the example rules",
                "kubesched webhook serve --config examples/webhook-config.yaml "
                "--tls-cert certs/tls.crt --tls-key certs/tls.key",
            ),
        ),
    ),
    "kubesched webhook serve": (
        "Serve /validate and /mutate for pods: the rules of --config (requireLabel, setScheduler, feasibility, "
        "Python rules), over HTTPS, with /healthz and /readyz.",
        (
            (
                "with a CA and certificate from `kubesched certs`",
                "kubesched webhook serve --config "
                "examples/webhook-config.yaml --tls-cert certs/tls.crt --tls-key certs/tls.key",
            ),
        ),
    ),
    "kubesched certs": (
        "Make a CA and a serving certificate (ca.crt, tls.crt, tls.key) for the webhook's Service.",
        (
            (
                "for the Service kubesched-webhook in kube-system",
                "kubesched certs --out certs --service kubesched-webhook --namespace kube-system",
            ),
        ),
    ),
    "kubesched manifests": (
        "",
        (
            ("everything, to apply", "kubesched manifests all --generate-certs | kubectl apply -f -"),
            ("the custom scheduler only, one file per object", "kubesched manifests scheduler -o deploy/"),
            (
                "your scheduler config and plugin files",
                "kubesched manifests scheduler --config sched.yaml --plugin-module plugins/gpu.py",
            ),
            (
                "the same, as values of the Helm chart",
                "kubesched manifests scheduler --config sched.yaml --plugin-module plugins/gpu.py --helm-values",
            ),
        ),
    ),
}


def apply(parser: argparse.ArgumentParser, path: str = "kubesched") -> None:
    """Give every command below `parser` its description (if missing) and examples; RawDescription keeps lines."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            sub_path = f"{path} {name}"
            description, examples = HELP.get(sub_path, ("", ()))
            if not sub.description:
                sub.description = description or next(
                    (a.help for a in action._choices_actions if a.dest == name and a.help), None
                )
            if examples:
                lines = [f"  # {comment}:\n  {command}" for comment, command in examples]
                sub.epilog = ("Examples:\n" if len(examples) > 1 else "Example:\n") + "\n".join(lines) + "\n"
            sub.formatter_class = argparse.RawDescriptionHelpFormatter
            apply(sub, sub_path)
