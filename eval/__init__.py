"""Evaluation: tasks, prompts, model backends, metrics and reports (see SPEC.md).

Model code needs the ``eval`` extra (``pip install culturebench[eval]``); the vLLM engine
needs the ``gpu`` extra.
"""
