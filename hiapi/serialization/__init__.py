"""The floor that serialization stands on, below the layers, losses and metrics that use it:
the registry of names (``object_registration``), how losses and metrics are written
(``objects``), and the functions of the saving floor that lower floors call
(``saving_functions``). ``hiapi.saving`` is the public face of all of it."""
