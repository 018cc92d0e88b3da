"""cudascope_torch.enable() without PyTorch: its refusals, and its wiring checked against a
stand-in for the few torch functions it calls (PyTorch itself runs on the GPU machine, see
bench/torch_allocator). A process of its own: enable() switches the library to raising C++
exceptions, which the ctypes tests of cudascope_torch_test.py must not meet."""

import ctypes
import importlib
import os
import sys
import tempfile
import types
import unittest

import cudascope_torch


class FakeTorch:
    """Just enough of torch for enable()'s wiring: records what enable() asks of it."""

    def __init__(self, initialized=False):
        self.file = os.path.join(tempfile.gettempdir(), "fake_torch", "__init__.py")
        self.calls = []
        fake = self

        class Hooks:
            def __getattr__(self, name):
                if not name.startswith("set_"):
                    raise AttributeError(name)
                return lambda address: fake.calls.append((name, address))

        class Pluggable:
            def __init__(self, path, alloc, free):
                fake.calls.append(("CUDAPluggableAllocator", path, alloc, free))
                self.hooks = Hooks()

            def allocator(self):
                return self.hooks

        self.module = types.SimpleNamespace(
            __file__=self.file,
            cuda=types.SimpleNamespace(
                is_initialized=lambda: initialized,
                memory=types.SimpleNamespace(
                    CUDAPluggableAllocator=Pluggable,
                    change_current_allocator=lambda a: fake.calls.append(("change_current_allocator", a)))))


class EnableTest(unittest.TestCase):
    def setUp(self):
        self.saved_torch = sys.modules.get("torch")
        self.saved_nvtx = os.environ.pop("NVTX_INJECTION64_PATH", None)
        self.saved_backend = os.environ.get("CUDASCOPE_BACKEND")
        importlib.reload(cudascope_torch)

    def tearDown(self):
        if self.saved_torch is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.saved_torch
        os.environ.pop("NVTX_INJECTION64_PATH", None)
        os.environ.pop("CUDASCOPE_BACKEND", None)
        if self.saved_backend is not None:
            os.environ["CUDASCOPE_BACKEND"] = self.saved_backend
        if self.saved_nvtx is not None:
            os.environ["NVTX_INJECTION64_PATH"] = self.saved_nvtx

    def test_without_pytorch_enable_says_it_needs_it(self):
        sys.modules["torch"] = None  # import torch raises ImportError
        with self.assertRaisesRegex(RuntimeError, "needs PyTorch"):
            cudascope_torch.enable()
        self.assertFalse(cudascope_torch.is_enabled())

    def test_on_the_sim_backend_enable_is_refused(self):
        fake = FakeTorch()
        sys.modules["torch"] = fake.module
        with self.assertRaisesRegex(RuntimeError, "CUDASCOPE_BACKEND=sim would hand PyTorch's kernels"):
            cudascope_torch.enable()
        self.assertEqual(fake.calls, [])

    def test_after_cuda_is_initialised_enable_is_refused(self):
        fake = FakeTorch(initialized=True)
        sys.modules["torch"] = fake.module
        os.environ["CUDASCOPE_BACKEND"] = "cuda"
        with self.assertRaisesRegex(RuntimeError, "came too late"):
            cudascope_torch.enable()
        self.assertEqual(fake.calls, [])

    def test_enable_registers_every_hook_with_its_entry_point_once(self):
        fake = FakeTorch()
        sys.modules["torch"] = fake.module
        os.environ["CUDASCOPE_BACKEND"] = "cuda"  # the stand-in never lets the library allocate
        with self.assertWarnsRegex(UserWarning, "OutOfMemoryError not found"):  # no libc10 here
            cudascope_torch.enable()
        cudascope_torch.enable()
        path = cudascope_torch.library_path()
        self.assertEqual(fake.calls[0], ("CUDAPluggableAllocator", path, "cudascope_torch_alloc", "cudascope_torch_free"))
        lib = ctypes.CDLL(path)
        setters = {name: address for name, address in fake.calls[1:-1]}
        self.assertEqual(len(setters), 8)
        for setter, symbol in cudascope_torch._HOOKS:
            self.assertEqual(setters[setter], ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value)
        self.assertEqual(fake.calls[-1][0], "change_current_allocator")
        self.assertEqual(len(fake.calls), 10, "a second enable() changes nothing")
        self.assertEqual(os.environ["NVTX_INJECTION64_PATH"], path)
        self.assertTrue(cudascope_torch.is_enabled())


if __name__ == "__main__":
    unittest.main()
