"""cudascope_torch.py and libcudascope_torch_allocator.so without PyTorch, on the sim backend:
the library is driven through its C entry points with ctypes, as PyTorch's pluggable
allocator drives it, and the module reads the figures back. Run by ctest (PYTHONPATH holds
the build's lib/, where the module sits beside the library)."""

import ctypes
import json
import os
import tempfile
import unittest

import cudascope_torch

MiB = 1 << 20


def hooks():
    lib = ctypes.CDLL(cudascope_torch.library_path())
    lib.cudascope_torch_alloc.restype = ctypes.c_void_p
    lib.cudascope_torch_alloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    lib.cudascope_torch_free.restype = None
    lib.cudascope_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    lib.cudascope_torch_last_error.restype = ctypes.c_char_p
    return lib


class LibraryPathTest(unittest.TestCase):
    def test_the_library_is_found_beside_the_module(self):
        saved = os.environ.pop("CUDASCOPE_TORCH_ALLOCATOR", None)
        try:
            path = cudascope_torch.library_path()
        finally:
            if saved is not None:
                os.environ["CUDASCOPE_TORCH_ALLOCATOR"] = saved
        self.assertEqual(os.path.dirname(path), os.path.dirname(os.path.abspath(cudascope_torch.__file__)))
        self.assertTrue(os.path.samefile(path, os.environ["CUDASCOPE_TORCH_TEST_LIBRARY"]))

    def test_the_environment_names_another_library_and_a_missing_one_is_an_error(self):
        os.environ["CUDASCOPE_TORCH_ALLOCATOR"] = "/nonexistent/libcudascope_torch_allocator.so"
        try:
            with self.assertRaisesRegex(FileNotFoundError, "CUDASCOPE_TORCH_ALLOCATOR=/nonexistent/"):
                cudascope_torch.library_path()
        finally:
            del os.environ["CUDASCOPE_TORCH_ALLOCATOR"]


class FiguresTest(unittest.TestCase):
    def setUp(self):
        self.lib = hooks()

    def tearDown(self):
        cudascope_torch.empty_cache()
        self.assertEqual(cudascope_torch.memory_allocated(0), 0)

    def test_allocations_through_the_hooks_show_in_the_statistics(self):
        before = cudascope_torch.memory_stats(0)
        self.assertIn("allocated_bytes.all.current", before)
        p = self.lib.cudascope_torch_alloc(5 * MiB, 0, None)
        self.assertTrue(p, self.lib.cudascope_torch_last_error())
        stats = cudascope_torch.memory_stats(0)
        self.assertEqual(stats["allocated_bytes.all.current"], 5 * MiB)
        self.assertEqual(stats["allocation.large_pool.current"], 1)
        self.assertEqual(stats["reserved_bytes.all.current"], 20 * MiB)  # one 20 MiB large segment
        self.lib.cudascope_torch_free(p, 5 * MiB, 0, None)
        self.assertEqual(cudascope_torch.memory_allocated(0), 0)
        self.assertEqual(cudascope_torch.max_memory_allocated(0), 5 * MiB)
        cudascope_torch.reset_peak_memory_stats(0)
        self.assertEqual(cudascope_torch.max_memory_allocated(0), 0)
        self.assertEqual(cudascope_torch.memory_reserved(0), 20 * MiB)
        cudascope_torch.empty_cache()
        self.assertEqual(cudascope_torch.memory_reserved(0), 0)

    def test_the_summary_is_pytorchs_table(self):
        p = self.lib.cudascope_torch_alloc(1000, 0, None)
        text = cudascope_torch.memory_summary(0)
        self.lib.cudascope_torch_free(p, 1000, 0, None)
        self.assertIn("PyTorch CUDA memory summary, device ID 0", text)
        self.assertIn("Allocated memory", text)

    def test_a_snapshot_holds_the_live_block_and_the_history(self):
        cudascope_torch.record_memory_history("all", "all", "python")
        p = self.lib.cudascope_torch_alloc(3000, 0, None)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "snapshot.json")
            cudascope_torch.dump_snapshot(path)
            with open(path) as f:
                snapshot = json.load(f)
        cudascope_torch.record_memory_history(None)
        self.lib.cudascope_torch_free(p, 3000, 0, None)
        blocks = [b for s in snapshot["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
        self.assertIn(p, [b["address"] for b in blocks])
        self.assertIn({"action": "alloc", "addr": p},
                      [{"action": e["action"], "addr": e["addr"]} for e in snapshot["device_traces"][0]])

    def test_an_out_of_memory_gives_null_and_writes_the_oom_snapshot(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "oom.pickle")
            os.environ["CUDASCOPE_OOM_SNAPSHOT"] = path
            try:
                p = self.lib.cudascope_torch_alloc(1 << 50, 0, None)
            finally:
                del os.environ["CUDASCOPE_OOM_SNAPSHOT"]
            self.assertIsNone(p)
            self.assertIn(b"out of memory", self.lib.cudascope_torch_last_error())
            with open(path, "rb") as f:
                self.assertEqual(f.read(2), b"\x80\x04")  # pickle protocol 4

    def test_errors_name_the_call_and_the_cause(self):
        with self.assertRaisesRegex(RuntimeError, r"dump_snapshot: .*/nonexistent-dir/s\.json"):
            cudascope_torch.dump_snapshot("/nonexistent-dir/s.json")
        with self.assertRaisesRegex(RuntimeError, "memory_stats: .*out of range"):
            cudascope_torch.memory_stats(99)
        with self.assertRaisesRegex(RuntimeError, "context='everything'"):
            cudascope_torch.record_memory_history("all", "everything")


if __name__ == "__main__":
    unittest.main()
