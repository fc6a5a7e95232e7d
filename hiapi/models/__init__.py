"""Models: the functional ``Model`` and ``Sequential``."""
from hiapi.models.functional import Model
from hiapi.models.sequential import Sequential
from hiapi.saving import load_model
