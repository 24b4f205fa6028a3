"""Test-suite settings: one torch thread (fast and deterministic on small problems)."""

import torch

torch.set_num_threads(1)
