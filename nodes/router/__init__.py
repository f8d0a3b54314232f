"""The station router daemon (docs/router.md): ``run(config) -> int`` or ``python -m nodes.router``.

Importing this package does no work (no threads, no event loop): the orchestrator imports it in a
zygote and forks stations from it.
"""

from nodes.router.main import EXIT_CONFIG, EXIT_ERROR, EXIT_MEDIUM_GONE, EXIT_OK, run

__all__ = ["EXIT_CONFIG", "EXIT_ERROR", "EXIT_MEDIUM_GONE", "EXIT_OK", "run"]
