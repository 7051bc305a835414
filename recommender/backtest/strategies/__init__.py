"""The baseline strategies every backtest can run (vpa, krr, autopilot, oracle)."""
