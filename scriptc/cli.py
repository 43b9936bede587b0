"""The `scriptc` command line: export, inspect, run, bench, serve."""

from __future__ import annotations

import argparse
import os
import sys
import time


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from scriptc import __version__

    parser = argparse.ArgumentParser(prog="scriptc", description="scriptc: compile, inspect, run and serve models")
    parser.add_argument("--version", action="version", version=f"scriptc {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command")
    export = sub.add_parser("export", help="script (or trace) a model factory into a .sc archive")
    export.add_argument("target", help="module.py:factory (a function returning an nn.Module or a function)")
    export.add_argument("-o", "--output", required=True)
    export.add_argument("--trace", metavar="EXAMPLE.npy", help="trace with this example input instead of scripting")
    inspect = sub.add_parser("inspect", help="show an archive's manifest, signature, graph and weights")
    inspect.add_argument("archive")
    inspect.add_argument("--passes", action="store_true", help="also time each optimization pass")
    run = sub.add_parser("run", help="run an archive on .npy inputs")
    run.add_argument("archive")
    run.add_argument("--input", action="append", required=True, metavar="X.npy",
                     help="one per input, in the order of the method's signature")
    run.add_argument("-o", "--output", metavar="Y.npy")
    run.add_argument("--cast", action="store_true",
                     help="convert each input to the dtype the model takes (float64 to float32, say)")
    bench = sub.add_parser("bench", help="latency percentiles and throughput")
    bench.add_argument("archive")
    bench.add_argument("--batch", type=positive_int, default=1)
    bench.add_argument("--threads", type=positive_int, default=None)
    bench.add_argument("--iterations", type=positive_int, default=200)
    from scriptc.serving.cli import add_arguments as add_serve_arguments

    add_serve_arguments(sub.add_parser("serve", help="serve archives over the Open Inference Protocol (KServe v2)"))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    try:
        return {"export": _export, "inspect": _inspect, "run": _run, "bench": _bench, "serve": _serve}[
            args.command](args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`scriptc run ... | head`): stop quietly, as a process SIGPIPE ends
        # would; stdout goes to /dev/null so that flushing it at exit raises nothing more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # the CLI's boundary: one line on stderr, a traceback only with --debug
        if args.debug:
            raise
        print(f"scriptc {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _export(args) -> int:
    import importlib.util

    import numpy as np

    import scriptc

    path, _, factory = args.target.rpartition(":")
    if not path or not factory:
        raise ValueError("target must look like module.py:factory")
    spec = importlib.util.spec_from_file_location("exported_model", path)
    if spec is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    made = getattr(module, factory)()
    if hasattr(made, "eval"):
        made.eval()
    if args.trace:
        compiled = scriptc.jit.trace(made, scriptc.from_numpy(np.load(args.trace)))
    else:
        compiled = scriptc.jit.script(made)
    scriptc.jit.save(compiled, args.output)
    print(f"wrote {args.output}")
    return 0


def _inspect(args) -> int:
    from scriptc.passes import PassContext
    from scriptc.runtime.archive import read_archive
    from scriptc.runtime.interpreter import ModuleValue
    from scriptc.runtime.model import input_specs
    from scriptc.runtime.plan import build_plan, takes_self

    archive = read_archive(args.archive)
    print(f"archive  {args.archive}\nkind     {archive.kind}")
    for name, sig in archive.signatures.items():
        ins = ", ".join(f"{i['name']}: {i['type']}" for i in sig.get("inputs", []))
        print(f"method   {name}({ins}) -> {', '.join(sig.get('outputs', []))}")
    for name, graph in archive.graphs.items():
        flat = dict(archive.weights)
        flat.update(archive.attributes)
        context = PassContext(archive.functions, ModuleValue.from_flat(flat) if archive.kind == "module" else None)
        skip = 1 if takes_self(graph) else 0
        specs = input_specs(archive.signatures.get(name, {}), graph, skip, name)
        records: list = []
        plan = build_plan(graph, context, specs=specs, skip=skip, jit=False, records=records)
        variants = [(name, plan.generic_graph, records)]
        if specs is not None:  # scripted with example inputs: the plan such inputs run
            described = ", ".join(f"{v.name}: {s.dtype} [{', '.join('?' if d is None else str(d) for d in s.shape)}]"
                                  for v, s in zip(graph.inputs[skip:], specs) if s is not None)
            variants.append((f"{name} for ({described})", plan.graph, []))
        for label, optimized, records in variants:
            groups = [n for n in optimized.nodes() if n.op == "prim::FusionGroup"]
            print(f"graph    {label}: {len(graph)} nodes, {len(optimized)} after optimization, "
                  f"{len(groups)} fusion groups")
            for g in groups:
                members = [n.op for n in g.blocks[0] if n.op != "prim::Constant"]
                print(f"  group  {g.attrs.get('kind')}: {' -> '.join(members)}")
            if args.passes:
                for r in records:
                    print(f"  pass   {r.name:<16}{r.seconds * 1e3:8.2f} ms  {r.nodes_before:>6} -> {r.nodes_after} nodes")
    total = sum(w.nbytes for w in archive.weights.values())
    print(f"weights  {len(archive.weights)} tensors, {total / 1e6:.2f} MB")
    for name, w in sorted(archive.weights.items()):
        print(f"  {name:<40}{w.dtype.name:>9}  {list(w.shape)}")
    if archive.metadata:
        print(f"metadata {archive.metadata}")
    return 0


def _run(args) -> int:
    import numpy as np

    from scriptc.errors import SignatureError
    from scriptc.runtime import load

    model = load(args.archive)
    inputs = [np.load(p, allow_pickle=False) for p in args.input]
    if args.cast:
        for i, (parameter, array) in enumerate(zip(model.signature["forward"].parameters, inputs)):
            if parameter.dtype is not None and array.dtype != parameter.dtype:
                if not np.can_cast(array.dtype, parameter.dtype, "same_kind"):
                    raise SystemExit(f"scriptc run: --cast converts {array.dtype.name} to {parameter.dtype.name} only "
                                     f"where no kind changes (input '{parameter.name}' from {args.input[i]})")
                inputs[i] = array.astype(parameter.dtype)
    try:
        out = model(*inputs)
    except SignatureError as exc:
        hint = " (--cast converts the inputs to the dtypes the model takes)" if "dtype" in exc.got and not args.cast \
            else ""
        raise SystemExit(f"scriptc run: {exc}{hint}") from None
    outputs = out if isinstance(out, tuple) else (out,)
    if args.output:
        np.save(args.output, np.asarray(outputs[0]))
        print(f"wrote {args.output}")
    else:
        for o in outputs:
            print(np.asarray(o))
    return 0


def _bench(args) -> int:
    import numpy as np

    from scriptc.runtime import load
    from scriptc.runtime.model import zero_inputs

    model = load(args.archive, threads=args.threads)
    shaped = zero_inputs(model.graphs["forward"], model.needs_self["forward"], args.batch,
                         model.example_sizes["forward"])
    if shaped is None:
        raise SystemExit("scriptc bench: the archive does not say its inputs' shapes and dtypes (a scripted "
                         "module: script it with example_inputs=..., or trace it)")
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(a.shape).astype(a.dtype) for a in shaped]
    model(*inputs)
    times = []
    width = 40
    for i in range(args.iterations):
        start = time.perf_counter()
        model(*inputs)
        times.append(time.perf_counter() - start)
        if sys.stderr.isatty() or i == args.iterations - 1:
            done = (i + 1) * width // args.iterations
            print(f"\r[{'#' * done}{'.' * (width - done)}] {i + 1}/{args.iterations}", end="", file=sys.stderr)
    print(file=sys.stderr)
    p = np.percentile(np.array(times) * 1e3, [50, 90, 99])
    print(f"batch {args.batch}  p50 {p[0]:.3f} ms  p90 {p[1]:.3f} ms  p99 {p[2]:.3f} ms  "
          f"throughput {args.batch / np.mean(times):.1f} samples/s")
    return 0


def _serve(args) -> int:
    from scriptc.serving.cli import main

    return main(args)
