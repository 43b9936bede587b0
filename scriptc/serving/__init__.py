"""scriptc.serving: loaded archives served over the Open Inference Protocol (KServe v2).

protocol.py decodes requests (checked against each model's signature) and encodes responses;
batcher.py stacks concurrent requests; metrics.py counts them; app.py is the HTTP application and
http.py its connections; cli.py is `scriptc serve`; ray_serve.py the same protocol as a Ray Serve
deployment. It runs on scriptc.runtime and never imports the frontend or the eager layer.
"""
