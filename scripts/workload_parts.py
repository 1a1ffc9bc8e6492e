"""Parts the workloads of `record_workloads.py` and `held_out_workloads.py`
share: the autocast they run under and a seeded draw among choices."""


def autocast(torch, device):
    """bf16 autocast on the GPU; on the CPU (`--check`) none, which keeps
    the check fast and independent of the CPU's bf16 kernels."""
    if device == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def draw(torch, choices, gen):
    """One of `choices`, drawn with the generator `gen`."""
    return choices[int(torch.randint(len(choices), (1,), generator=gen))]
