"""Kernels compute inf and nan as torch does, silently: numpy's RuntimeWarnings for log(0), sqrt(-1),
overflow and NaN casts stay inside scriptc.ops, while the user's own numpy code still gets them.
(In a fresh process: pytest restores the warning filters that importing scriptc installs.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_kernels_raise_no_floating_point_warnings_and_user_numpy_still_does():
    program = textwrap.dedent("""
        import numpy as np
        import scriptc as torch
        x = torch.tensor([0.0, 1.0, -1.0])
        results = [torch.log(x), torch.sqrt(x), torch.log(x).long(), torch.exp(torch.tensor([1000.0])), x.pow(-1)]
        assert np.isneginf(results[0][0].item()) and np.isnan(results[1][2].item()) and np.isinf(results[3].item())
        print("computed", flush=True)
        np.log(np.zeros(1))
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout == "computed\n"
    assert done.stderr.count("RuntimeWarning") == 1 and "divide by zero encountered in log" in done.stderr
    assert "scriptc" not in done.stderr
