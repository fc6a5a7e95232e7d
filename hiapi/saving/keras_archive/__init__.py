"""Keras 3's own file formats: ``.keras`` archives and ``.weights.h5`` weights files.

``model.save("m.keras")`` and ``save_weights("x.weights.h5")`` write them (h5py from the
``keras-format`` extra), ``hiapi.models.load_model`` and ``load_weights`` read them, whichever of
Keras and hiapi wrote them. ``.hiapi`` stays the native format for everything else.
"""
KERAS_ARCHIVE_SUFFIX, KERAS_WEIGHTS_SUFFIX = ".keras", ".weights.h5"
