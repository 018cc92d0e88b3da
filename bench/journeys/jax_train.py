#!/usr/bin/env python3
"""A JAX training loop for the GPU checks of programs not written with PyTorch: a 4-layer MLP
trained with SGD under jax.jit, its data drawn inside the step, so that every step launches
the same kernels (--xla_gpu_autotune_level=0, added to XLA_FLAGS unless it names a level, keeps
the first step's compilation the same from run to run). It ends with status 2 where JAX has no
GPU, rather than train on the CPU. Prints one JSON line: the framework, its version, the device and the
final loss written exactly (float.hex), so that a run under cudascope can be told to compute
the same as a plain one.

  jax_train.py [--steps 20] [--linger 0]"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave the GPU to others
# The same kernels in every run: no autotuning, added to whatever flags the image sets.
if "--xla_gpu_autotune_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_gpu_autotune_level=0").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

WIDTH, BATCH, LAYERS = 1024, 256, 4


def init(key):
    keys = jax.random.split(key, LAYERS)
    return [jax.random.normal(k, (WIDTH, WIDTH), jnp.float32) / jnp.sqrt(WIDTH) for k in keys]


def loss_of(params, x, y):
    h = x
    for w in params[:-1]:
        h = jax.nn.relu(h @ w)
    return jnp.mean((h @ params[-1] - y) ** 2)


@jax.jit
def step(params, key):
    kx, ky = jax.random.split(key)
    x = jax.random.normal(kx, (BATCH, WIDTH), jnp.float32)
    y = jax.random.normal(ky, (BATCH, WIDTH), jnp.float32)
    loss, grads = jax.value_and_grad(loss_of)(params, x, y)
    return [w - 0.01 * g for w, g in zip(params, grads)], loss


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--linger", type=float, default=0, help="seconds to wait after the last step (for scrapers)")
    args = parser.parse_args()
    if jax.default_backend() != "gpu":
        print(f"jax_train: JAX runs on {jax.default_backend()}, not a GPU", file=sys.stderr)
        return 2
    params, key = init(jax.random.key(0)), jax.random.key(1)
    loss = None
    for _ in range(args.steps):
        key, sub = jax.random.split(key)
        params, loss = step(params, sub)
    loss = float(jax.block_until_ready(loss))
    print(json.dumps({"framework": "jax", "version": jax.__version__, "device": str(jax.devices()[0]),
                      "steps": args.steps, "loss": loss.hex()}), flush=True)
    if args.linger:
        time.sleep(args.linger)
    return 0


if __name__ == "__main__":
    sys.exit(main())
