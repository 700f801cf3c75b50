"""Pretraining-corpus analysis: dish and country mentions in text corpora, locally or on Dask."""
