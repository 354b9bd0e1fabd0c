"""The reference LSTM cell step in plain PyTorch ops; also the source that TorchScript and
torch.compile get, so the three differ only in how the same code is executed."""

from __future__ import annotations

from typing import Tuple

import torch

from . import OP


@OP.implementation("py", devices=("cpu", "cuda"))
def lstm_cell_py(
    x: torch.Tensor,
    h: torch.Tensor,
    c: torch.Tensor,
    w_ih: torch.Tensor,
    w_hh: torch.Tensor,
    b_ih: torch.Tensor,
    b_hh: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Eager autograd: matmuls, broadcast biases, gates i, f, g, o."""
    # The biases broadcast over the batch, so autograd sums their gradients back (sum_to_size).
    gates = x.mm(w_ih.t()) + b_ih + h.mm(w_hh.t()) + b_hh
    # Slices rather than chunk(): TorchScript's specialised backward of chunk breaks when one output
    # gets no gradient (_grad_sum_to_size size mismatch), which gradcheck and a loss on c' alone hit.
    n = h.shape[1]
    i, f, g, o = gates[:, :n], gates[:, n : 2 * n], gates[:, 2 * n : 3 * n], gates[:, 3 * n :]
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(c_new)
    return h_new, c_new
