"""The label keys, values and resources scenarios use (shared by `generate` and `constraints`)."""

from __future__ import annotations

GPU = "example.com/gpu"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"
CORES = "example.com/cores"  # a number, for Gt/Lt
DISK = "disktype"
TOPOLOGY_KEYS = (ZONE, HOST, RACK)
APPS = ("web", "db", "cache")
TAINT_KEYS = ("dedicated", "gpu", "maintenance")
