"""pytest plugin (-p fa3_cpu_plugin) that runs FlashAttention-3's CUDA-only test file on the CPU
against the adapter in flash_attn_interface.py, without editing the file:

* torch.cuda.get_device_capability reports (9, 0), so the file keeps its FP8 cases;
* a torch function mode turns device "cuda" into "cpu" in factory calls and Tensor.to/.cuda;
* parameter combinations naming a feature fp8attn does not have are skipped before they run,
  with the reason "fp8attn lacks: ..." (the adapter raises the same NotImplementedError if they
  reach it); a NotImplementedError raised inside a test is reported as a skip with its message;
* tests that only make sense on a GPU build of FlashAttention are skipped as "not applicable: ...".
"""
from __future__ import annotations

import os

import pytest
import torch
from torch.overrides import TorchFunctionMode

LACKS = "fp8attn lacks: "
NOT_APPLICABLE = "not applicable: "


def _is_cuda(x) -> bool:
    if isinstance(x, str):
        return x == "cuda" or x.startswith("cuda:")
    return isinstance(x, torch.device) and x.type == "cuda"


class _CudaToCpu(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if _is_cuda(kwargs.get("device")):
            kwargs["device"] = "cpu"
        if func is torch.Tensor.cuda:
            return args[0]
        if func is torch.Tensor.to:
            args = tuple("cpu" if _is_cuda(a) else a for a in args)
        return func(*args, **kwargs)


_mode = _CudaToCpu()


def pytest_configure(config):
    torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)
    torch.set_num_threads(int(os.environ.get("FP8ATTN_FA3_TORCH_THREADS", "1")))
    _mode.__enter__()  # for the whole session: the test module builds tensors at import time too


def pytest_unconfigure(config):
    _mode.__exit__(None, None, None)


def _lacks(params: dict) -> str | None:
    dtype = params.get("dtype")
    if dtype == torch.float16:
        return "float16 inputs and outputs (it takes float8_e4m3fn and bfloat16)"
    d = params.get("d")
    name = params.get("__name__")
    if d is not None and name != "test_flash_attn_combine" and d not in (64, 128, 256):
        return f"head_dim {d} (kernels for 64, 128 and 256)"
    if params.get("softcap", 0.0) != 0.0:
        return "softcap"
    if params.get("has_qv") and d == 64 and dtype != torch.float8_e4m3fn:
        return "Qv (the extra Qv·Vᵀ logit term)"
    return None


_NOT_APPLICABLE = {
    "test_flash3_bw_compatibility": "checks the schemas of FlashAttention-3's registered torch.ops.flash_attn_3 "
                                    "custom ops, which the adapter does not register",
    "test_flash_attn_race_condition": "a GPU race stress test (a 70 GiB dummy allocation, 1000 forward and "
                                      "backward repeats at batch 60); fp8attn's CPU backend is deterministic "
                                      "by construction and the repeats do not fit a CPU run",
}


def pytest_addoption(parser):
    group = parser.getgroup("fa3 sample", "a deterministic sample of the runnable cases (the CPU is slow)")
    group.addoption("--fa3-max-work", type=int, default=0,
                    help="deselect runnable cases whose seqlen_q * seqlen_k (test_flash_attn_combine: "
                         "num_splits * seqlen * d) is above this; 0: all")
    group.addoption("--fa3-min-work", type=int, default=0,
                    help="deselect runnable cases whose work (as for --fa3-max-work) is not above this")
    group.addoption("--fa3-stride", type=int, default=1,
                    help="keep every Nth remaining runnable case of each test function, in collection order")


def pytest_collection_modifyitems(config, items):
    max_work, stride = config.getoption("--fa3-max-work"), config.getoption("--fa3-stride")
    min_work = config.getoption("--fa3-min-work")
    kept, deselected, seen = [], [], {}
    for item in items:
        name = item.originalname or item.name
        if name in _NOT_APPLICABLE:
            item.add_marker(pytest.mark.skip(reason=NOT_APPLICABLE + _NOT_APPLICABLE[name]))
            kept.append(item)
            continue
        params = dict(getattr(item, "callspec", None).params) if hasattr(item, "callspec") else {}
        params["__name__"] = name
        reason = _lacks(params)
        if reason:
            item.add_marker(pytest.mark.skip(reason=LACKS + reason))
            kept.append(item)
            continue
        if name == "test_flash_attn_combine":  # its float32 inputs hold 2 * 5 * 16 * 4 bytes per unit
            work = params["num_splits"] * params["seqlen"] * params["d"]
        else:
            work = params.get("seqlen_q", 1) * params.get("seqlen_k", 1)
        if (max_work and work > max_work) or work <= min_work:
            deselected.append(item)
            continue
        n = seen[name] = seen.get(name, -1) + 1
        (kept if n % stride == 0 else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(NotImplementedError):
        message = str(call.excinfo.value)
        if message.startswith("fp8attn does not support "):
            message = message[len("fp8attn does not support "):]
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, LACKS + message)
