"""A kubelet simulator for tests against a real API server (see simulator.py)."""

from tests.cluster.kubelet_sim.engine import EngineConfig
from tests.cluster.kubelet_sim.simulator import KubeletSimulator, SimulatorError
from tests.cluster.kubelet_sim.usage import UsageSeries

__all__ = ["EngineConfig", "KubeletSimulator", "SimulatorError", "UsageSeries"]
