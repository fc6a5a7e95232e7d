"""Parameter servers: sharded parameters, bounded staleness, backup workers
(``ParameterServerStrategy``)."""
from hiapi.distribute.parameter_server.stats import ParameterServerStats
from hiapi.distribute.parameter_server.strategy import ParameterServerStrategy

__all__ = ["ParameterServerStrategy", "ParameterServerStats"]
