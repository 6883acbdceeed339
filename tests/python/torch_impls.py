"""torch impls for the kc Python tests: plain functions over CPU tensors and a
torch.library custom op, one honest and one with a deliberate precision bug."""
import torch

_lib = torch.library.Library("kctest", "DEF")
_lib.define("softmax(Tensor x) -> Tensor")
_lib.define("softmax_bf16(Tensor x) -> Tensor")


def _softmax(x):
    return torch.softmax(x, dim=-1)


def _softmax_bf16(x):
    # The bug: inputs rounded to bfloat16 before an otherwise exact softmax.
    return torch.softmax(x.to(torch.bfloat16).to(torch.float64), dim=-1).to(x.dtype)


_lib.impl("softmax", _softmax, "CPU")
_lib.impl("softmax_bf16", _softmax_bf16, "CPU")


def softmax_torch(x):
    return torch.softmax(x, dim=1)


def softmax_torch_bf16(x):
    """The bug: the softmax evaluated in bfloat16 (torch 1.13 has no float16
    exp on the CPU), returned as float32."""
    return torch.softmax(x.to(torch.bfloat16), dim=1).to(torch.float32)
