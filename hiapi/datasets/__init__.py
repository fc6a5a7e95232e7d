"""Datasets with Keras's ``load_data()`` signature, read from the original IDX files."""
from hiapi.datasets import fashion_mnist, mnist
