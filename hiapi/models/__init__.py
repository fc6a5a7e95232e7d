"""Models: the functional ``Model`` and ``Sequential``."""
from hiapi.models.functional import Model
from hiapi.models.sequential import Sequential
