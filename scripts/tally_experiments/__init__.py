"""Convergence experiments around the tally apps (heat2d, matmul, mcpi, reduce-bench).

Each experiment builds a list of app runs, executes the ones whose result file is missing or was
made with other parameters, reads the HDF5 files back, and writes CSV tables, PNG figures and a
Markdown section into the output folder. Entry point: scripts/experiments.py.
"""
