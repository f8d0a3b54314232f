"""Cross-layer control of real Linux TCP (issue 5): the endpoint agent, its BPF kernel side,
the API the extensions call, and per-connection observability. See docs/tcpctl.md."""
