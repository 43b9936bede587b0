"""Serve a traced MLP archive as a Ray Serve deployment (2 replicas of one CPU each, @serve.batch, under
the route prefix /mlp), then ask it.

    pip install -e '.[serve,ray]' && python examples/ray_serve.py
"""

import json
import tempfile
import urllib.request
from pathlib import Path

import numpy as np
import ray
from ray import serve

import scriptc as torch
import scriptc.nn as nn
from scriptc.serving.ray_serve import deployment

model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).eval()
archive = Path(tempfile.mkdtemp()) / "mlp.sc"
torch.jit.trace(model, torch.randn(2, 784)).save(archive)

ray.init(num_cpus=2, include_dashboard=False)
serve.start(http_options={"host": "127.0.0.1", "port": 8000})
serve.run(deployment(str(archive), num_replicas=2, max_batch=32, batch_wait_s=0.002,
                     ray_actor_options={"num_cpus": 1}), route_prefix="/mlp")

x = np.random.default_rng(0).standard_normal((3, 784)).astype(np.float32)
body = {"id": "demo", "inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]}
request = urllib.request.Request("http://127.0.0.1:8000/mlp/v2/models/mlp/infer", data=json.dumps(body).encode(), method="POST")
with urllib.request.urlopen(request) as response:
    answer = json.loads(response.read())
served = np.array(answer["outputs"][0]["data"], dtype=np.float32).reshape(answer["outputs"][0]["shape"])
print("served argmax:", served.argmax(axis=1), " local argmax:", model(torch.from_numpy(x)).argmax(dim=1).tolist())
print("max difference from the eager model:", float(np.abs(served - model(torch.from_numpy(x)).detach().numpy()).max()))
serve.shutdown()
ray.shutdown()
