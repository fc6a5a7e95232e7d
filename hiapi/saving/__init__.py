"""Saving and loading models and weights (one file each, written atomically)."""
from hiapi.saving.model_file import load_model, load_weights, save_model, save_weights
from hiapi.saving.registry import register_keras_serializable
