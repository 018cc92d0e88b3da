#!/usr/bin/env python3
"""Writes a PyTorch-shaped allocator snapshot of about N bytes of pickle, for benchmarks.

Unlike make_big_snapshot.py (which repeats the real H200 fixture's steady state), every
iteration here differs, as in a training run with dynamic shapes:

- parameters and optimizer state allocated once at the start and kept (the final state);
- per iteration a sequence length drawn at random scales every activation, so sizes and
  therefore addresses change from one iteration to the next;
- forward allocates activations layer by layer with short-lived temporaries, backward frees
  them in reverse with its own temporaries (the allocation order of autograd);
- each allocation's stack is drawn from a pool of thousands of distinct stacks (model files,
  layer functions and lines, torch frames), frames shared between entries as in PyTorch's dumps;
- two streams, small (< 1 MiB, 2 MiB segments) and large pools, segments appearing as the
  high-water mark grows, at distinct addresses with gaps.

Addresses come from one stack-ordered arena per (pool, stream), which the order above keeps
valid: every free releases the newest live block of its arena. The final `segments` list is
the arenas' end state, so the trace and the segments agree.

Usage: make_training_snapshot.py OUT.pickle [--bytes 1073741824] [--seed 1] [--gzip]
"""
import argparse
import gzip
import os
import pickle
import random

MiB = 1 << 20
SMALL_LIMIT = MiB            # PyTorch's small-pool limit
SMALL_SEGMENT = 2 * MiB
LARGE_SEGMENT = 512 * MiB    # large segments are bigger than any one block here
ENTRY_BYTES_ESTIMATE = 82    # pickle bytes per trace entry (stacks are memo references)


def round_up(n, m):
    return (n + m - 1) // m * m


class Arena:
    """Stack-ordered addresses over segments created on demand (one pool, one stream)."""

    def __init__(self, segment_size, stream, pool, next_address, trace, clock):
        self.segment_size, self.stream, self.pool = segment_size, stream, pool
        self.next_address, self.trace, self.clock = next_address, trace, clock
        self.segments = []   # [address, size]
        self.live = []       # [address, size, requested, frames], newest last
        self.segment_index = 0
        self.offset = 0

    def alloc(self, size, requested, frames):
        block = round_up(size, 512)
        while True:
            if self.segment_index == len(self.segments):
                self._new_segment(frames)
            if self.offset + block <= self.segments[self.segment_index][1]:
                break
            self.segment_index += 1
            self.offset = 0
        address = self.segments[self.segment_index][0] + self.offset
        self.offset += block
        self.live.append((address, block, requested, frames, self.segment_index))
        self.trace.append(entry("alloc", address, block, self.stream, self.clock(), frames))
        return address

    def free_newest(self):
        address, block, _, frames, segment = self.live.pop()
        t = self.clock()
        self.trace.append(entry("free_requested", address, block, self.stream, t, frames))
        self.trace.append(entry("free_completed", address, block, self.stream, t, frames))
        self.segment_index = segment
        self.offset = address - self.segments[segment][0]

    def _new_segment(self, frames):
        address = self.next_address()
        self.segments.append([address, self.segment_size])
        self.trace.append(entry("segment_alloc", address, self.segment_size, self.stream,
                                self.clock(), frames))

    def segment_records(self):
        by_segment = [[] for _ in self.segments]
        for address, block, requested, frames, segment in self.live:
            by_segment[segment].append((address, block, requested, frames))
        records = []
        for (address, size), live in zip(self.segments, by_segment):
            blocks, cursor = [], address
            for block_address, block, requested, frames in live:
                blocks.append({"address": block_address, "size": block,
                               "requested_size": requested, "state": "active_allocated",
                               "frames": frames})
                cursor = block_address + block
            if cursor < address + size:
                blocks.append({"address": cursor, "size": address + size - cursor,
                               "requested_size": 0, "state": "inactive", "frames": []})
            allocated = sum(b[1] for b in live)
            records.append({
                "device": 0, "address": address, "total_size": size,
                "allocated_size": allocated, "active_size": allocated,
                "requested_size": sum(b[2] for b in live), "stream": self.stream,
                "segment_type": self.pool, "segment_pool_id": (0, 0),
                "is_expandable": False, "frames": live[0][3] if live else [],
                "blocks": blocks})
        return records


def entry(action, address, size, stream, time_us, frames):
    return {"action": action, "addr": address, "size": size, "stream": stream,
            "time_us": time_us, "compile_context": "N/A", "user_metadata": "",
            "frames": frames}


class StackPool:
    """Thousands of distinct stacks built from shared frame objects."""

    def __init__(self, rng, layers):
        frame = lambda name, filename, line: {"name": name, "filename": filename, "line": line}
        torch_ops = ["linear", "matmul", "softmax", "layer_norm", "gelu", "dropout", "add",
                     "mul", "scaled_dot_product_attention", "embedding", "cat", "view", "to",
                     "empty_like", "zeros", "clone", "transpose", "contiguous", "sum", "mean"]
        self.leaves = [frame(op, f"torch/nn/functional.py" if i % 2 else "torch/_tensor.py",
                             rng.randrange(100, 6000)) for i, op in enumerate(torch_ops)]
        self.call_impl = frame("_call_impl", "torch/nn/modules/module.py", 1784)
        self.wrapped = frame("_wrapped_call_impl", "torch/nn/modules/module.py", 1773)
        self.loop = [frame("train_step", "train.py", rng.randrange(40, 400)),
                     frame("main", "train.py", rng.randrange(400, 600)),
                     frame("<module>", "train.py", 612)]
        self.layer_frames = []
        for layer in range(layers):
            kind = ("attention", "mlp", "norm", "block")[layer % 4]
            filename = f"model/{kind}/layer_{layer}.py"
            self.layer_frames.append([frame(fn, filename, rng.randrange(10, 900))
                                      for fn in ("forward", f"_{kind}", "_project", "_reshape",
                                                 "backward_hook", "_checkpoint")])
        self.cache = {}

    def stack(self, rng, layer, depth_extra):
        key = (layer, rng.randrange(6), rng.randrange(len(self.leaves)), depth_extra)
        stack = self.cache.get(key)
        if stack is None:
            own = self.layer_frames[layer]
            inner = [own[key[1]]] + [own[(key[1] + k) % 6] for k in range(1, depth_extra + 1)]
            nesting = [self.layer_frames[(layer + k) % len(self.layer_frames)][0] for k in range(3)]
            stack = [self.leaves[key[2]]] + inner + [self.call_impl, self.wrapped] + nesting + self.loop
            self.cache[key] = stack
        return stack


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--bytes", type=int, default=1 << 30, help="approximate pickle size")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gzip", action="store_true")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    trace = []
    now = [1_795_000_000_000_000]

    def clock():
        now[0] += rng.randrange(1, 40)
        return now[0]

    segment_cursor = [0x7F00_0000_0000]

    def next_address():
        segment_cursor[0] += rng.randrange(1, 64) * SMALL_SEGMENT  # gaps between segments
        address = segment_cursor[0]
        segment_cursor[0] += LARGE_SEGMENT
        return address

    arenas = {(pool, stream): Arena(SMALL_SEGMENT if pool == "small" else LARGE_SEGMENT,
                                    stream, pool, next_address, trace, clock)
              for pool in ("small", "large") for stream in (0, 1)}

    def arena_for(size, stream):
        return arenas[("small" if size < SMALL_LIMIT else "large", stream)]

    layers = 48
    stacks = StackPool(rng, layers)
    hidden = 1024
    for layer in range(layers):  # parameters, gradients' storage and optimizer state: kept
        for _ in range(4):
            size = rng.choice((hidden, 4 * hidden, hidden * hidden // 4)) * 4
            arena_for(size, 0).alloc(size, size - rng.randrange(0, 64), stacks.stack(rng, layer, 1))

    target_entries = args.bytes // ENTRY_BYTES_ESTIMATE
    iteration = 0
    while len(trace) < target_entries:
        iteration += 1
        stream = 1 if iteration % 7 == 0 else 0  # now and then a side stream's iteration
        tokens = rng.randrange(64, 2048) * rng.choice((1, 2, 4))
        saved = []
        for layer in range(layers):  # forward: activations kept, temporaries freed at once
            for _ in range(rng.randrange(2, 5)):
                size = tokens * rng.choice((hidden, 2 * hidden, 4 * hidden // 3)) * 2 // 8
                size += rng.randrange(0, 512)
                a = arena_for(size, stream)
                a.alloc(size, size, stacks.stack(rng, layer, rng.randrange(3)))
                saved.append(a)
                if rng.random() < 0.4:
                    t = arena_for(size // 3 + 8, stream)
                    t.alloc(size // 3 + 8, size // 3 + 8, stacks.stack(rng, layer, 0))
                    t.free_newest()
        for arena in reversed(saved):  # backward: gradient temporaries, then the activation
            if rng.random() < 0.5:
                size = rng.randrange(512, 3 * MiB)
                t = arena_for(size, stream)
                t.alloc(size, size, stacks.stack(rng, rng.randrange(layers), 2))
                t.free_newest()
            arena.free_newest()

    segments = [r for a in arenas.values() for r in a.segment_records()]
    segments.sort(key=lambda s: s["address"])
    snapshot = {
        "segments": segments,
        "device_traces": [trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                               "garbage_collection_threshold": 0.0,
                               "expandable_segments": False},
        "external_annotations": [],
    }
    opener = gzip.open if args.gzip else open
    with opener(args.out, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
    print(f"{args.out}: {len(trace)} trace entries, {iteration} iterations, "
          f"{len(stacks.cache)} distinct stacks, {len(segments)} segments, "
          f"{os.path.getsize(args.out)} bytes")


if __name__ == "__main__":
    main()
