#!/usr/bin/env python3
"""torch's side of graph_launch_bench: 100 fill_ kernels on a 1024-float tensor launched
eagerly and as one CUDA graph replay, on a side stream; the median host time to queue one
iteration and the wall time per iteration synchronised at the end. Prints one JSON object.

  python3 graph_launch_torch.py [--iterations N] [--kernels K]
"""
import argparse
import json
import statistics
import time

import torch


def measure(iteration, iterations):
    for _ in range(10):
        iteration()
    torch.cuda.synchronize()
    submit = []
    start = time.perf_counter()
    for _ in range(iterations):
        t0 = time.perf_counter()
        iteration()
        submit.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(submit), (time.perf_counter() - start) * 1e6 / iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--kernels", type=int, default=100)
    args = parser.parse_args()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = torch.zeros(1024, device="cuda")

        def eager():
            for k in range(args.kernels):
                x.fill_(k)

        eager()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            eager()
        e = measure(eager, args.iterations)
        g = measure(graph.replay, args.iterations)
    print(json.dumps({"backend": "torch", "device": torch.cuda.get_device_name(), "kernels": args.kernels,
                      "iterations": args.iterations, "eager_submit_us": round(e[0], 2), "eager_total_us": round(e[1], 2),
                      "graph_submit_us": round(g[0], 2), "graph_total_us": round(g[1], 2),
                      "submit_ratio": round(g[0] / e[0], 3), "total_ratio": round(g[1] / e[1], 3)}))


if __name__ == "__main__":
    main()
