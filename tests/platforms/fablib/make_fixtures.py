#!/usr/bin/env python3
"""Writes the saved-fablib-slice fixtures of tests/platforms/test_fablib_import.cpp.

Written from the FIM schema (fabric-testbed/InformationModel, abc_property_graph_constants.py and
component_catalog.json), not copied from fablib output: vertices carry Class, Name, NodeID,
GraphID, Type, Model, Site, Capacities / LabelAllocations / ReservationInfo as JSON strings; edges
are `has` (ownership) or `connects` (wiring). A NIC has an OVS NetworkService that has one
ConnectionPoint per port; a network has a ServicePort ConnectionPoint per interface, wired to the
NIC's port through a Link (L2Path). GraphML with d0.. keys, as networkx writes them, or node-link
JSON. Data-plane addresses are where fablib keeps them (fabrictestbed-extensions, interface.py and
network_service.py): an interface's UserData {"fablib_data": {"addr", "dev"}}, a network's Gateway
{"ipv4_subnet", "ipv4"} (FABNetv4) or UserData {"fablib_data": {"subnet": {"subnet"}}} (L2). Run from this folder: ./make_fixtures.py (writes *.graphml and *.json next to itself).
"""
import json
import uuid
from xml.sax.saxutils import escape

GRAPH_ID = "5f0e0c5e-0000-4000-8000-fab7a1000000"


class Topology:
    def __init__(self, seed):
        self.nodes = []  # (id, props)
        self.edges = []  # (a, b, class)
        self.seed = seed
        self.vms = {}

    def _id(self):
        return str(uuid.UUID(int=self.seed * 10**6 + len(self.nodes)))

    def node(self, **props):
        nid = self._id()
        props = {"NodeID": nid, "GraphID": GRAPH_ID, **props}
        self.nodes.append((nid, {k: (json.dumps(v) if isinstance(v, dict) else v) for k, v in props.items()}))
        return nid

    def edge(self, a, b, cls):
        self.edges.append((a, b, cls))

    def vm(self, name, site, gpus=(), nics=(), cores=16, ram=64, disk=100, instance_parent=None):
        props = dict(Class="NetworkNode", Name=name, Type="VM", Site=site,
                     Capacities={"core": cores, "ram": ram, "disk": disk}, ImageRef="default_ubuntu_22,qcow2")
        if instance_parent:
            props.update(LabelAllocations={"instance": f"instance-{name}", "instance_parent": instance_parent},
                         ReservationInfo={"reservation_id": f"res-{name}", "reservation_state": "Active"},
                         MgmtIp="10.20.30.%d" % (len(self.vms) + 10))
        v = self.node(**props)
        ports = []
        for i, model in enumerate(gpus):
            c = self.node(Class="Component", Name=f"{name}-gpu{i}", Type="GPU", Model=model,
                          Details=f"NVIDIA Corporation [{model}] (rev a1)")
            self.edge(v, c, "has")
        for i, (ntype, model, nports) in enumerate(nics):
            c = self.node(Class="Component", Name=f"{name}-nic{i}", Type=ntype, Model=model)
            self.edge(v, c, "has")
            ovs = self.node(Class="NetworkService", Name=f"{name}-nic{i}-l2ovs", Type="OVS", Layer="L2")
            self.edge(c, ovs, "has")
            for p in range(1, nports + 1):
                cp = self.node(Class="ConnectionPoint", Name=f"{name}-nic{i}-p{p}",
                               Type="SharedPort" if ntype == "SharedNIC" else "DedicatedPort",
                               Labels={"local_name": f"p{p}"})
                self.edge(ovs, cp, "has")
                ports.append(cp)
        self.vms[name] = ports
        return v

    def set_props(self, nid, **props):
        for i, (n, p) in enumerate(self.nodes):
            if n == nid:
                p.update({k: (json.dumps(v) if isinstance(v, dict) else v) for k, v in props.items()})

    def network(self, name, ntype, attach, site=None, **extra):
        """attach: list of (vm name, port index) or (vm name, port index, address, device)."""
        props = dict(Class="NetworkService", Name=name, Type=ntype, Layer="L3" if "FABNet" in ntype else "L2")
        if site:
            props["Site"] = site
        ns = self.node(**props, **extra)
        for vm, port, *address in attach:
            if address:
                self.set_props(self.vms[vm][port],
                               UserData={"fablib_data": {"addr": address[0], "dev": address[1], "mode": "config"}})
            sp = self.node(Class="ConnectionPoint", Name=f"{name}-{vm}-sp", Type="ServicePort")
            self.edge(ns, sp, "has")
            link = self.node(Class="Link", Name=f"{name}-{vm}-link", Type="L2Path", Layer="L2")
            self.edge(sp, link, "connects")
            self.edge(link, self.vms[vm][port], "connects")
        return ns

    def graphml(self):
        keys = sorted({k for _, p in self.nodes for k in p})
        kid = {k: f"d{i}" for i, k in enumerate(keys)}
        ecls = f"d{len(keys)}"
        out = ['<?xml version=\'1.0\' encoding=\'utf-8\'?>',
               '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">']
        for k in keys:
            out.append(f'  <key id="{kid[k]}" for="node" attr.name="{k}" attr.type="string" />')
        out.append(f'  <key id="{ecls}" for="edge" attr.name="Class" attr.type="string" />')
        out.append('  <graph edgedefault="undirected">')
        for nid, props in self.nodes:
            out.append(f'    <node id="{nid}">')
            for k, v in props.items():
                out.append(f'      <data key="{kid[k]}">{escape(v)}</data>')
            out.append('    </node>')
        for a, b, cls in self.edges:
            out.append(f'    <edge source="{a}" target="{b}">')
            out.append(f'      <data key="{ecls}">{cls}</data>')
            out.append('    </edge>')
        out.append('  </graph>')
        out.append('</graphml>')
        return "\n".join(out) + "\n"

    def node_link(self):
        return json.dumps({"directed": False, "multigraph": False, "graph": {},
                           "nodes": [{"id": nid, **p} for nid, p in self.nodes],
                           "links": [{"source": a, "target": b, "Class": c} for a, b, c in self.edges]},
                          indent=1) + "\n"


SHARED = ("SharedNIC", "ConnectX-6", 1)


def two_site_l2sts():
    t = Topology(1)
    t.vm("utah-vm", "UTAH", gpus=["RTX6000", "RTX6000"], nics=[SHARED])
    t.vm("amst-vm", "AMST", gpus=["RTX6000", "RTX6000"], nics=[SHARED])
    t.vm("utah-monitor", "UTAH", nics=[SHARED], cores=2, ram=8, disk=10)  # no GPU: left out
    t.network("wan", "L2STS", [("utah-vm", 0), ("amst-vm", 0), ("utah-monitor", 0)])
    return t


def three_site_mesh():
    t = Topology(2)
    smart = ("SmartNIC", "ConnectX-6", 2)
    t.vm("tacc-vm", "TACC", gpus=["A30", "A30"], nics=[smart])
    t.vm("utah-vm", "UTAH", gpus=["A40"], nics=[smart])
    t.vm("mass-vm", "MASS", gpus=["Tesla T4"], nics=[("SmartNIC", "ConnectX-5", 2)])
    t.network("tacc-utah", "L2STS", [("tacc-vm", 0), ("utah-vm", 0)])
    t.network("utah-mass", "L2STS", [("utah-vm", 1), ("mass-vm", 0)])
    t.network("tacc-mass", "L2PTP", [("tacc-vm", 1), ("mass-vm", 1)])
    return t


def fabnetv4():
    t = Topology(3)
    t.vm("star-vm", "STAR", gpus=["RTX6000"], nics=[SHARED])
    t.vm("ncsa-vm", "NCSA", gpus=["A40", "A40"], nics=[("SmartNIC", "ConnectX-7-100", 2)])
    t.vm("wash-vm", "WASH", gpus=["Tesla T4"], nics=[SHARED])
    for vm, site in (("star-vm", "STAR"), ("ncsa-vm", "NCSA"), ("wash-vm", "WASH")):
        t.network(f"net-{site.lower()}", "FABNetv4", [(vm, 0)], site=site)
    return t


def instantiated():
    t = Topology(4)
    t.vm("utah-a", "UTAH", gpus=["RTX6000"], nics=[SHARED], instance_parent="utah-w3.fabric-testbed.net")
    t.vm("utah-b", "UTAH", gpus=["RTX6000"], nics=[SHARED], instance_parent="utah-w3.fabric-testbed.net")
    t.vm("utah-c", "UTAH", gpus=["RTX6000"], nics=[SHARED], instance_parent="utah-w5.fabric-testbed.net")
    t.network("lan", "L2Bridge", [("utah-a", 0), ("utah-b", 0), ("utah-c", 0)], site="UTAH")
    return t


def addressed():
    """An instantiated slice whose interfaces have their addresses: an L2STS with a subnet, and
    FABNetv4 at each site with its own subnet, reached through differently named devices."""
    t = Topology(5)
    t.vm("utah-vm", "UTAH", gpus=["RTX6000"], nics=[("SmartNIC", "ConnectX-6", 2)], instance_parent="utah-w1.fabric-testbed.net")
    t.vm("amst-vm", "AMST", gpus=["RTX6000"], nics=[("SmartNIC", "ConnectX-6", 2)], instance_parent="amst-w2.fabric-testbed.net")
    t.network("wan", "L2STS", [("utah-vm", 0, "192.168.10.1", "enp7s0"), ("amst-vm", 0, "192.168.10.2", "enp7s0")],
              UserData={"fablib_data": {"subnet": {"subnet": "192.168.10.0/24", "allocated_ips": []}}})
    t.network("net-utah", "FABNetv4", [("utah-vm", 1, "10.132.1.2", "enp8s0")], site="UTAH",
              Gateway={"ipv4_subnet": "10.132.1.0/24", "ipv4": "10.132.1.1"})
    t.network("net-amst", "FABNetv4", [("amst-vm", 1, "10.140.3.2", "enp9s0")], site="AMST",
              Gateway={"ipv4_subnet": "10.140.3.0/24", "ipv4": "10.140.3.1"})
    return t


if __name__ == "__main__":
    for name, topo, fmt in (("two-site-l2sts.graphml", two_site_l2sts(), "graphml"),
                            ("three-site-mesh.graphml", three_site_mesh(), "graphml"),
                            ("fabnetv4.json", fabnetv4(), "json"),
                            ("instantiated.graphml", instantiated(), "graphml"),
                            ("addressed.graphml", addressed(), "graphml")):
        with open(name, "w") as f:
            f.write(topo.graphml() if fmt == "graphml" else topo.node_link())
