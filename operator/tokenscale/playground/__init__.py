"""``tokenscale playground``: the whole autoscaling loop on one machine, on a live twin of a
vLLM fleet. A shell layer (processes, sockets, the clock), above everything the operator is made
of and imported by nothing but the CLI (the layers contract).

It stands in for the cluster around the operator — a kubelet that runs pods and marks them
Ready, a user who applies the manifest, clients that send traffic — so, unlike the operator's
own layers (where only ``kube`` writes to the API), it talks to the API server itself.

- :mod:`.processes`, :mod:`.cluster`, :mod:`.prometheus`: real components as child processes
  (shared with the integration tests: one implementation).
- :mod:`.twin`: one vLLM pod's twin, its OpenAI API; :mod:`.exposition`: its ``/metrics``;
  :mod:`.engine`: the simulator's replica advanced in real time × speed.
- :mod:`.runner`: the pod runner; :mod:`.load`: trace replay and router;
  :mod:`.service`: the spec and the engine it models; :mod:`.session`: one run.
"""
