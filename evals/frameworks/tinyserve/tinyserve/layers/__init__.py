"""Layers of tinyserve's models: linear (plain and MXFP4), norms, attention, MoE."""
