"""Models: the functional ``Model`` and ``Sequential``; ``clone_model`` and
``model_from_json``."""
from hiapi.models.functional import Model
from hiapi.models.sequential import Sequential
from hiapi.models.cloning import clone_model, model_from_json
from hiapi.saving import load_model
